"""Borrowed array views for the compiled kernel: the same memory, no reference counting.

Numba counts references to every array a compiled function holds: each array argument of an
inlined helper, each view, is an atomic increment and decrement of its memory's count (calls to
``NRT_incref`` / ``NRT_decref``) that LLVM's reference-count pruning removes only within simple
control flow. The loop-nest kernel passes a dozen arrays to each of its helpers, inside loops:
sampled with ``perf record -e cpu-clock`` on scripts/bench_costmodel.py's LOMA case, 64% of the
process's time was in those two functions. A view whose meminfo is NULL carries no count (both
functions return at once on NULL), so `borrow`, applied to every array at the kernel's entry, makes
all the views below it free of counting.

Safe where the view does not outlive its source: the kernel's caller holds every array for the
duration of the call, and the kernel returns a number, never an array.
"""

from __future__ import annotations

from typing import Callable

__all__ = ["borrow_intrinsic"]


def borrow_intrinsic() -> Callable:
    """A Numba intrinsic ``borrow(a)``: a view of array ``a`` (same data, shape, strides, dtype,
    layout) with a NULL meminfo and parent, usable only in compiled code. Imports numba (raises
    ImportError without it)."""
    from numba.core import cgutils
    from numba.core.extending import intrinsic

    @intrinsic
    def borrow(typingctx, arr):
        def codegen(context, builder, signature, args):
            aryty = signature.args[0]
            src = context.make_array(aryty)(context, builder, value=args[0])
            view = context.make_array(aryty)(context, builder)
            for name in ("nitems", "itemsize", "data", "shape", "strides"):
                setattr(view, name, getattr(src, name))
            view.meminfo = cgutils.get_null_value(view.meminfo.type)
            view.parent = cgutils.get_null_value(view.parent.type)
            return view._getvalue()
        return arr(arr), codegen

    return borrow
