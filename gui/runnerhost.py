"""The window's runners: `python -m mnnscope.runner` processes, started on demand, watched, restarted after a
crash. `client` answers the quick structural requests (shapes, hello); `work` runs the docks' jobs (profile,
statistics, compare, convert) through `run_job`, so a long run never delays the shapes of a model just opened
and cancelling a job never kills the shapes runner. State shows in the status bar; requests run on worker
threads (gui.tasks).

Health: a job whose runner dies (RunnerDied: signal, last op) or hangs (no message, not even the runner's
one-second heartbeat, for `hang_timeout` s: the client then stops it) leaves a persistent banner naming the
job, the op and the signal, with a "Restart runner" button. The next job starts a fresh runner on its own,
up to MAX_DEATHS deaths within DEATH_WINDOW_S; past that, jobs are refused with a message until the user
presses Restart runner. Results delivered before a death are the docks' and are never touched here."""
from __future__ import annotations

import threading
import time

from PySide6.QtCore import QObject, QTimer, Signal

from mnnscope.runner import protocol
from mnnscope.runner.protocol import RunnerError

from mnnscope.inspector.process.client import RunnerClient, RunnerDied
from mnnscope.inspector.formats.registry import adapter_named

from mnnscope.gui.notify import ERROR, INFO
from mnnscope.gui.tasks import TaskSlot

HANG_TIMEOUT_S = 300.0   # no message at all (heartbeats come every second) for this long: the runner hangs
MAX_DEATHS = 3           # automatic restarts: this many deaths ...
DEATH_WINDOW_S = 300.0   # ... within this window, and jobs wait for the user's Restart runner
WORK_GRACE_S = 0.3       # a cancelled job's runner that does not stop within this is terminated, then killed
STATE_EVERY_MS = 100     # the status bar follows op_begin events at most this often


# MNN's converter holds the GIL while it works, so the runner's heartbeat thread is silent meanwhile (measured:
# a 5 s conversion of the moe_llm sample sent none for over 0.8 s): silence there is no sign of a hang.
NO_HEARTBEAT_REQUESTS = {"convert", "quantize", "supported_ops"}


class _HangGuard:
    """The work runner as a service sees it, with the host's hang timeout on every request that sets none
    (the services call `client.request(...)` without one), converter requests excepted; everything else is
    the client's own."""

    def __init__(self, client: RunnerClient, hang_timeout: float | None, cancelled, last_op: dict):
        self._client = client
        self._hang = hang_timeout
        self._cancelled = cancelled
        self._last_op = last_op
        self.death: dict = {}   # the runner's death or hang during the job, even where a service reports it
                                # as its own result (a conversion's crash diagnosis)

    def request(self, msg_type, payload=None, on_event=None, timeout=None, hang_timeout=None):
        if hang_timeout is None and msg_type not in NO_HEARTBEAT_REQUESTS:
            hang_timeout = self._hang
        try:
            return self._client.request(msg_type, payload, on_event=on_event, timeout=timeout,
                                        hang_timeout=hang_timeout, cancelled=self._cancelled)
        except RunnerDied as e:
            if not self._cancelled():
                self.death.update(signal=e.signal, returncode=e.returncode, request=msg_type,
                                  op=e.last_op or dict(self._last_op) or None, message=str(e.message),
                                  log_tail=list(e.log_tail or [])[-20:])
            raise
        except RunnerError as e:
            if e.kind == protocol.TIMEOUT and "stopped answering" in str(e.message) and not self._cancelled():
                self.death.update(hang=True, request=msg_type, op=dict(self._last_op) or None,
                                  message=str(e.message))
            raise

    def __getattr__(self, name):
        return getattr(self._client, name)


def death_text(job: str, info: dict) -> str:
    """"profile: the runner died (SIGKILL) during op `x` (MatMul)" and the like, for banner and status bar."""
    op = info.get("op") or {}
    where = f" during op `{op['name']}`" + (f" ({op['type']})" if op.get("type") else "") if op.get("name") else ""
    if info.get("hang"):
        return f"{job}: the runner stopped answering{where} and was stopped"
    how = info.get("signal") or (f"exit code {info['returncode']}" if info.get("returncode") is not None else "")
    return f"{job}: the runner died{f' ({how})' if how else ''}{where}"


