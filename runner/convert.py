"""Conversion requests: MNN's converter (`convert`), quantizer (`quantize`) and supported-op list.

Both tools print everything on stdout, return success even when they fail, and sometimes crash. So
fd 1 and fd 2 go to a log file in the job's run directory while they run (the file survives a crash
and the client reads it afterwards), a thread tails that file into `log` events, and success is
decided from the log text, the output file and MNN loading the output, never from the return value.
"""
from __future__ import annotations

import ctypes
import json
import os
import re
import signal
import sys
import threading
import time

from mnnscope.runner import confine, protocol
from mnnscope.runner.mnn_env import capture_fd1, mnn, tools
from mnnscope.runner.protocol import RunnerError

SUCCESS = "Converted Success!"
QUANT_DONE = "Quantize model done!"
# Lines that mean the conversion failed whatever else is printed.
FATAL = ("Converted Failed!", "read onnx model failed", "Model file is not onnx model", "Convert error",
         "Model File Does Not Exist", "Can't open file")
_UNSUPPORTED = re.compile(r"These Op Not Support:\s*(.*)")
_CANT_OPEN = re.compile(r"Can't open file:?\s*(.*)")
IMAGE_EXT = (".jpg", ".jpeg", ".png", ".bmp")

_stdio_unbuffered = False


def _libc():
    try:
        return ctypes.CDLL(None)
    except OSError:
        return None


def _unbuffer_stdio() -> None:
    """Make C stdio unbuffered: printed lines must reach the log file before a crash, not after."""
    global _stdio_unbuffered
    if _stdio_unbuffered:
        return
    _stdio_unbuffered = True
    libc = _libc()
    if libc is None:
        return
    try:
        libc.fflush(None)
        for name in ("stdout", "stderr"):
            libc.setvbuf(ctypes.c_void_p.in_dll(libc, name), None, 2, 0)  # 2 = _IONBF
    except (ValueError, AttributeError):
        pass  # not glibc-like: lines may arrive in blocks, the log is still complete after a normal exit


PR_SET_PDEATHSIG = 1


def in_fresh_process(fn, *args) -> None:
    """fn(*args) in a forked child of this runner, waited for: MNN's converter keeps state across calls in one
    process (measured, MNN 3.6.1: its "caution: some weight absolute values are not zero and smaller than float min"
    line is printed by the first conversion of a process only; PP-OCRv6 rec converted after det in one runner lost
    its warning, and the conversion cache kept it lost). The child inherits fd 1 and 2 (the conversion's log) and
    dies with this process (a cancelled job kills the runner). A child killed by a signal kills this process with
    the same signal, so a crash reads as it did in-process (the client names the signal and the last operator)."""
    if not hasattr(os, "fork"):
        fn(*args)
        return
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # the child: nothing of Python's shutdown runs here, only fn and the flush of C stdio
        code = 0
        libc = _libc()
        try:
            if libc is not None:
                libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
            fn(*args)
        except BaseException:  # noqa: BLE001 - said in the log, as an in-process exception would be
            import traceback
            traceback.print_exc()
            code = 1
        finally:
            if libc is not None:
                libc.fflush(None)
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        os.kill(os.getpid(), os.WTERMSIG(status))
        time.sleep(5)  # (the signal is on its way)
    if os.WIFEXITED(status) and os.WEXITSTATUS(status) != 0:
        raise RuntimeError(f"the converter's process failed (exit {os.WEXITSTATUS(status)}): see the log")


