"""Benchmark the privnotes kernel against Debian's ipykernel, in one run.

    /usr/bin/python3 kernel/testdata/kernelbench.py bin/privnotes [--starts N] [--executes N]

Measures, for each kernel:
  start:   process start (Popen) to the kernel_info_reply, median of N starts;
           the request is queued on a DEALER that connects before the kernel
           binds, with a 5 ms reconnect interval, so polling adds little.
  execute: round trip of the trivial cell "1+1" (execute_request sent to
           execute_reply and idle both received), median over N requests
           after 20 warm-up cells, through jupyter_client.
Prints a Markdown table with the ratios privnotes / ipykernel.
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

import zmq
from jupyter_client import BlockingKernelClient
from jupyter_client.connect import write_connection_file
from jupyter_client.session import Session


def kernel_argv(kind, binary, cf):
    if kind == "privnotes":
        return [binary, "kernel", cf]
    return [sys.executable, "-m", "ipykernel_launcher", "-f", cf]


def start_once(kind, binary, tmp):
    cf, info = write_connection_file(os.path.join(tmp, f"{kind}-{time.monotonic_ns()}.json"), ip="127.0.0.1")
    session = Session(key=info["key"].encode() if isinstance(info["key"], str) else info["key"])
    ctx = zmq.Context.instance()
    shell = ctx.socket(zmq.DEALER)
    shell.setsockopt(zmq.RECONNECT_IVL, 5)
    shell.setsockopt(zmq.LINGER, 0)
    control = ctx.socket(zmq.DEALER)
    control.setsockopt(zmq.RECONNECT_IVL, 5)
    control.setsockopt(zmq.LINGER, 0)
    t0 = time.perf_counter()
    proc = subprocess.Popen(kernel_argv(kind, binary, cf), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        shell.connect(f"tcp://127.0.0.1:{info['shell_port']}")
        control.connect(f"tcp://127.0.0.1:{info['control_port']}")
        msg = session.send(shell, "kernel_info_request", {})
        if not shell.poll(30000):
            raise RuntimeError(f"{kind}: no kernel_info_reply within 30 s")
        _, reply = session.feed_identities(shell.recv_multipart())
        reply = session.deserialize(reply)
        elapsed = time.perf_counter() - t0
        assert reply["parent_header"]["msg_id"] == msg["header"]["msg_id"]
        session.send(control, "shutdown_request", {"restart": False})
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
        return elapsed
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        shell.close()
        control.close()
        os.unlink(cf)


def execute_round_trips(kind, binary, tmp, n):
    cf, info = write_connection_file(os.path.join(tmp, f"{kind}-exec.json"), ip="127.0.0.1")
    log = open(os.path.join(tmp, f"{kind}-exec.log"), "w+")
    proc = subprocess.Popen(kernel_argv(kind, binary, cf), stdout=log, stderr=log)
    kc = BlockingKernelClient(connection_file=cf)
    kc.load_connection_file()
    kc.start_channels()
    try:
        # jupyter_client's wait_for_ready also wants a heartbeat within its
        # first second, which a client without a manager may not have yet.
        deadline = time.monotonic() + 60
        ready = False
        while not ready:
            kc.kernel_info()
            try:
                # A reply to any of the requests sent so far will do.
                ready = kc.get_shell_msg(timeout=1)["msg_type"] == "kernel_info_reply"
            except Exception:
                pass
            if not ready and time.monotonic() > deadline or proc.poll() is not None:
                log.seek(0)
                raise RuntimeError(f"{kind}: no kernel_info_reply; its log:\n{log.read()[-3000:]}")
        time.sleep(0.5)
        while True:
            try:
                kc.get_shell_msg(timeout=0.05)
            except Exception:
                break
        while True:
            try:
                kc.get_iopub_msg(timeout=0.2)
            except Exception:
                break

        def one():
            t = time.perf_counter()
            mid = kc.execute("1+1")
            got_reply = got_idle = False
            while not (got_reply and got_idle):
                if not got_reply:
                    r = kc.get_shell_msg(timeout=10)
                    got_reply = r["parent_header"].get("msg_id") == mid
                    continue
                m = kc.get_iopub_msg(timeout=10)
                got_idle = (m["parent_header"].get("msg_id") == mid and m["msg_type"] == "status"
                            and m["content"]["execution_state"] == "idle")
            return time.perf_counter() - t

        for _ in range(20):
            one()
        return [one() for _ in range(n)]
    finally:
        kc.shutdown()
        kc.stop_channels()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
        os.unlink(cf)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("binary", help="path of the privnotes binary")
    ap.add_argument("--starts", type=int, default=10)
    ap.add_argument("--executes", type=int, default=200)
    a = ap.parse_args()
    binary = os.path.abspath(a.binary)
    if not os.access(binary, os.X_OK):
        sys.exit(f"{binary} is not an executable; build it first (make build)")
    res = {}
    with tempfile.TemporaryDirectory() as tmp:
        for kind in ("privnotes", "ipykernel"):
            starts = [start_once(kind, binary, tmp) for _ in range(a.starts)]
            rts = execute_round_trips(kind, binary, tmp, a.executes)
            res[kind] = (statistics.median(starts), statistics.median(rts),
                         statistics.quantiles(rts, n=10)[-1])
    p, i = res["privnotes"], res["ipykernel"]
    print(f"kernelbench: {a.starts} starts, {a.executes} executes of \"1+1\", {os.cpu_count()} CPUs\n")
    print("| measure | privnotes | ipykernel | ratio | target |")
    print("| --- | --- | --- | --- | --- |")
    print(f"| start to kernel_info_reply (median) | {p[0]*1e3:.1f} ms | {i[0]*1e3:.1f} ms | {p[0]/i[0]:.2f} | ≤ 0.30 |")
    print(f"| execute round trip (median) | {p[1]*1e3:.2f} ms | {i[1]*1e3:.2f} ms | {p[1]/i[1]:.2f} | ≤ 1.00 |")
    print(f"| execute round trip (p90) | {p[2]*1e3:.2f} ms | {i[2]*1e3:.2f} ms | {p[2]/i[2]:.2f} | |")


if __name__ == "__main__":
    main()
