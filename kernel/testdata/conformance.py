"""The standard Jupyter kernel conformance suite (jupyter_kernel_test) run
against privnotes.

Run by kernel/conformance_test.go (make test), or alone:
    JUPYTER_PATH=<dir with kernels/NAME> PRIVNOTES_STATE=<empty dir> \
        /usr/bin/python3 conformance.py NAME

Every capability the kernel has is given to jupyter_kernel_test's
KernelTests through its class attributes (so none of its tests is skipped),
and the tests below add what its samples cannot express. The last line of
the output is "CONFORMANCE " and a JSON summary (tests passed, failed,
errored, skipped, and the names of KernelTests' own tests) that the Go test
checks test by test.
"""

import json
import os
import queue
import sys
import time
import unittest

try:
    import jupyter_kernel_test
    from jupyter_kernel_test.msgspec_v5 import validate_message
except ImportError as e:  # pragma: no cover
    sys.exit(f"jupyter_kernel_test is missing ({e}); run: make deps (Debian python3-jupyter-kernel-test)")

KERNEL = sys.argv[1] if len(sys.argv) > 1 else "privnotes-test"
T = 30  # timeout of one reply, seconds (a loaded 2-core machine)


class PrivnotesConformance(jupyter_kernel_test.KernelTests):
    kernel_name = KERNEL

    # kernel_info
    language_name = "go"
    file_extension = ".go"

    # execute: stdout (stderr: see test_execute_stderr below)
    code_hello_world = 'fmt.Println("hello, world")'

    # complete_request: a Go package member, and the DSL's functions
    completion_samples = [
        {"text": "fmt.Prin", "matches": {"Print", "Printf", "Println"}},
        {"text": "strings.HasP", "matches": {"HasPrefix"}},
        {"text": "private_"},  # checked further in test_completion_dsl
    ]

    # is_complete_request, with the DSL's budget blocks and magics
    complete_code_samples = [
        "x := 1",
        'fmt.Println("hi")',
        "func f() int { return 1 }",
        "budget eps=1, delta=1e-6 {\n}",
        "%ledger",
        "private_pca?",
    ]
    incomplete_code_samples = [
        "func f() {",
        "for i := 0; i < 3; i++ {\n  if i > 1 {",
        "budget eps=1, delta=1e-6 {",
        "x := []int{1,",
        "s := `raw",
    ]
    invalid_code_samples = ["x := )", "}", "x := 1 2", "budget eps=1 }", "%nosuchmagic"]

    # the pager: a payload, nothing in the output area
    code_page_something = "private_pca?"

    # errors
    code_generate_error = 'panic("conformance")'

    # execute_result (text/plain, and rich types)
    code_execute_result = [
        {"code": "6 * 7", "result": "42"},
        {"code": '"hello" + ", world"', "result": '"hello, world"'},
        {"code": "mat.NewDense(2, 2, []float64{1, 2, 3, 4})", "mime": "text/html"},
    ]

    # display_data of every display function
    code_display_data = [
        {"code": 'html("<b>bold</b>")', "mime": "text/html"},
        {"code": 'markdown("**bold**")', "mime": "text/markdown"},
        {"code": 'svg(`<svg xmlns="http://www.w3.org/2000/svg" width="4" height="4"></svg>`)', "mime": "image/svg+xml"},
        {"code": "png(image.NewGray(image.Rect(0, 0, 2, 2)))", "mime": "image/png"},
        {"code": 'show_json(map[string]int{"a": 1})', "mime": "application/json"},
        {"code": "show(mat.NewDense(1, 2, []float64{1, 2}))", "mime": "text/html"},
        {"code": 'new_display("progress")', "mime": "text/plain"},
    ]

    # history_request: all three access types; the pattern matches one
    # distinct code of code_execute_result
    supported_history_operations = ("tail", "range", "search")
    code_history_pattern = "6 ? 7"

    # inspect_request
    code_inspect_sample = "private_pca"

    # clear_output
    code_clear_output = 'fmt.Println("gone")\nclear_output(false)'

    # --- beyond KernelTests' samples ---------------------------------------

    def execute_ok(self, code):
        self.flush_channels()
        reply, outputs = self.execute_helper(code, timeout=T)
        self.assertEqual(reply["content"]["status"], "ok", f"{code!r}: {reply['content']}")
        return reply, outputs

    def test_execute_stderr(self):
        """Replaces KernelTests' version, which needs one cell that writes to
        stderr. Go cells cannot: yaegi's print and println go to stdout,
        and os is not importable. The kernel's stderr stream carries the
        engine's reports, such as a panic in a goroutine a cell started:
        shown on the cell running when it happens, or on the next cell.
        The goroutine runs when the scheduler gets to it, so the test runs
        cells until the report appears (it must, within the bound)."""
        _, outputs = self.execute_ok('go func() { panic("to stderr") }()')
        deadline = time.monotonic() + T
        seen = []
        while True:
            seen += outputs
            for m in outputs:
                if m["msg_type"] == "stream" and m["content"]["name"] == "stderr":
                    self.assertIn("panic in a goroutine", m["content"]["text"])
                    self.assertIn("to stderr", m["content"]["text"])
                    return
            if time.monotonic() > deadline:
                self.fail(f"no stderr stream within {T} s; outputs: {[m['msg_type'] for m in seen]}")
            _, outputs = self.execute_ok("1")

    def test_completion_dsl(self):
        """private_ completes to the DSL's private functions, and only them."""
        msg_id = self.kc.complete("private_")
        reply = self.get_non_kernel_info_reply(timeout=T)
        validate_message(reply, "complete_reply", msg_id)
        matches = set(reply["content"]["matches"])
        self.assertTrue({"private_pca", "private_count", "private_mean", "private_sum"} <= matches, matches)
        self.assertTrue(all(m.startswith("private_") for m in matches), matches)
        self.assertEqual(reply["content"]["cursor_start"], 0)
        self.assertEqual(reply["content"]["cursor_end"], len("private_"))

    def test_pager_forms(self):
        """Every way of asking for help pages the same text and writes
        nothing to the output area; a cell with two help lines gets one page."""
        texts = set()
        for code in ("private_pca?", "?private_pca", "private_pca??", "%help private_pca"):
            reply, outputs = self.execute_ok(code)
            self.assertEqual(outputs, [], f"{code!r} wrote to the output area")
            payload = reply["content"]["payload"]
            self.assertEqual([p["source"] for p in payload], ["page"], code)
            self.assertEqual(payload[0]["start"], 0)
            texts.add(payload[0]["data"]["text/plain"])
        self.assertEqual(len(texts), 1, "the forms page different texts")
        self.assertTrue(texts.pop().startswith("private_pca(ds, k=1"))
        reply, _ = self.execute_ok("%help private_count\n%help budget")
        payload = reply["content"]["payload"]
        self.assertEqual(len(payload), 1)
        text = payload[0]["data"]["text/plain"]
        self.assertLess(text.index("private_count("), text.index("budget eps=E"))
        reply, _ = self.execute_ok("6 * 7")
        self.assertEqual(reply["content"]["payload"], [])

    def test_banner_names_state_directory(self):
        """kernel_info's banner says which state directory (registry and
        ledger) the kernel uses; %datasets points there without the path,
        which a cell may not learn (threat model, escape 1)."""
        state = os.path.abspath(os.environ["PRIVNOTES_STATE"])
        self.flush_channels()
        msg_id = self.kc.kernel_info()
        reply = self.kc.get_shell_msg(timeout=T)
        validate_message(reply, "kernel_info_reply", msg_id)
        self.assertIn(f"\nState directory: {state} (", reply["content"]["banner"])
        _, outputs = self.execute_ok("%datasets")
        text = "".join(m["content"].get("text", "") for m in outputs if m["msg_type"] == "stream")
        self.assertIn("no datasets are registered in this state directory (its path is in the kernel's", text)
        self.assertNotIn(state, text)

    def test_update_display_data(self):
        """A named display updates in place: display_data then
        update_display_data with the same transient display_id."""
        _, outputs = self.execute_ok('d := new_display("step 1")\nupdate_display(d, "step 2")')
        self.assertEqual([m["msg_type"] for m in outputs], ["display_data", "update_display_data"])
        did = outputs[0]["content"]["transient"]["display_id"]
        self.assertTrue(did)
        self.assertEqual(outputs[1]["content"]["transient"]["display_id"], did)

    def test_error_traceback(self):
        """An error's ename and evalue are plain; its traceback lines are
        strings, coloured as ipykernel's: the error name red and bold."""
        self.flush_channels()
        reply, outputs = self.execute_helper("var xs []int\n_ = xs[3]", timeout=T)
        c = reply["content"]
        self.assertEqual(c["status"], "error")
        self.assertEqual(c["ename"], "RuntimeError")
        self.assertNotIn("\x1b", c["ename"] + c["evalue"])
        self.assertEqual([m["msg_type"] for m in outputs], ["error"])
        tb = outputs[0]["content"]["traceback"]
        self.assertTrue(tb and all(isinstance(line, str) for line in tb))
        self.assertTrue(tb[0].startswith("\x1b[1;31mRuntimeError\x1b[0m: panic: "), tb[0])

    def test_inspect_go_and_missing(self):
        """Inspect knows Go names too, and says found=false for nothing."""
        for code, found in (("fmt.Println", True), ("strings.Fields", True), ("zzNoSuchName", False)):
            msg_id = self.kc.inspect(code)
            reply = self.get_non_kernel_info_reply(timeout=T)
            validate_message(reply, "inspect_reply", msg_id)
            self.assertEqual(reply["content"]["found"], found, code)

    def test_interrupt(self):
        """interrupt_request (interrupt_mode message) stops a running loop;
        the session's variables survive."""
        self.execute_ok("kept := 7")
        self.flush_channels()
        msg_id = self.kc.execute("for {}")
        deadline = time.monotonic() + T
        while True:  # wait until the kernel runs the cell
            left = deadline - time.monotonic()
            self.assertGreater(left, 0, "the cell never started")
            try:
                m = self.kc.get_iopub_msg(timeout=left)
            except queue.Empty:
                continue
            if m["parent_header"].get("msg_id") == msg_id and m["msg_type"] == "execute_input":
                break
        self.km.interrupt_kernel()
        reply = self.get_non_kernel_info_reply(timeout=T)
        validate_message(reply, "execute_reply", msg_id)
        self.assertEqual(reply["content"]["status"], "error")
        self.assertEqual(reply["content"]["ename"], "Interrupted")
        _, outputs = self.execute_ok("kept")
        self.assertEqual([m["content"]["data"]["text/plain"] for m in outputs if m["msg_type"] == "execute_result"], ["7"])