class NativeLog:
    """fd 1 and fd 2 sent to `path` while native code runs; new lines are forwarded as `log` events."""

    def __init__(self, job, path: str, stream: str):
        self.job, self.path, self.stream = job, path, stream
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._saved: list[int] = []

    def __enter__(self):
        os.makedirs(os.path.dirname(os.path.abspath(self.path)), exist_ok=True)
        _unbuffer_stdio()
        sys.stdout.flush()
        sys.stderr.flush()
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        self._saved = [os.dup(1), os.dup(2)]
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        os.close(fd)
        self._thread = threading.Thread(target=self._tail, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        libc = _libc()
        if libc is not None:
            libc.fflush(None)
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:
                pass
        os.dup2(self._saved[0], 1)
        os.dup2(self._saved[1], 2)
        for fd in self._saved:
            os.close(fd)
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)
        return False

    def _tail(self) -> None:
        pending = b""
        with open(self.path, "rb") as f:
            while True:
                stopping = self._stop.is_set()
                chunk = f.read()
                if chunk:
                    pending += chunk
                    # mnnquant draws progress with "\r": each redraw is a line of its own.
                    pending = pending.replace(b"\r", b"\n")
                    head, sep, pending = pending.rpartition(b"\n")
                    if sep:
                        self._send(head)
                if stopping:
                    if pending:
                        self._send(pending)
                    return
                self._stop.wait(0.1)

    def _send(self, data: bytes) -> None:
        text = data.decode("utf-8", "replace").strip("\n")
        if text:
            try:
                self.job.log(text, self.stream)
            except OSError:
                pass


def _read(path: str) -> str:
    try:
        with open(path, "rb") as f:
            return f.read().decode("utf-8", "replace")
    except OSError:
        return ""


def _size(path: str) -> int | None:
    try:
        return os.path.getsize(path)
    except OSError:
        return None


def _verify_loads(path: str) -> tuple[int, str | None]:
    """Number of ops MNN sees in a written model; MNN returns [] for garbage instead of raising."""
    try:
        MNN = mnn()
        vars_, _ = capture_fd1(MNN.expr.load_as_list, path)
    except Exception as e:
        return 0, f"MNN could not load the written model ({e})"
    if not vars_:
        return 0, "MNN found no operators in the written model"
    return len(vars_), None


def judge_convert_log(text: str) -> dict:
    """What the converter's log says: success/failure markers, unsupported op types, unreadable files."""
    unsupported: list[str] = []
    for m in _UNSUPPORTED.finditer(text):
        for part in m.group(1).split("|"):
            op = part.strip()
            if op.startswith("ONNX::"):
                op = op[len("ONNX::"):]
            if op and op not in unsupported:
                unsupported.append(op)
    missing = [m.group(1).strip() for m in _CANT_OPEN.finditer(text)]
    fatal = [marker for marker in FATAL if marker in text]
    return {"success_marker": SUCCESS in text, "fatal": fatal, "unsupported": unsupported,
            "unreadable_files": missing}


def convert(job) -> dict:
    """Run the converter on payload {src, dst, args, log_path, framework?, verify?}."""
    p = job.payload
    src, dst, log_path = p["src"], p["dst"], p["log_path"]
    argv = ["MNNConvert", "-f", p.get("framework", "ONNX"), "--modelFile", src, "--MNNModel", dst,
            "--bizCode", p.get("biz_code", "mnnscope")] + [str(a) for a in p.get("args", [])]
    if p.get("framework", "ONNX") == "ONNX":
        confine.check_onnx(src)  # the converter opens whatever external data location the model names
    for stale in (dst, dst + ".weight"):
        if os.path.exists(stale):
            os.remove(stale)  # an old output must never pass for this conversion's result
    job.progress(None, "converting")
    start = time.monotonic()
    with NativeLog(job, log_path, "converter"):
        in_fresh_process(tools().mnnconvert, argv)
    seconds = time.monotonic() - start
    text = _read(log_path)
    verdict = judge_convert_log(text)
    size = _size(dst)
    result = {"argv": argv, "log_path": log_path, "seconds": seconds, "output": dst, "output_bytes": size,
              "weight_bytes": _size(dst + ".weight"), "mnn_ops": None, "problems": [], **verdict}
    ok = verdict["success_marker"] and not verdict["fatal"] and bool(size)
    if verdict["success_marker"] and not size:
        result["problems"].append("the converter said success but wrote no output file")
    if ok and p.get("verify", True):
        job.progress(None, "checking the converted model")
        result["mnn_ops"], problem = _verify_loads(dst)
        if problem:
            result["problems"].append(problem)
            ok = False
    result["ok"] = ok
    return result


