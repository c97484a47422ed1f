"""The one-time notice of a cold Numba cache: the first `sweep map` or loop-nest `sweep run` in a fresh
environment compiles the loop-nest kernel (`costmodel.loopnest.kernel`, 10-20 s) and says so on
stderr instead of sitting silent; a warm cache says nothing (issue 23, defect 8)."""

from __future__ import annotations

import contextlib
import sys
from typing import Iterator

__all__ = ["COMPILE_NOTICE", "compile_notice"]

#: What `sweep map` and `sweep run` say on stderr while Numba compiles the loop-nest kernel (its
#: cache is cold).
COMPILE_NOTICE = ("compiling the cost model once (about 15 s); later runs load it from Numba's cache "
                  "(NUMBA_CACHE_DIR, else costmodel/loopnest/__pycache__)")
_noticed = False


@contextlib.contextmanager
def compile_notice(arch) -> Iterator[None]:
    """Say `COMPILE_NOTICE` on stderr (once per process) if, while the block runs, Numba starts
    compiling a function of the cost model (`costmodel.loopnest.kernel`, its first call on a
    loop-nest accelerator ``arch``). Numba fires its "numba:compile" event only when the on-disk
    cache holds no machine code for the function, never when it loads the cache, so a warm cache
    says nothing. Nothing is imported for other architectures or with numba absent or disabled
    (``DSE_SWEEP_NO_NUMBA``). Never raises of its own."""
    from costmodel.loopnest.arch import Accelerator
    if _noticed or not isinstance(arch, Accelerator):
        yield
        return
    from costmodel.loopnest.kernel import JIT, numba_disabled  # numba itself: 0.2 s
    if not JIT or numba_disabled():
        yield
        return
    from numba.core import event

    class Notice(event.Listener):
        def on_start(self, ev) -> None:
            global _noticed
            func = getattr(ev.data.get("dispatcher"), "py_func", None)
            if not _noticed and getattr(func, "__module__", "").startswith("costmodel."):
                _noticed = True
                print(COMPILE_NOTICE, file=sys.stderr, flush=True)

        def on_end(self, ev) -> None:
            pass

    with event.install_listener("numba:compile", Notice()):
        yield
