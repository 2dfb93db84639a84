package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/kernel"
	"github.com/privnotes/privnotes/kernel/worker"
)

// version is the implementation_version reported to Jupyter; release
// builds set it with -ldflags "-X main.version=...".
var version = "dev"

func init() {
	register(&command{
		name:    "kernel",
		summary: "run the Jupyter kernel (started by Jupyter from kernel.json)",
		run:     runKernel,
	})
}

func runKernel(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("kernel", "kernel [--state DIR] CONNECTION_FILE",
		`Jupyter starts this command from the kernel spec that "privnotes install" writes.`, stderr)
	connFile := fs.String("connection-file", "", "Jupyter connection file (or give it as the argument)")
	state := fs.String("state", os.Getenv("PRIVNOTES_STATE"), "state `DIR` (datasets, ledger, history); default $PRIVNOTES_STATE, else ~/.local/share/privnotes")
	var sf serverFlags
	sf.register(fs)
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if _, err := sf.apply(); err != nil { // the worker inherits the environment
		fmt.Fprintf(stderr, "privnotes kernel: %v\n", err)
		return 2
	}
	switch {
	case *connFile == "" && fs.NArg() == 1:
		*connFile = fs.Arg(0)
	case *connFile != "" && fs.NArg() == 0:
	default:
		fs.Usage()
		return 2
	}
	logger := log.New(stderr, "privnotes kernel: ", log.LstdFlags|log.Lmicroseconds)
	conn, err := kernel.LoadConnectionFile(*connFile)
	if err != nil {
		fmt.Fprintf(stderr, "privnotes kernel: %v\n", err)
		return 1
	}
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintf(stderr, "privnotes kernel: cannot find its own binary to start the worker: %v\n", err)
		return 1
	}
	// The kernel resolves the state directory (the same rules as the
	// worker and the CLI) so that its banner can say which one is used.
	dir, err := ledger.StateDir(*state)
	if err != nil {
		fmt.Fprintf(stderr, "privnotes kernel: %v\n", err)
		return 1
	}
	wargs := []string{"worker", "--state", dir}
	history, err := kernel.OpenHistory(filepath.Join(dir, "kernel-history.jsonl"))
	if err != nil {
		fmt.Fprintf(stderr, "privnotes kernel: %v\n", err)
		return 1
	}
	sup, err := worker.NewSupervisor(worker.Config{Path: exe, Args: wargs, Log: logger})
	if err != nil {
		fmt.Fprintf(stderr, "privnotes kernel: %v\n", err)
		return 1
	}
	defer sup.Close()
	k, err := kernel.New(kernel.Config{Conn: conn, Engine: sup, History: history, Version: version, StateDir: dir, Log: logger})
	if err != nil {
		fmt.Fprintf(stderr, "privnotes kernel: %v\n", err)
		return 1
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// SIGINT interrupts the running cell (interrupt_mode "signal" clients
	// and Ctrl-C in a terminal); SIGTERM and SIGHUP shut the kernel down.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	go func() {
		for s := range sigs {
			if s == os.Interrupt {
				logger.Printf("SIGINT: interrupting the running cell")
				k.Interrupt()
				continue
			}
			logger.Printf("%v: shutting down", s)
			cancel()
		}
	}()
	if _, err := k.Run(ctx); err != nil {
		fmt.Fprintf(stderr, "privnotes kernel: %v\n", err)
		return 1
	}
	return 0
}