def check_calibration(config: dict) -> None:
    """Refuse what makes mnnquant 3.6.1 crash: missing or empty data folders, unknown or ADMM methods."""
    path = config.get("path")
    if not path or not os.path.isdir(path):
        raise RunnerError(protocol.BAD_MODEL, f"calibration folder '{path}' does not exist")
    feature = config.get("feature_quantize_method", "KL")
    if feature not in ("KL", "EMA"):
        raise RunnerError(protocol.UNSUPPORTED, f"feature quantize method '{feature}' is not usable with "
                                                "mnnquant 3.6.1 (ADMM and unknown methods crash it): use KL or EMA")
    weight = config.get("weight_quantize_method", "MAX_ABS")
    if weight not in ("MAX_ABS", "ADMM"):
        raise RunnerError(protocol.UNSUPPORTED, f"weight quantize method '{weight}' is unknown: use MAX_ABS or ADMM")
    entries = sorted(os.listdir(path))
    if config.get("input_type") == "sequence":
        names = [i["name"] for i in config.get("inputs", [])]
        samples = [e for e in entries if os.path.isdir(os.path.join(path, e))]
        if not samples:
            raise RunnerError(protocol.BAD_MODEL, f"calibration folder '{path}' has no sample folders")
        for s in samples:
            d = os.path.join(path, s)
            wanted = ["input.json"] + [f"{n}.txt" for n in names]
            lacking = [w for w in wanted if not os.path.isfile(os.path.join(d, w))]
            if lacking:
                raise RunnerError(protocol.BAD_MODEL, f"calibration sample '{d}' lacks {', '.join(lacking)}")
    else:
        images = [e for e in entries if e.lower().endswith(IMAGE_EXT)]
        if not images:
            raise RunnerError(protocol.BAD_MODEL, f"calibration folder '{path}' has no images "
                                                  f"({', '.join(IMAGE_EXT)})")


def quantize(job) -> dict:
    """Run mnnquant on payload {src, dst, config, log_path}: full int8 with calibration data."""
    p = job.payload
    src, dst, config, log_path = p["src"], p["dst"], dict(p["config"]), p["log_path"]
    if not os.path.isfile(src) or not os.path.getsize(src):
        raise RunnerError(protocol.BAD_MODEL, f"{src}: no float model to quantize")
    check_calibration(config)
    config_path = p.get("config_path") or os.path.splitext(log_path)[0] + ".json"
    with open(config_path, "w", encoding="utf-8") as f:
        json.dump(config, f, indent=2)
    if os.path.exists(dst):
        os.remove(dst)
    argv = ["mnnquant", src, dst, config_path]
    job.progress(None, "calibrating and quantizing")
    start = time.monotonic()
    with NativeLog(job, log_path, "quantizer"):
        tools().mnnquant(argv)
    seconds = time.monotonic() - start
    text = _read(log_path)
    size = _size(dst)
    result = {"argv": argv, "config_path": config_path, "log_path": log_path, "seconds": seconds, "output": dst,
              "output_bytes": size, "mnn_ops": None, "problems": [], "done_marker": QUANT_DONE in text}
    ok = result["done_marker"] and bool(size)
    if not size:
        result["problems"].append("the quantizer wrote no output file")
    if ok:
        result["mnn_ops"], problem = _verify_loads(dst)
        if problem:
            result["problems"].append(problem)
            ok = False
    result["ok"] = ok
    return result


def _mnn_version() -> str:
    try:
        from importlib.metadata import version
        return version("MNN")
    except Exception:
        _, text = capture_fd1(tools().mnnconvert, ["MNNConvert", "--version"])
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        return lines[-1] if lines else "unknown"


def supported_ops(job) -> dict:
    """The op types the converter supports for a framework (`-f ONNX --OP`), cached per MNN version.

    With payload["model"] (an ONNX file) whose op types are not all in that list, the converter is asked
    about the model itself (`probe_ops`: one real conversion): "ops" then holds what it accepted there too,
    "probed" what the attempt showed per type, "unverified" the types it could not settle.
    """
    data = _op_list(job)
    model = job.payload.get("model")
    if model and data.get("framework", "ONNX").upper() == "ONNX":
        job.progress(None, "asking the converter about ops missing from its list")
        probed, unverified = probe_ops(model, set(data["ops"]))
        ops = [op for op in data["ops"] if probed.get(op, True)] + sorted(t for t, ok in probed.items() if ok)
        data = dict(data, ops=ops, listed=len(data["ops"]), probed=probed, unverified=unverified)
    return data


