"""Execute a notebook headless through a Jupyter kernel and summarise it.

    /usr/bin/python3 run_notebook.py [--kernel NAME] [--timeout S] [--html OUT.html]
        [--kernel-log LOG] IN.ipynb OUT.ipynb SUMMARY.json

Runs every code cell with nbclient (cells tagged raises-exception may fail;
any other error stops the run, as in `jupyter nbconvert --execute`), writes
the executed notebook to OUT.ipynb (also when a cell failed, so the failure
can be read there), optionally an HTML rendering, and a JSON summary that
notebooks_test.go and scripts/demo.sh read:

    {"notebook": ..., "seconds": ..., "error": null | "...",
     "cells": [{"index": i, "tags": [...], "test": {...}, "seconds": s,
                "errors": [{"ename": ..., "evalue": ...}], "text": "...",
                "mimes": [...]}]}

"text" joins the cell's stream output and the text/plain of its results and
displays; "test" is the cell's privnotes_test metadata (see notebooks/doc.go),
so the Go test can hold the outputs to the ranges the notebook documents.
Needs Debian's python3-nbclient and python3-nbformat (jupyter-nbconvert for
--html); exit status 0 when the notebook ran, 1 when a cell failed, 2 on a
usage or setup problem.
"""

import argparse
import json
import os
import sys
import time

try:
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError
except ImportError as e:  # pragma: no cover - the message is the point
    sys.stderr.write(f"{sys.executable} lacks {e.name}: run `make deps` "
                     "(apt-get install python3-nbclient python3-nbformat jupyter-nbconvert)\n")
    sys.exit(2)


def cell_text(cell):
    parts = []
    for out in cell.get("outputs", []):
        if out.output_type == "stream":
            parts.append(out.text)
        elif out.output_type in ("execute_result", "display_data"):
            parts.append(out.get("data", {}).get("text/plain", ""))
            if not parts[-1].endswith("\n"):
                parts[-1] += "\n"
    return "".join(parts)


def summarise(nb):
    cells = []
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        md = cell.get("metadata", {})
        ex = md.get("execution", {})
        seconds = None
        if "iopub.execute_input" in ex and "shell.execute_reply" in ex:
            from datetime import datetime
            parse = lambda s: datetime.fromisoformat(s.replace("Z", "+00:00"))
            seconds = (parse(ex["shell.execute_reply"]) - parse(ex["iopub.execute_input"])).total_seconds()
        cells.append({
            "index": i,
            "tags": list(md.get("tags", [])),
            "test": md.get("privnotes_test", {}),
            "seconds": seconds,
            "executed": cell.get("execution_count") is not None,
            "errors": [{"ename": o.get("ename", ""), "evalue": o.get("evalue", "")}
                       for o in cell.get("outputs", []) if o.output_type == "error"],
            "text": cell_text(cell),
            "mimes": sorted({m for o in cell.get("outputs", []) for m in o.get("data", {})}),
        })
    return cells


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kernel", default=None, help="kernel name (default: the notebook's kernelspec)")
    ap.add_argument("--timeout", type=int, default=180, help="seconds per cell")
    ap.add_argument("--html", default=None, help="also write an HTML rendering here")
    ap.add_argument("--kernel-log", default=None, help="write the kernel's stderr (its log) here instead of ours")
    ap.add_argument("input")
    ap.add_argument("output")
    ap.add_argument("summary")
    a = ap.parse_args()

    nb = nbformat.read(a.input, as_version=4)
    kw = {"timeout": a.timeout, "record_timing": True,
          "resources": {"metadata": {"path": os.path.dirname(os.path.abspath(a.input))}}}
    if a.kernel:
        kw["kernel_name"] = a.kernel
    client = NotebookClient(nb, **kw)
    start = time.monotonic()
    error = None
    log = open(a.kernel_log, "w") if a.kernel_log else None
    try:
        # Extra keywords reach the kernel's Popen: its log goes to the file.
        client.execute(**({"stderr": log} if log else {}))
    except CellTimeoutError as e:
        error = f"a cell exceeded the {a.timeout} s timeout: {e}"
    except DeadKernelError as e:
        error = f"the kernel died: {e}"
    except CellExecutionError as e:
        error = f"a cell failed: {e}"
    except Exception as e:  # kernel not found, start failure, ...
        error = f"{type(e).__name__}: {e}"
    seconds = time.monotonic() - start
    if log:
        log.close()

    os.makedirs(os.path.dirname(os.path.abspath(a.output)), exist_ok=True)
    nbformat.write(nb, a.output)
    if a.html:
        try:
            from nbconvert import HTMLExporter
            body, _ = HTMLExporter().from_notebook_node(nb)
            with open(a.html, "w", encoding="utf-8") as f:
                f.write(body)
        except ImportError:
            sys.stderr.write("no HTML: install jupyter-nbconvert (Debian) for nbconvert\n")
    summary = {"notebook": a.input, "seconds": seconds, "error": error, "cells": summarise(nb)}
    with open(a.summary, "w", encoding="utf-8") as f:
        json.dump(summary, f, indent=1)
    if error:
        sys.stderr.write(error[-4000:] + "\n")
        sys.exit(1)


if __name__ == "__main__":
    main()