class RunnerHost(QObject):
    state_changed = Signal(str)   # not started / busy: ... / idle / died: ...
    backend_changed = Signal(str)
    job_event = Signal(str, str, object)   # job name, event type (op_begin, log, ...), payload: UI thread
    job_finished = Signal(str, bool, str)  # job name, ok, message ("" when ok)
    runner_died = Signal(str, dict)        # job name, {signal, returncode, op, hang, message}: UI thread

    def __init__(self, python: str | None = None, parent=None):
        super().__init__(parent)
        self.python = python
        self.client = RunnerClient(python=python)
        self.state = "not started"
        self.backend = "CPU"
        self._shapes: dict[str, TaskSlot] = {}
        self._hello = TaskSlot(self)
        self.work = RunnerClient(python=python, grace=WORK_GRACE_S)
        self._jobs: dict[str, TaskSlot] = {}
        self._work_lock = threading.Lock()  # one job at a time on the work runner (run_job)
        self.job_event.connect(self._job_progress)
        self.hang_timeout: float | None = HANG_TIMEOUT_S
        self.deaths: list[tuple[float, str, dict]] = []   # (monotonic time, job, info) of recent deaths
        self._work_died = False                            # the status bar shows the work runner's death
        self.death_note = None                             # the banner of the last death (gui.notify)
        self._op_state: str | None = None                  # the status text the op timer shows next
        self._op_timer = QTimer(self)
        self._op_timer.setSingleShot(True)
        self._op_timer.setInterval(STATE_EVERY_MS)
        self._op_timer.timeout.connect(self._show_op_state)

    def set_python(self, python: str | None) -> None:
        """Use another interpreter (a user's own MNN build) for the runner from the next request on."""
        for slot in self._shapes.values():
            slot.shutdown()
        self.client.stop()
        self.cancel_jobs()
        self.work.stop()
        self.python = python
        self.client = RunnerClient(python=python)
        self.work = RunnerClient(python=python, grace=WORK_GRACE_S)
        self._set_state("not started")

    def _set_state(self, state: str) -> None:
        self.state = state
        self.state_changed.emit(state)

    def _set_client_state(self, state: str) -> None:
        """The shapes runner's state: shown unless a job is running or the work runner's death is (one label
        for both runners; the death stays until the next job or Restart runner)."""
        if any(slot.busy for slot in self._jobs.values()):
            return
        if self._work_died and not state.startswith("died:"):
            return
        self._set_state(state)

    def load_shapes(self, path: str, fmt: str, on_done, on_fail, key: str = "main",
                    input_shapes: dict | None = None) -> None:
        """Shapes of every tensor, from the format adapter's shape request (ONNX shape inference, MNN itself:
        native, so runner only). A format without one reports no shapes and leaves the runner alone.
        `input_shapes`: sizes of dynamic inputs ({name: dims}, the Inputs dock's), for formats whose shapes
        depend on them (.mnn)."""
        adapter = adapter_named(fmt)
        client = self.client

        def run(cancelled=None):
            cancelled.set_hook(client.cancel)
            request = adapter.shape_request(path, input_shapes or None)  # may read the file: off the UI thread
            if request is None:
                return {}, {}
            result = client.request(request.type, request.payload, timeout=600)
            return adapter.tensor_shapes(result), adapter.shapes_for_inputs(result)

        def done(res):
            shapes, sizes = res
            self._set_client_state(f"idle (pid {client.pid})" if client.alive else "idle")
            on_done(shapes, sizes)

        def failed(msg):
            died = not client.alive
            self._set_client_state(f"died: {msg}" if died else f"idle (pid {client.pid})")
            on_fail(msg, died)

        self._set_client_state(f"busy: {fmt} shapes")
        slot = self._shapes.setdefault(key, TaskSlot(self))
        slot.start(run, on_done=done, on_fail=failed, name="shapes")

    def dims_at(self, path: str, fmt: str, input_shapes: dict, on_done) -> bool:
        """{symbolic dim: size} of the model's shapes at `input_shapes` (every input with a free dim, as the Inputs
        dock sizes it) to `on_done`, off the UI thread; False when the format has no such request. A failure costs
        only the numbers (the names stay on the labels): on_done gets {}."""
        request = adapter_named(fmt).dims_request(path, input_shapes)
        if request is None:
            return False
        client = self.client

        def run(cancelled=None):
            cancelled.set_hook(client.cancel)
            return client.request(request.type, request.payload, timeout=600).get("dims_at") or {}

        slot = self._shapes.setdefault("dims", TaskSlot(self))
        slot.start(run, on_done=on_done, on_fail=lambda msg: on_done({}), name="dims")
        return True

    def cancel(self) -> None:
        for slot in self._shapes.values():
            slot.cancel()

    # ----- jobs of the docks ---------------------------------------------------------------------------
    def run_job(self, name: str, fn, on_done=None, on_fail=None):
        """Run `fn(client, on_event, cancelled)` on a worker thread with the work runner: a service call such as
        `run_profile(opts, client=client, on_event=on_event)`. Events reach `job_event` on the UI thread;
        `on_done(result)` / `on_fail(message)` run on the UI thread. A job of the same name still running is
        cancelled first. Returns the task, or None when the job is refused (the runner died too often: see
        `restart`; on_fail gets the reason)."""
        if self.capped:
            msg = (f"the runner died {len(self._recent_deaths())} times in {DEATH_WINDOW_S / 60:g} minutes; "
                   "press Restart runner to try again")
            self._set_state("died: restarts paused")
            self.job_finished.emit(name, False, msg)
            if on_fail is not None:
                on_fail(msg)
            return None
        client = self.work
        hang = self.hang_timeout
        info: dict = {}   # the runner's death, filled on the worker thread before the outcome is emitted

        def run(cancelled=None):
            # One job at a time on the work runner: a job waiting for it is cancelled without touching the
            # runner (its hook is set only once it owns it), so cancelling it never stops another job's
            # request; and timings are never taken while another job loads the machine.
            while not self._work_lock.acquire(timeout=0.05):
                if cancelled():
                    return None
            try:
                return owned(cancelled)
            finally:
                self._work_lock.release()

        def owned(cancelled):
            cancelled.set_hook(client.cancel)
            last_op: dict = {}

            def on_event(kind, payload):
                if kind == "op_begin" and isinstance(payload, dict):
                    last_op.clear()
                    last_op.update(payload)
                self.job_event.emit(name, kind, payload)

            guard = _HangGuard(client, hang, cancelled, last_op)
            try:
                return fn(guard, on_event, cancelled)
            finally:
                info.update(guard.death)

        def done(result):
            if info:   # the service reported the death in its result (e.g. a converter crash): banner too
                self._died(name, info)
            else:
                self._set_state(f"idle (pid {client.pid})" if client.alive else "idle")
            self.job_finished.emit(name, True, "")
            if on_done is not None:
                on_done(result)

        def failed(msg):
            if info:
                self._died(name, info)
            else:
                self._set_state(f"idle (pid {client.pid})" if client.alive else "idle")
            self.job_finished.emit(name, False, msg)
            if on_fail is not None:
                on_fail(msg)

        self._work_died = False
        self._set_state(f"busy: {name}")
        slot = self._jobs.setdefault(name, TaskSlot(self))
        return slot.start(run, on_done=done, on_fail=failed, name=name)

    def job_busy(self, name: str) -> bool:
        slot = self._jobs.get(name)
        return slot is not None and slot.busy

    def live_job_threads(self) -> list:
        """The jobs' worker threads still running, cancelled ones included (tests: a cancel really ended)."""
        tasks = [t for slot in self._jobs.values() for t in ([slot.task] if slot.task else []) + list(slot._old)]
        return [t for t in tasks if t.isRunning()]

    def cancel_job(self, name: str) -> None:
        """Cancel one job: the runner is asked to stop, then terminated (gone within a second)."""
        slot = self._jobs.get(name)
        if slot is not None and slot.task is not None:
            slot.cancel()  # its hook cancels the runner's request if the job owns the runner (run_job)
            self._op_timer.stop()
            self._set_state("idle (cancelled)")
            self.job_finished.emit(name, False, "cancelled")

    def cancel_jobs(self) -> None:
        for name in list(self._jobs):
            self.cancel_job(name)

    def _job_progress(self, name: str, kind: str, payload) -> None:
        if kind == "op_begin" and isinstance(payload, dict) and payload.get("name") and self.job_busy(name):
            self._op_state = f"busy: {name} \u00b7 op {payload['name']}"
            if not self._op_timer.isActive():
                self._op_timer.start()

    def _show_op_state(self) -> None:
        if self._op_state and self.state.startswith("busy") and any(s.busy for s in self._jobs.values()):
            self._set_state(self._op_state)
        self._op_state = None

    # ----- health --------------------------------------------------------------------------------------
    def _recent_deaths(self) -> list:
        now = time.monotonic()
        return [d for d in self.deaths if now - d[0] <= DEATH_WINDOW_S]

    @property
    def capped(self) -> bool:
        """Whether automatic restarts are used up (MAX_DEATHS within DEATH_WINDOW_S): jobs wait for restart()."""
        return len(self._recent_deaths()) >= MAX_DEATHS

    def _died(self, job: str, info: dict) -> None:
        self._op_timer.stop()
        self.deaths = self._recent_deaths() + [(time.monotonic(), job, dict(info))]
        text = death_text(job, info)
        self._work_died = True
        self._set_state("died: " + text)
        hint = ("restarts are paused after {} deaths in {:g} minutes: press Restart runner".format(
                    MAX_DEATHS, DEATH_WINDOW_S / 60) if self.capped else
                "the next run starts a fresh runner; results shown before stay")
        sink = getattr(self.parent(), "sink", None)
        if sink is not None:
            if self.death_note is not None:
                self._dismiss(self.death_note)
            self.death_note = sink.notify(text, ERROR, subject="runner", hint=hint,
                                          detail="\n".join(info.get("log_tail") or []),
                                          actions=[("Restart runner", self.restart)])
        self.runner_died.emit(job, dict(info, text=text))

    def _dismiss(self, note) -> None:
        notes = getattr(self.parent(), "notes", None)
        if notes is not None:
            for card in list(notes.cards):
                if card.n is note:
                    notes.dismiss(card)

    def restart(self) -> None:
        """The user's Restart runner: forget the deaths, drop the work runner; the next job starts a fresh one."""
        self.cancel_jobs()
        old = self.work
        self.work = RunnerClient(python=self.python, env=old.extra_env, grace=old.grace)
        # stopping waits for the process: never on the UI thread
        threading.Thread(target=old.stop, kwargs={"timeout": 0.5}, name="runner-stop").start()
        self.deaths.clear()
        self._work_died = False
        if self.death_note is not None:
            self._dismiss(self.death_note)
            self.death_note = None
        self._set_state("idle (restarted: the next job starts a fresh runner)")
        sink = getattr(self.parent(), "sink", None)
        if sink is not None:
            sink.notify("runner restarted: the next run starts a fresh one", INFO, subject="runner")

    def query_backend(self) -> None:
        """Ask the runner what it can run on (MNN version, loadable backends) for the status bar."""
        client = self.client

        def run(cancelled=None):
            return client.request("hello", {"mnn": True}, timeout=120)

        def done(info):
            backends = info.get("backends") or []
            names = [b.get("name", str(b)) if isinstance(b, dict) else str(b) for b in backends]
            mnn = info.get("mnn")
            self.backend = f"MNN {mnn} \u00b7 " + (", ".join(names) if names else "CPU") if mnn else "MNN unavailable"
            self.backend_changed.emit(self.backend)
            if self.state == "not started":
                self._set_client_state(f"idle (pid {client.pid})")

        self._hello.start(run, on_done=done, on_fail=lambda msg: None, name="hello")

    def shutdown(self) -> None:
        self.client.cancel()
        self.work.cancel()
        for slot in self._shapes.values():
            slot.shutdown()
        for slot in self._jobs.values():
            slot.shutdown()
        self._hello.shutdown()
        self._op_timer.stop()
        # A runner takes a few hundred ms to leave (more under load): the window closes without waiting for it.
        # Not daemon threads: the process waits for them at exit, so no runner outlives the app.
        for client in (self.client, self.work):
            if client.proc is not None:
                threading.Thread(target=client.stop, name="runner-stop").start()

    @property
    def alive(self) -> bool:
        return self.client.alive

