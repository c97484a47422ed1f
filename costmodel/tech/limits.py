"""What a process can build: the clocks and array sizes an accelerator description may give
(checked where an accelerator TOML is read, `costmodel.loopnest.arch`, and where a grid varies
them, `costmodel.loopnest.template`). Values outside are refused with the reason, not costed.

Errors: `check_clock` and `check_array_dim` raise ValueError naming the value and the range.
"""

from __future__ import annotations

__all__ = ["CLOCK_MHZ_RANGE", "ARRAY_DIM_MAX", "check_clock", "check_array_dim"]

#: Clocks a digital accelerator is built at, MHz: 10 (microcontroller-class) to 3,000; the fastest
#: shipped accelerators run 0.7-2 GHz (TPU v4 1,050 MHz, Jouppi et al., ISCA 2023; A100 1,410 MHz and
#: H100 SXM5 1,980 MHz boost, NVIDIA's datasheets).
CLOCK_MHZ_RANGE: tuple[float, float] = (10.0, 3000.0)
#: PEs along one array dim, at most: the largest built systolic arrays are 256 per side (TPU v1-v4);
#: 4,096 x 4,096 would be 16.8 M MACs on one die.
ARRAY_DIM_MAX: int = 4096


def check_clock(mhz: float) -> None:
    """Raises ValueError if ``mhz`` is outside `CLOCK_MHZ_RANGE` (with the reason)."""
    lo, hi = CLOCK_MHZ_RANGE
    if not lo <= mhz <= hi:
        raise ValueError(f"clock {mhz:g} MHz is outside {lo:g}..{hi:g} MHz, the clocks digital "
                         "accelerators are built at (TPU v4 1,050 MHz, H100 1,980 MHz)")


def check_array_dim(name: str, size: int) -> None:
    """Raises ValueError if array dim ``name`` has more than `ARRAY_DIM_MAX` PEs."""
    if size > ARRAY_DIM_MAX:
        raise ValueError(f"array dim {name} of {size} PEs is above {ARRAY_DIM_MAX}, beyond any "
                         "buildable array (the largest built are 256 per side, TPU v1-v4)")
