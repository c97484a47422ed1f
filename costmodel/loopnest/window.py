"""The input window of the loop-nest model: how many input rows, columns and elements a tile reads.

Shared by `costmodel.loopnest.reference` and the kernel (`costmodel.loopnest.kernel` compiles
`window_rows` and `window_share` as they are). An input row read by output row oy and
filter row fy is SY*oy + DY*fy; a tile spanning OY_t output rows and FY_t filter rows reads
`window_rows` of them (model version 3: the rows read, not the window's span). A padded window dim
(unrolling that does not divide the layer) enters as a fractional extent (`window_share`).
"""

from __future__ import annotations

import math

__all__ = ["WINDOW", "window_steps", "window_rows", "window_share", "footprint"]


def window_steps(layer) -> tuple[int, int, int, int]:
    """(sy, sx, dy, dx): each axis's stride and dilation divided by their greatest common divisor.

    Input row SY*oy + DY*fy = g*(sy*oy + dy*fy), so the rows touched by a tile are as many as the
    distinct values of sy*oy + dy*fy (`window_rows`). Every path of the model uses these."""
    gy, gx = math.gcd(layer.SY, layer.DY), math.gcd(layer.SX, layer.DX)
    return layer.SY // gy, layer.SX // gx, layer.DY // gy, layer.DX // gx


def window_rows(s, d, o, f):
    """Input rows (or columns) touched by o output rows and f filter rows at reduced stride s and
    dilation d (`window_steps`): min(s (o - 1) + d (f - 1) + 1, o f), the span of the window or,
    when the filter rows of successive outputs do not meet (s > d (f - 1) + 1 style gaps, e.g. a
    1x1 convolution at stride 2: o rows of 2o - 1), the rows actually read. Exact when s = 1 or
    d = 1 (every layer with stride and dilation dividing one another, all of the bundled
    networks); an upper bound otherwise. Integers give integers; floats (fractional extents of
    `window_share`) work alike (the same operations in every path)."""
    span = s * (o - 1) + d * (f - 1) + 1
    read = o * f
    return span if span <= read else read


def footprint(op: str, ext: dict[str, int], layer) -> int:
    """Elements of operand ``op`` touched by loops with per-dim extents ``ext`` (missing = 1): W
    K C FY FX G, O B K OY OX G, I B C G x rows x columns (`window_rows`)."""
    g = ext.get
    if op == "W":
        return g("K", 1) * g("C", 1) * g("FY", 1) * g("FX", 1) * g("G", 1)
    if op == "O":
        return g("B", 1) * g("K", 1) * g("OY", 1) * g("OX", 1) * g("G", 1)
    sy, sx, dy, dx = window_steps(layer)
    iy = window_rows(sy, dy, g("OY", 1), g("FY", 1))
    ix = window_rows(sx, dx, g("OX", 1), g("FX", 1))
    return g("B", 1) * g("C", 1) * g("G", 1) * iy * ix


#: the dims of I's sliding window (its footprint is affine, not multiplicative, in them)
WINDOW = ("OY", "FY", "OX", "FX")


def window_share(sy, sx, dy, dx, oy, fy, ox, fx, aoy, afy, aox, afx):
    """(rows x columns of the fractional window) / (rows x columns of the padded window) of an I
    tile with extents oy, fy, ox, fx, the extents of padded window dims scaled by their real share
    a (1.0 for the others), at the reduced steps `window_steps` (sy, sx, dy, dx): `_Nest.window_share`."""
    iy = window_rows(sy, dy, oy, fy)
    ix = window_rows(sx, dx, ox, fx)
    iyr = window_rows(sy, dy, oy * aoy, fy * afy)
    ixr = window_rows(sx, dx, ox * aox, fx * afx)
    return (iyr * ixr) / (iy * ix)