def _op_list(job) -> dict:
    framework = job.payload.get("framework", "ONNX")
    version = _mnn_version()
    cache_dir = job.payload.get("cache_dir")
    cache = os.path.join(cache_dir, f"mnn-{version}-{framework.lower()}-ops.json") if cache_dir else None
    if cache and os.path.isfile(cache):
        try:
            with open(cache, encoding="utf-8") as f:
                data = json.load(f)
            if data.get("mnn_version") == version and data.get("ops"):
                data["cached"] = True
                return data
        except (OSError, ValueError):
            pass
    _, text = capture_fd1(tools().mnnconvert, ["MNNConvert", "-f", framework, "--OP"])
    ops, total, listing = [], None, False
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("Dump") and "support Ops" in line:
            listing = True
        elif line.startswith("Total:"):
            total = int(line.split(":", 1)[1].strip() or -1)
            break
        elif listing and line:
            ops.append(line)
    if not ops or (total is not None and total != len(ops)):
        raise RunnerError(protocol.INTERNAL, f"could not read the converter's {framework} op list",
                          text[-2000:])
    data = {"mnn_version": version, "framework": framework, "ops": ops, "cached": False}
    if cache:
        try:
            os.makedirs(cache_dir, exist_ok=True)
            tmp = cache + f".{os.getpid()}.tmp"
            with open(tmp, "w", encoding="utf-8") as f:
                json.dump(data, f)
            os.replace(tmp, cache)
        except OSError:
            pass  # a cache we cannot write only costs a few milliseconds next time
    return data


# ----- asking the converter itself --------------------------------------------------------------------------
# `--OP` lists only the ops with a direct converter. 3.6.1 turns other ops into ops it has in later passes
# (MatMulInteger, for one: fed by DynamicQuantizeLinear it is rewritten; cut out alone, it stays unsupported),
# and only at the very end (writeFb) names every op type still left over: "These Op Not Support: ONNX::A |
# ONNX::B". Support therefore depends on the graph around an op, and the one trustworthy answer is a real
# conversion of the model itself. It runs in a process of its own with a time limit, so a crash or a slow
# conversion costs the answer, not the runner.
_PROBE_SCRIPT = """
import sys, _tools
_tools.mnnconvert(["MNNConvert", "-f", "ONNX", "--modelFile", sys.argv[1], "--MNNModel", sys.argv[2],
                   "--bizCode", "mnnscope"])
"""
PROBE_TIMEOUT = 100.0


def _model_op_types(model_path: str) -> set[str] | None:
    import onnx
    try:
        model = onnx.load(model_path, load_external_data=False)
    except Exception:
        return None
    types: set[str] = set()

    def gather(g):
        for node in g.node:
            types.add(node.op_type)
            for a in node.attribute:
                for sub in ([a.g] if a.HasField("g") else []) + list(a.graphs):
                    gather(sub)
    gather(model.graph)
    return types


def probe_ops(model_path: str, listed: set[str], timeout: float = PROBE_TIMEOUT) -> tuple[dict[str, bool], list[str]]:
    """({op type: does the converter accept it here}, [types no attempt could settle]) for the model's op types
    missing from `listed`, from one real conversion of the model; also a listed type the converter named
    (False). Nothing is run when every type is listed."""
    import subprocess
    import tempfile

    types = _model_op_types(model_path)
    if types is None:
        return {}, []
    asked = types - listed
    if not asked:
        return {}, []
    confine.check_onnx(model_path)  # the trial conversion would open the model's external data
    with tempfile.TemporaryDirectory(prefix="mnnscope-probe-") as tmp:
        dst = os.path.join(tmp, "probe.mnn")
        try:
            done = subprocess.run([sys.executable, "-c", _PROBE_SCRIPT, os.path.abspath(model_path), dst], cwd=tmp,
                                  stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                  timeout=timeout)
            text = done.stdout.decode("utf-8", "replace")
        except subprocess.TimeoutExpired:
            text = ""
    named = set(judge_convert_log(text)["unsupported"])
    if not named and SUCCESS not in text:
        # It failed (or crashed, or ran out of time) before its op check: no answer about these types.
        return {}, sorted(asked)
    answers = {t: t not in named for t in asked}
    answers.update({t: False for t in named if t in types})
    return answers, []
