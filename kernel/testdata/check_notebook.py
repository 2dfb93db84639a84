"""Execute smoke.ipynb through the privnotes kernel with nbconvert and check it.

    /usr/bin/python3 check_notebook.py KERNEL_NAME OUTPUT_DIR
"""

import os
import subprocess
import sys

import nbformat

here = os.path.dirname(os.path.abspath(__file__))
kernel, outdir = sys.argv[1], sys.argv[2]
cmd = [sys.executable, "-m", "nbconvert", "--to", "notebook", "--execute",
       f"--ExecutePreprocessor.kernel_name={kernel}", "--ExecutePreprocessor.timeout=60",
       "--output-dir", outdir, "--output", "smoke-executed.ipynb", os.path.join(here, "smoke.ipynb")]
try:
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=180)
except subprocess.TimeoutExpired:
    sys.exit("nbconvert --execute did not finish within 180 s")
if r.returncode != 0:
    sys.exit(f"nbconvert --execute failed ({r.returncode}):\n{r.stderr[-4000:]}")

nb = nbformat.read(os.path.join(outdir, "smoke-executed.ipynb"), as_version=4)
code = [c for c in nb.cells if c.cell_type == "code"]
failures = []


def expect(i, cond, what):
    if not cond:
        failures.append(f"cell {i}: {what}; outputs: {code[i].outputs!r}")


for i, c in enumerate(code):
    expect(i, c.execution_count == i + 1, f"execution_count {c.execution_count}, want {i + 1}")
    expect(i, not any(o.output_type == "error" for o in c.outputs), "an error output")
expect(0, code[0].outputs == [], "a declaration cell printed something")
expect(1, [o.get("text") for o in code[1].outputs] == ["HELLO!\n"], "stdout is not HELLO!")
expect(2, [o.output_type for o in code[2].outputs] == ["execute_result"]
       and code[2].outputs[0].data["text/plain"] == "55", "the value is not 55")
expect(3, code[3].outputs and code[3].outputs[0].data.get("text/html") == "<b>bold</b>", "no HTML display")
expect(4, code[4].outputs and "<table" in code[4].outputs[0].data.get("text/html", ""), "a matrix is not an HTML table")
# nbclient applies update_display_data to the display it names.
expect(5, len(code[5].outputs) == 1 and "100%" in code[5].outputs[0].data["text/plain"],
       "the progress display was not updated in place")
if failures:
    sys.exit("notebook check failed:\n" + "\n".join(failures))
print(f"notebook OK: {len(code)} code cells")