class SummaryResult(unittest.TextTestResult):
    """Records the tests that passed, for the summary line."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.passed = []

    def addSuccess(self, test):
        super().addSuccess(test)
        self.passed.append(test.id())


def main():
    suite = unittest.defaultTestLoader.loadTestsFromTestCase(PrivnotesConformance)
    runner = unittest.TextTestRunner(resultclass=SummaryResult, verbosity=2, stream=sys.stdout)
    result = runner.run(suite)
    prefix = PrivnotesConformance.__module__ + "." + PrivnotesConformance.__qualname__ + "."
    summary = {
        "run": result.testsRun,
        "passed": [t[len(prefix):] for t in result.passed],
        "failures": [t.id() for t, _ in result.failures],
        "errors": [t.id() for t, _ in result.errors],
        "skipped": [t.id() for t, _ in result.skipped],
        "expected_failures": [t.id() for t, _ in result.expectedFailures],
        "unexpected_successes": [t.id() for t in result.unexpectedSuccesses],
        "base_tests": sorted(n for n in dir(jupyter_kernel_test.KernelTests) if n.startswith("test_")),
        "jupyter_kernel_test": jupyter_kernel_test.__version__,
    }
    sys.stdout.flush()
    print("CONFORMANCE " + json.dumps(summary, sort_keys=True))
    return 0 if result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
