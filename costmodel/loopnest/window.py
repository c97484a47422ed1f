"""The input window of the loop-nest model: how many input rows, columns and elements a tile reads.

Shared by `costmodel.loopnest.reference` and the kernel (`costmodel.loopnest.kernel` compiles
`window_rows` and `window_share` as they are). An input row read by output row oy and
filter row fy is SY*oy + DY*fy; a tile spanning OY_t output rows and FY_t filter rows reads
`window_rows` of them (model version 3: the rows read, not the window's span), at most the rows
of real input the whole layer reads (`window_caps`, model version 4: zero padding is generated,
not stored or moved). A padded window dim (unrolling that does not divide the layer) enters as a
fractional extent (`window_share`).
"""

from __future__ import annotations

import functools
import math

__all__ = ["WINDOW", "window_steps", "window_caps", "window_rows", "window_share", "footprint", "NO_CAP"]

#: The cap of an axis without a known unpadded input size (`window_caps`): larger than any window.
NO_CAP = 1 << 40


def window_steps(layer) -> tuple[int, int, int, int]:
    """(sy, sx, dy, dx): each axis's stride and dilation divided by their greatest common divisor.

    Input row SY*oy + DY*fy = g*(sy*oy + dy*fy), so the rows touched by a tile are as many as the
    distinct values of sy*oy + dy*fy (`window_rows`). Every path of the model uses these."""
    gy, gx = math.gcd(layer.SY, layer.DY), math.gcd(layer.SX, layer.DX)
    return layer.SY // gy, layer.SX // gx, layer.DY // gy, layer.DX // gx


def window_caps(layer) -> tuple[int, int]:
    """(ry, rx): the rows and columns of real (unpadded) input the whole layer reads, the most any
    I tile holds or moves (model version 4): the distinct input rows SY*oy + DY*fy (padded
    coordinates) in [pb, pb + ``layer.in_rows``), pb = floor(PY) the begin pad (the zoo's and
    ONNX's PY is the mean of the begin and end pads; ONNX's SAME_UPPER and explicit pads put the
    extra row at the end), columns alike; `NO_CAP` where the input size is not given (the padded
    window, as before version 4). Source: the halo of a padded convolution is generated as zeros,
    not stored or read; ZigZag 3.9.1 clips every input extent likewise (``workload/layer_node.py``:
    ``LayerNode.calc_tensor_dim`` takes the min with ``calc_pr_dimension_size_total``), its cap the
    window minus both pads: one row fewer than ours where the stride leaves the end pad unread
    (ResNet-18 conv1, 7 x 7 / 2, pads 3 and 3 on 224 rows: window 229, ZigZag 223, ours 224, the
    rows really read). A layer that reads no real row (all its rows in the halo: its inputs are
    all zeros) is counted as reading one."""
    return (_real_read(layer.SY, layer.DY, layer.OY, layer.FY, int(math.floor(layer.PY)), layer.in_rows),
            _real_read(layer.SX, layer.DX, layer.OX, layer.FX, int(math.floor(layer.PX)), layer.in_cols))


@functools.lru_cache(maxsize=4096)
def _real_read(s: int, d: int, o: int, f: int, pb: int, rows: int | None) -> int:
    """Distinct s*i + d*j (i < o, j < f) in [pb, pb + rows); `NO_CAP` if rows is None."""
    if rows is None:
        return NO_CAP
    return max(1, len({s * i + d * j for i in range(o) for j in range(f)} & set(range(pb, pb + rows))))


def window_rows(s, d, o, f, r):
    """Input rows (or columns) touched by o output rows and f filter rows at reduced stride s and
    dilation d (`window_steps`), at most the cap r (`window_caps`: the real rows of the whole
    layer): min(s (o - 1) + d (f - 1) + 1, o f, r), the span of the window or,
    when the filter rows of successive outputs do not meet (s > d (f - 1) + 1 style gaps, e.g. a
    1x1 convolution at stride 2: o rows of 2o - 1), the rows actually read. Exact when s = 1 or
    d = 1 (every layer with stride and dilation dividing one another, all of the bundled
    networks); an upper bound otherwise. Integers give integers; floats (fractional extents of
    `window_share`) work alike (the same operations in every path). *Convention* (ZigZag's): a tile
    is clipped to the rows of the whole input, not to its own position: a tile at the input's edge
    whose window reaches into the padding is counted whole (the literal walk reads only its real
    rows: model >= walk; equal where each tile spans the layer's window or no tile meets the halo)."""
    span = s * (o - 1) + d * (f - 1) + 1
    read = o * f
    n = span if span <= read else read
    return n if n <= r else r


def footprint(op: str, ext: dict[str, int], layer) -> int:
    """Elements of operand ``op`` touched by loops with per-dim extents ``ext`` (missing = 1): W
    K C FY FX G, O B K OY OX G, I B C G x rows x columns (`window_rows`)."""
    g = ext.get
    if op == "W":
        return g("K", 1) * g("C", 1) * g("FY", 1) * g("FX", 1) * g("G", 1)
    if op == "O":
        return g("B", 1) * g("K", 1) * g("OY", 1) * g("OX", 1) * g("G", 1)
    sy, sx, dy, dx = window_steps(layer)
    ry, rx = window_caps(layer)
    iy = window_rows(sy, dy, g("OY", 1), g("FY", 1), ry)
    ix = window_rows(sx, dx, g("OX", 1), g("FX", 1), rx)
    return g("B", 1) * g("C", 1) * g("G", 1) * iy * ix


#: the dims of I's sliding window (its footprint is affine, not multiplicative, in them)
WINDOW = ("OY", "FY", "OX", "FX")


def window_share(sy, sx, dy, dx, ry, rx, oy, fy, ox, fx, aoy, afy, aox, afx):
    """(rows x columns of the fractional window) / (rows x columns of the padded window) of an I
    tile with extents oy, fy, ox, fx, the extents of padded window dims scaled by their real share
    a (1.0 for the others), at the reduced steps `window_steps` (sy, sx, dy, dx), both capped at
    `window_caps` (ry, rx): `_Nest.window_share`."""
    iy = window_rows(sy, dy, oy, fy, ry)
    ix = window_rows(sx, dx, ox, fx, rx)
    iyr = window_rows(sy, dy, oy * aoy, fy * afy, ry)
    ixr = window_rows(sx, dx, ox * aox, fx * afx, rx)
    return (iyr * ixr) / (iy * ix)
