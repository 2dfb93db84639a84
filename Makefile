# privnotes build, test and demo targets. `make test` is what CI runs.
GO      ?= go
BIN     := bin/privnotes
# Debian packages the integration tests and the demo drive the kernel with.
DEB_PKGS := python3-jupyter-client python3-nbclient python3-nbformat python3-ipykernel \
            jupyter-nbconvert python3-jsonschema python3-jupyter-kernel-test
PY      := /usr/bin/python3

.PHONY: all build test unit vet fmt-check deps bench bench-quick install demo clean

all: build

build:
	$(GO) build -o $(BIN) ./cmd/privnotes

# deps installs the Debian packages of the integration tests when they are
# missing (apt-get needs root; otherwise it says what to install).
deps:
	@if $(PY) -c 'import jupyter_client, nbclient, nbformat, ipykernel, nbconvert, jsonschema, jupyter_kernel_test' 2>/dev/null; then :; \
	elif [ "$$(id -u)" = 0 ]; then \
		echo "installing $(DEB_PKGS)"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(DEB_PKGS) >/dev/null; \
	else \
		echo "missing Debian packages; run: sudo apt-get install $(DEB_PKGS)"; exit 1; \
	fi

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go') | grep -v '^stdlib/.*_symbols' || true); \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

unit:
	$(GO) test -count=1 ./...

# test is everything CI runs: formatting, vet, unit, property, audit and
# integration tests (the latter drive the real kernel with jupyter_client).
test: deps fmt-check vet build
	$(GO) test -count=1 -timeout 30m ./...

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./mechanisms/...
	$(GO) run ./cmd/privnotes bench

bench-quick:
	$(GO) run ./cmd/privnotes bench --quick

clean:
	rm -rf bin build
