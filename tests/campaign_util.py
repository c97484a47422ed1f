"""A small DeepOpt campaign for engine tests (72 hardware points, 9 tasks), and helpers to
interrupt a `sweep` subprocess at a known point (`freeze_when`)."""

import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Callable

TINY = """
name = "tiny"
output = "{out}"
networks = ["alexnet_deepopt", "squeezenet_v11_deepopt"]
objectives = ["E", "D", "ED"]

[architectures]
kind = "systolic"
[architectures.grid]
J = {{ start = 16, stop = 24, step = 4 }}
K = {{ start = 16, stop = 24, step = 4 }}
fsram_kib = [16, 32]
isram_kib = [16, 32]
psram_kib = [8, 16]
constraints = ["area_mm2 <= 16"]

[[mappers]]
name = "deepopt"

[run]
chunk_points = {chunk}
flush_rows = {flush}
"""


def write_tiny(tmp_path: Path, out: Path | None = None, flush: int = 1, extra: str = "",
               chunk: int = 8, name: str = "tiny.toml", jk_stop: int = 24) -> Path:
    """The tiny campaign in ``tmp_path / name``. ``jk_stop``: last value of the J and K ranges
    (24: 72 points; 32: 200 points, for a longer run)."""
    out = out or tmp_path / "out"
    p = tmp_path / name
    text = TINY.format(out=out.as_posix(), flush=flush, chunk=chunk)
    if jk_stop != 24:
        text = text.replace("stop = 24", f"stop = {jk_stop}")
    p.write_text(text + extra)
    return p


def tiny_loopnest(name: str, mapper: str = 'name = "loma"\nparams = { lpf_limit = 4 }', extra: str = "") -> str:
    """A loop-nest campaign of tests/data/tiny_net.csv (2 unique layers) on eyeriss_like with one
    ``[[mappers]]`` entry (``mapper``: its body) and ``extra`` TOML after it."""
    net = (Path(__file__).parent / "data" / "tiny_net.csv").as_posix()
    return (f'name = "{name}"\nnetworks = [{{ file = "{net}" }}]\n[architectures]\nkind = "loopnest"\n'
            f'presets = ["eyeriss_like"]\n[[mappers]]\n{mapper}\n{extra}')


# -- interrupting a subprocess at a known point ---------------------------------------------------

def proc_state(pid: int) -> str | None:
    """The state letter of process ``pid`` in /proc (R, S, D, T, Z, ...), None if it is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None


def stop_group(proc: subprocess.Popen, timeout: float = 30.0) -> bool:
    """SIGSTOP the process group of ``proc`` (started with ``start_new_session=True``) and wait
    until ``proc`` is stopped. True once stopped; False if it had already exited (or exits)."""
    try:
        os.killpg(proc.pid, signal.SIGSTOP)
    except ProcessLookupError:
        return False
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        state = proc_state(proc.pid)
        if state in ("T", "t"):
            return True
        if state in (None, "Z", "X"):
            return False
        time.sleep(0.0005)
    raise TimeoutError(f"process {proc.pid} not stopped {timeout} s after SIGSTOP (state {state})")


def cont_group(proc: subprocess.Popen) -> None:
    """SIGCONT the process group of ``proc``."""
    try:
        os.killpg(proc.pid, signal.SIGCONT)
    except ProcessLookupError:
        pass


def freeze_when(proc: subprocess.Popen, when: Callable[[], bool], ok: Callable[[], bool] | None = None,
                timeout: float = 120.0, poll: float = 0.002) -> bool:
    """Poll ``when()`` while ``proc`` runs; once it holds, stop ``proc``'s process group (SIGSTOP)
    and check ``ok()`` (default: ``when()``) on the frozen state. Returns True with the group
    stopped at a point where ``ok()`` held -- nothing can change under the caller, who then
    sends its signal and SIGCONTs the group -- or False (group running or ended) if ``proc``
    ended or ``timeout`` passed first. If ``ok()`` fails, the group is continued and polling
    goes on."""
    ok = ok or when
    deadline = time.monotonic() + timeout
    while proc.poll() is None and time.monotonic() < deadline:
        if when():
            if not stop_group(proc):
                return False
            if ok():
                return True
            cont_group(proc)
        time.sleep(poll)
    return False


def kill_group(proc: subprocess.Popen, timeout: float = 60.0) -> int:
    """SIGKILL the process group of ``proc`` (a no-op if gone) and reap ``proc``; its return code."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    return proc.wait(timeout)
