"""Integration tests of the privnotes kernel, driven by Debian's jupyter_client.

Run by kernel/integration_test.go:
    JUPYTER_PATH=<dir with kernels/NAME> /usr/bin/python3 kernel_tests.py NAME
Every wait has a timeout: a kernel that fails to reply fails a test, it
never hangs the suite. Every message is validated against msgschema.
"""

import datetime
import os
import queue
import signal
import sys
import time
import unittest

import msgschema

try:
    from jupyter_client.manager import KernelManager, start_new_kernel
    from jupyter_client.session import Session
except ImportError as e:  # pragma: no cover
    sys.exit(f"jupyter_client is missing ({e}); run: make deps")

KERNEL = os.environ.get("PRIVNOTES_KERNEL_NAME", "privnotes-test")
T = 15  # default timeout of one wait, seconds


def worker_pid(kernel_pid):
    """The worker is the kernel's only child process."""
    kids = []
    for tid in os.listdir(f"/proc/{kernel_pid}/task"):
        with open(f"/proc/{kernel_pid}/task/{tid}/children") as f:
            kids += [int(p) for p in f.read().split()]
    assert len(kids) == 1, f"kernel {kernel_pid} has children {kids}, want exactly one worker"
    return kids[0]


def header_date(msg):
    """The date in a message's header as an aware datetime (jupyter_client
    parses it already; a string is parsed here)."""
    d = msg["header"]["date"]
    if isinstance(d, str):
        d = datetime.datetime.fromisoformat(d.replace("Z", "+00:00"))
    if d.tzinfo is None:
        d = d.replace(tzinfo=datetime.timezone.utc)
    return d


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    # utime and stime are fields 14 and 15 of stat; fields[0] is field 3.
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class KernelTestCase(unittest.TestCase):
    """A kernel shared by the tests of a class."""

    @classmethod
    def setUpClass(cls):
        cls.km, cls.kc = start_new_kernel(kernel_name=KERNEL, startup_timeout=60)

    @classmethod
    def tearDownClass(cls):
        cls.kc.stop_channels()
        cls.km.shutdown_kernel(now=True)

    def setUp(self):
        self.held = []  # IOPub messages read by wait_started, not yet consumed
        self.flush()

    def flush(self):
        for get in (self.kc.get_iopub_msg, self.kc.get_shell_msg, self.kc.get_control_msg):
            while True:
                try:
                    get(timeout=0.05)
                except queue.Empty:
                    break

    def shell_reply(self, msg_id, timeout=T):
        return self._reply(self.kc.get_shell_msg, msg_id, timeout)

    def control_reply(self, msg_id, timeout=T):
        return self._reply(self.kc.get_control_msg, msg_id, timeout)

    def _reply(self, get, msg_id, timeout):
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                self.fail(f"no reply to {msg_id} within {timeout} s")
            try:
                m = get(timeout=left)
            except queue.Empty:
                continue
            if m["parent_header"].get("msg_id") == msg_id:
                msgschema.validate(m)
                return m

    def iopub_until_idle(self, msg_id, timeout=T):
        """IOPub messages of a request, from busy to idle, validated."""
        deadline = time.monotonic() + timeout
        msgs = []
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                self.fail(f"no idle for {msg_id} within {timeout} s; got {[m['msg_type'] for m in msgs]}")
            try:
                m = self.held.pop(0) if self.held else self.kc.get_iopub_msg(timeout=left)
            except queue.Empty:
                continue
            if m["parent_header"].get("msg_id") != msg_id:
                continue
            msgschema.validate(m)
            msgs.append(m)
            if m["msg_type"] == "status" and m["content"]["execution_state"] == "idle":
                break
        self.assertEqual(msgs[0]["msg_type"], "status")
        self.assertEqual(msgs[0]["content"]["execution_state"], "busy", "first IOPub message is not busy")
        return msgs

    def wait_started(self, msg_id, timeout=T):
        """Waits for the execute_input of msg_id (the kernel has taken the
        cell and can interrupt it); the messages read stay available to
        iopub_until_idle. Used instead of sleeping before an interrupt,
        which on a loaded machine may come before the cell is taken."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                self.fail(f"no execute_input for {msg_id} within {timeout} s")
            try:
                m = self.kc.get_iopub_msg(timeout=left)
            except queue.Empty:
                continue
            self.held.append(m)
            if m["parent_header"].get("msg_id") == msg_id and m["msg_type"] == "execute_input":
                return

    def execute(self, code, timeout=T, **kw):
        msg_id = self.kc.execute(code, **kw)
        reply = self.shell_reply(msg_id, timeout)
        msgs = self.iopub_until_idle(msg_id, timeout)
        return reply, msgs

    def ok(self, code, **kw):
        reply, msgs = self.execute(code, **kw)
        self.assertEqual(reply["content"]["status"], "ok", f"{code!r}: {reply['content']}")
        return reply, msgs

    def value(self, code):
        _, msgs = self.ok(code)
        results = [m for m in msgs if m["msg_type"] == "execute_result"]
        self.assertEqual(len(results), 1, f"{code!r}: outputs {[m['msg_type'] for m in msgs]}")
        return results[0]["content"]["data"]["text/plain"]

    def control_request(self, msg_type, content=None):
        msg = self.kc.session.msg(msg_type, content or {})
        self.kc.control_channel.send(msg)
        return msg["header"]["msg_id"]

    def shell_request(self, msg_type, content=None):
        msg = self.kc.session.msg(msg_type, content or {})
        self.kc.shell_channel.send(msg)
        return msg["header"]["msg_id"]


class ProtocolTests(KernelTestCase):
    def test_kernel_info_on_shell_and_control(self):
        msg_id = self.kc.kernel_info()
        reply = self.shell_reply(msg_id)
        self.assertEqual(reply["msg_type"], "kernel_info_reply")
        self.iopub_until_idle(msg_id)
        msg_id = self.control_request("kernel_info_request")
        reply = self.control_reply(msg_id)
        self.assertEqual(reply["msg_type"], "kernel_info_reply")
        self.iopub_until_idle(msg_id)

    def test_message_order(self):
        # (Go cells have no way to write stderr but a panic: os is not allowed.)
        code = 'fmt.Println("out")\nhtml("<b>x</b>")\nfmt.Print("more")\n6 * 7'
        reply, msgs = self.ok(code)
        types = [m["msg_type"] for m in msgs]
        self.assertEqual(types[0], "status")
        self.assertEqual(types[1], "execute_input")
        self.assertEqual(msgs[1]["content"]["code"], code)
        self.assertEqual(msgs[1]["content"]["execution_count"], reply["content"]["execution_count"])
        self.assertEqual(types[-1], "status")
        outputs = [(m["msg_type"], m["content"].get("name")) for m in msgs[2:-1]]
        self.assertEqual(outputs, [("stream", "stdout"), ("display_data", None), ("stream", "stdout"),
                                   ("execute_result", None)], types)
        self.assertEqual(msgs[2]["content"]["text"], "out\n")
        self.assertEqual(msgs[3]["content"]["data"]["text/html"], "<b>x</b>")
        self.assertEqual(msgs[4]["content"]["text"], "more")
        self.assertEqual(msgs[5]["content"]["data"]["text/plain"], "42")
        ids = [m["header"]["msg_id"] for m in msgs] + [reply["header"]["msg_id"]]
        self.assertEqual(len(ids), len(set(ids)), "msg_ids are not fresh")
        for m in msgs + [reply]:
            self.assertEqual(m["parent_header"]["msg_id"], reply["parent_header"]["msg_id"])

    def test_execution_count_rules(self):
        r1, _ = self.ok("1")
        n = r1["content"]["execution_count"]
        r2, msgs = self.ok('fmt.Println("quiet")', silent=True)
        self.assertEqual(r2["content"]["execution_count"], n, "silent incremented the count")
        self.assertEqual([m["msg_type"] for m in msgs], ["status", "status"], "silent cell published output")
        r3, msgs = self.ok("2", store_history=False)
        self.assertEqual(r3["content"]["execution_count"], n, "store_history=False incremented the count")
        self.assertIn("execute_result", [m["msg_type"] for m in msgs])
        r4, _ = self.ok("3")
        self.assertEqual(r4["content"]["execution_count"], n + 1)

    def test_error(self):
        reply, msgs = self.execute("var e []int\n_ = e[3]")
        c = reply["content"]
        self.assertEqual(c["status"], "error")
        self.assertTrue(c["ename"] and c["evalue"])
        outputs = [m for m in msgs if m["msg_type"] not in ("status", "execute_input")]
        self.assertEqual([m["msg_type"] for m in outputs], ["error"], "an error cell must produce exactly one output")
        self.assertEqual(outputs[0]["content"]["ename"], c["ename"])
        self.assertTrue(all(isinstance(t, str) for t in outputs[0]["content"]["traceback"]))

    def test_stop_on_error_aborts_queued_executes(self):
        # 1 s: room for the two requests below to be queued behind the cell
        # on a loaded machine (they are sent at once).
        first = self.kc.execute('time.Sleep(time.Second)\npanic("stop here")')
        second = self.kc.execute("1")
        third = self.kc.execute("2")
        self.assertEqual(self.shell_reply(first)["content"]["status"], "error")
        for mid in (second, third):
            self.assertEqual(self.shell_reply(mid)["content"]["status"], "aborted")
            self.iopub_until_idle(mid)
        self.assertEqual(self.value("5"), "5", "the kernel does not run cells after an abort")
        # With stop_on_error false the queue runs on.
        first = self.kc.execute('time.Sleep(time.Second)\npanic("go on")', stop_on_error=False)
        second = self.kc.execute("7")
        self.assertEqual(self.shell_reply(first)["content"]["status"], "error")
        self.assertEqual(self.shell_reply(second)["content"]["status"], "ok")

    def test_display_update_clear(self):
        _, msgs = self.ok('d := new_display("step 1")\nupdate_display(d, "step 2")\nclear_output(true)\nfmt.Println("after")')
        kinds = [m["msg_type"] for m in msgs[2:-1]]
        self.assertEqual(kinds, ["display_data", "update_display_data", "clear_output", "stream"])
        did = msgs[2]["content"]["transient"]["display_id"]
        self.assertTrue(did)
        self.assertEqual(msgs[3]["content"]["transient"]["display_id"], did)
        self.assertIn("step 2", msgs[3]["content"]["data"]["text/plain"])
        self.assertTrue(msgs[4]["content"]["wait"])

    def test_pager(self):
        """NAME? and %help NAME page the DSL's help (an execute_reply payload,
        as ipykernel sends for ?) and put nothing in the output area."""
        for code in ("private_pca?", "%help private_pca", "?private_pca", "private_pca??"):
            reply, msgs = self.ok(code)
            outputs = [m["msg_type"] for m in msgs if m["msg_type"] not in ("status", "execute_input")]
            self.assertEqual(outputs, [], f"{code!r} wrote to the output area")
            payload = reply["content"]["payload"]
            self.assertEqual(len(payload), 1, f"{code!r}: payload {payload}")
            self.assertEqual(payload[0]["source"], "page")
            self.assertEqual(payload[0]["start"], 0)
            self.assertTrue(payload[0]["data"]["text/plain"].startswith("private_pca(ds, k=1, eps=<float>"), payload[0])
        reply, _ = self.ok("%ledger?")
        self.assertIn("%ledger [DATASET | --all]", reply["content"]["payload"][0]["data"]["text/plain"])
        # Not help: a plain cell has an empty payload; a misspelt name is an
        # error saying which name was meant.
        reply, _ = self.ok("1")
        self.assertEqual(reply["content"]["payload"], [])
        reply, _ = self.execute("privat_pca?")
        self.assertEqual(reply["content"]["status"], "error")
        self.assertIn("did you mean private_pca?", reply["content"]["evalue"])

    def test_complete_counts_code_points(self):
        code = 's := "é✓"\nfmt.Prin'
        cursor = len(code)  # Python counts code points, as the protocol does
        msg_id = self.kc.complete(code, cursor)
        c = self.shell_reply(msg_id)["content"]
        self.iopub_until_idle(msg_id)
        self.assertIn("Println", c["matches"])
        self.assertEqual(c["cursor_end"], cursor)
        self.assertEqual(c["cursor_start"], cursor - len("Prin"))

    def test_inspect(self):
        msg_id = self.kc.inspect("fmt.Println", len("fmt.Print"))
        c = self.shell_reply(msg_id)["content"]
        self.assertTrue(c["found"], c)
        self.assertIn("text/plain", c["data"])
        msg_id = self.kc.inspect("zzNoSuchName", 3)
        self.assertFalse(self.shell_reply(msg_id)["content"]["found"])

    def test_is_complete(self):
        for code, want in [("x := 1", "complete"), ("func f() {", "incomplete"),
                           ("for i := 0; i < 3; i++ {\n  if i > 1 {", "incomplete"), ("x := )", "invalid")]:
            msg_id = self.kc.is_complete(code)
            c = self.shell_reply(msg_id)["content"]
            self.assertEqual(c["status"], want, code)
            if want == "incomplete":
                self.assertIsInstance(c["indent"], str)
            self.iopub_until_idle(msg_id)

    def test_history(self):
        self.ok("hist1 := 1001")
        self.ok("hist2 := hist1 + 1\nhist2")
        msg_id = self.kc.history(hist_access_type="tail", n=2, output=False, raw=True)
        h = self.shell_reply(msg_id)["content"]["history"]
        self.assertEqual([e[2] for e in h], ["hist1 := 1001", "hist2 := hist1 + 1\nhist2"])
        msg_id = self.kc.history(hist_access_type="tail", n=1, output=True, raw=True)
        h = self.shell_reply(msg_id)["content"]["history"]
        self.assertEqual(h[0][2], ["hist2 := hist1 + 1\nhist2", "1002"])
        line = h[0][1]
        msg_id = self.kc.history(hist_access_type="range", session=0, start=line - 1, stop=line + 1, raw=True, output=False)
        h = self.shell_reply(msg_id)["content"]["history"]
        self.assertEqual([e[1] for e in h], [line - 1, line])
        msg_id = self.kc.history(hist_access_type="search", pattern="hist? := *", n=10, unique=True, raw=True, output=False)
        h = self.shell_reply(msg_id)["content"]["history"]
        self.assertEqual([e[2].split(" ")[0] for e in h], ["hist1", "hist2"])

    def test_comms(self):
        msg_id = self.kc.comm_info()
        c = self.shell_reply(msg_id)["content"]
        self.assertEqual(c["comms"], {})
        msg_id = self.shell_request("comm_open", {"comm_id": "c-1", "target_name": "jupyter.widget", "data": {}})
        msgs = self.iopub_until_idle(msg_id)
        closes = [m for m in msgs if m["msg_type"] == "comm_close"]
        self.assertEqual(len(closes), 1, [m["msg_type"] for m in msgs])
        self.assertEqual(closes[0]["content"]["comm_id"], "c-1")

    def test_unknown_request_gets_error_reply(self):
        msg_id = self.shell_request("frobnicate_request", {})
        reply = self.shell_reply(msg_id)
        self.assertEqual(reply["msg_type"], "frobnicate_reply")
        self.assertEqual(reply["content"]["status"], "error")
        msg_id = self.control_request("debug_request", {"type": "request", "seq": 1, "command": "initialize"})
        self.assertEqual(self.control_reply(msg_id)["content"]["status"], "error")

    def test_bad_signatures_dropped(self):
        self.ok("guard := 1")
        sock = self.kc.shell_channel.socket
        forged = [Session(key=b"not-the-key", username="mallory"), Session(key=b"", username="mallory")]
        sent = []
        for s in forged:
            msg = s.msg("execute_request", {"code": "guard = 666", "silent": False, "store_history": True,
                                            "user_expressions": {}, "allow_stdin": False, "stop_on_error": True})
            s.send(sock, msg)
            sent.append(msg["header"]["msg_id"])
        # Garbage frames are dropped, and so is a valid message replayed
        # verbatim (same signature).
        sock.send_multipart([b"<IDS|MSG>", b"", b"{", b"}", b"{}", b"{}"])
        sock.send_multipart([b"no delimiter"])
        self.ok("replays := 0")
        msg = self.kc.session.msg("execute_request", {"code": "replays++", "silent": False, "store_history": True,
                                                      "user_expressions": {}, "allow_stdin": False,
                                                      "stop_on_error": True})
        frames = self.kc.session.serialize(msg)
        sock.send_multipart(frames)
        self.assertEqual(self.shell_reply(msg["header"]["msg_id"])["content"]["status"], "ok")
        sock.send_multipart(frames)
        sent.append(msg["header"]["msg_id"])
        deadline = time.monotonic() + 1.0
        while time.monotonic() < deadline:
            try:
                m = self.kc.get_shell_msg(timeout=0.1)
            except queue.Empty:
                continue
            self.assertNotIn(m["parent_header"].get("msg_id"), sent, "a forged message was answered")
        self.assertEqual(self.value("guard"), "1", "a forged message was executed")
        self.assertEqual(self.value("replays"), "1", "a replayed message was executed")

    def test_control_and_heartbeat_answer_while_a_cell_runs(self):
        # The cell sleeps for an hour, so replies that waited for it would
        # never come: answering at all (within T, a hang bound) is the proof,
        # with no timing threshold a loaded machine could cross.
        msg_id = self.kc.execute("time.Sleep(time.Hour)")
        self.wait_started(msg_id)
        info = self.control_request("kernel_info_request")
        self.control_reply(info)
        comp = self.kc.complete("fmt.Spr", 7)
        self.assertIn("Sprintf", self.shell_reply(comp)["content"]["matches"])
        self.assertTrue(self.kc.hb_channel.is_beating())
        ir = self.control_request("interrupt_request")
        self.control_reply(ir)
        self.assertEqual(self.shell_reply(msg_id)["content"]["ename"], "Interrupted")
        self.iopub_until_idle(msg_id)


class InterruptTests(KernelTestCase):
    def interrupt_after(self, code, delay, how):
        """Runs code, lets it run for delay seconds once the kernel has
        taken it, interrupts it and returns the reply and the time from the
        interrupt request (or signal) to the reply."""
        msg_id = self.kc.execute(code)
        self.wait_started(msg_id)
        time.sleep(delay)
        # The time runs from the interrupt to the moment the kernel created
        # its execute_reply (the reply header's date, same machine clock):
        # how late this test process, competing for the CPU on a loaded
        # machine, gets around to reading the reply is not the kernel's.
        t0 = datetime.datetime.now(datetime.timezone.utc)
        if how == "message":
            ir = self.control_request("interrupt_request")
            self.assertEqual(self.control_reply(ir, timeout=5)["content"]["status"], "ok")
        else:
            os.kill(self.km.provisioner.process.pid, signal.SIGINT)
        reply = self.shell_reply(msg_id, timeout=5)
        took = (header_date(reply) - t0).total_seconds()
        print(f"\ninterrupt of {code!r} by {how}: reply {took:.3f} s after it", file=sys.stderr)
        self.iopub_until_idle(msg_id)
        return reply["content"], took

    def test_interrupt_loop_sleep_and_signal(self):
        self.ok("kept := 41")
        cases = [("for {}", "message"), ("n := 0\nfor { n++ }", "message"),
                 ("time.Sleep(time.Hour)", "message"), ("for {}", "signal")]
        for code, how in cases:
            with self.subTest(code=code, how=how):
                # The 1 s bound is the requirement. On a CI machine whose
                # two cores also run other packages' tests, one interrupt of
                # a spinning cell can be starved past it (seen at 1.0-1.8 s
                # under 4x CPU oversubscription, 0.003-0.15 s otherwise), so
                # a miss is retried up to twice: a kernel that is slow to
                # interrupt every time still fails; every attempt must give
                # an Interrupted error.
                times = []
                for _ in range(3):
                    c, took = self.interrupt_after(code, 0.3, how)
                    self.assertEqual(c["status"], "error")
                    self.assertEqual(c["ename"], "Interrupted", c)
                    times.append(took)
                    if took < 1.0:
                        break
                    self.assertEqual(self.value("kept + 1"), "42", "variables did not survive the interrupt")
                self.assertLess(min(times), 1.0, f"interrupts of {code!r} took {', '.join(f'{x:.2f}' for x in times)} s")
                # The next cell starts at once (yaegi could revive a cancelled
                # top-level loop then), sees the old variables, and afterwards
                # no goroutine of the interrupted cell burns CPU.
                self.assertEqual(self.value("kept + 1"), "42", "variables did not survive the interrupt")
                pid = worker_pid(self.km.provisioner.process.pid)
                before = cpu_seconds(pid)
                time.sleep(0.3)
                burnt = cpu_seconds(pid) - before
                self.assertLess(burnt, 0.05, f"worker used {burnt:.2f} s CPU in 0.3 s after interrupting {code!r}")

    def test_interrupt_when_idle_is_harmless(self):
        ir = self.control_request("interrupt_request")
        self.assertEqual(self.control_reply(ir)["content"]["status"], "ok")
        self.assertEqual(self.value("1 + 1"), "2")


class CrashTests(KernelTestCase):
    def crash(self, code):
        self.ok("before := 1")
        pid = worker_pid(self.km.provisioner.process.pid)
        reply, msgs = self.execute(code, timeout=20)
        c = reply["content"]
        self.assertEqual(c["status"], "error")
        self.assertEqual(c["ename"], "InterpreterRestarted", c)
        self.assertIn("variables were lost", c["evalue"])
        self.assertIn("ledger is unaffected", c["evalue"])
        self.assertIn("error", [m["msg_type"] for m in msgs])
        self.assertTrue(self.kc.is_alive() if hasattr(self.kc, "is_alive") else True)
        self.assertEqual(self.value("2 * 21"), "42", "the next cell did not run")
        self.assertNotEqual(worker_pid(self.km.provisioner.process.pid), pid)
        reply, _ = self.execute("before")
        self.assertEqual(reply["content"]["status"], "error", "variables survived a worker restart?")
        return c

    def test_goroutine_panic(self):
        # The engine recovers panics of go func(){...}() literals only; a
        # goroutine started as go f() still ends the worker.
        self.ok('func boom() { panic("boom in goroutine") }')
        # select {} blocks the cell until the panic ends the worker, however
        # late the goroutine runs (a sleep could end first on a loaded machine).
        c = self.crash('go boom()\nselect {}')
        self.assertIn("boom in goroutine", c["evalue"])

    def test_goroutine_literal_panic_recovered(self):
        self.ok("kept := 7")
        pid = worker_pid(self.km.provisioner.process.pid)
        # The cell waits for the goroutine; its deferred close runs just before
        # the engine's recovery, which the 300 ms sleep leaves ample time for.
        reply, msgs = self.execute('done := make(chan bool)\ngo func() { defer close(done); panic("boom in literal") }()\n'
                                   '<-done\ntime.Sleep(300 * time.Millisecond)')
        self.assertEqual(reply["content"]["status"], "ok", reply["content"])
        stderr = "".join(m["content"]["text"] for m in msgs
                         if m["msg_type"] == "stream" and m["content"]["name"] == "stderr")
        self.assertIn("panic in a goroutine", stderr)
        self.assertIn("boom in literal", stderr)
        self.assertEqual(worker_pid(self.km.provisioner.process.pid), pid)
        self.assertEqual(self.value("kept"), "7")

    def test_runaway_recursion(self):
        self.ok("func down(n int) int { return down(n+1) + 1 }")
        t0 = time.monotonic()
        c = self.crash("down(0)")
        self.assertIn("stack overflow", c["evalue"])
        self.assertLess(time.monotonic() - t0, 10)


class LifecycleTests(unittest.TestCase):
    def test_restart_and_shutdown(self):
        km = KernelManager(kernel_name=KERNEL)
        km.start_kernel()
        kc = km.client()
        kc.start_channels()
        try:
            kc.wait_for_ready(timeout=60)
            r = kc.execute_interactive("life := 1", timeout=T)
            self.assertEqual(r["content"]["status"], "ok")
            old = km.provisioner.process
            old_pid = old.pid
            km.restart_kernel(now=False)
            # jupyter_client waits up to 5 s for the kernel to exit, then
            # kills it (status -9): status 0 proves the kernel honoured the
            # shutdown_request itself (a timing bound near 5 s would flake
            # on a loaded machine).
            self.assertEqual(old.poll(), 0, "the old kernel did not exit by itself on shutdown_request")
            self.assertNotEqual(km.provisioner.process.pid, old_pid)
            kc.wait_for_ready(timeout=60)
            r = kc.execute_interactive("life", timeout=T)
            self.assertEqual(r["content"]["status"], "error", "variables survived a restart")
            r = kc.execute_interactive("2 + 2", timeout=T)
            self.assertEqual(r["content"]["execution_count"], 2, "the count did not restart")
            # shutdown_request is answered on control, then the process exits.
            msg_id = kc.shutdown(restart=False)
            deadline = time.monotonic() + T
            while True:
                m = kc.get_control_msg(timeout=max(0.01, deadline - time.monotonic()))
                if m["parent_header"].get("msg_id") == msg_id:
                    break
            msgschema.validate(m)
            self.assertEqual(m["msg_type"], "shutdown_reply")
            self.assertEqual(m["content"], {"status": "ok", "restart": False})
            proc = km.provisioner.process
            deadline = time.monotonic() + 3
            while proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.02)
            self.assertIsNotNone(proc.poll(), "the kernel did not exit within 3 s of shutdown_request")
            self.assertEqual(proc.returncode, 0)
        finally:
            kc.stop_channels()
            if km.is_alive():
                km.shutdown_kernel(now=True)


if __name__ == "__main__":
    if len(sys.argv) > 1 and not sys.argv[1].startswith("-"):
        KERNEL = sys.argv.pop(1)
    unittest.main(verbosity=2)
