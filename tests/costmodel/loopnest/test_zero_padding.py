"""Zero padding (model version 4): an input tile moves only the real input, not the halo.

The reference model clips an I tile's rows and columns to the real rows and columns the whole
layer reads (`costmodel.loopnest.window.window_caps`, ZigZag's convention); the literal walk
(tests/loopnest_oracle.py) reads, per tile, only the rows of the unpadded input. Checked here: a
3 x 3 "same" convolution worked by hand (both counts and the capacity verdict), the model equal
to the walk of its convention (``*_c``) and never below the literal walk on drawn nests, W and O
untouched by the halo, and the importers' input sizes.
"""

from __future__ import annotations

import dataclasses
import math

from hypothesis import assume, given, settings, strategies as st

from costmodel.loopnest.mapping import Mapping, SpatialMapping, TemporalMapping
from costmodel.loopnest.reference import evaluate
from costmodel.loopnest.window import NO_CAP, window_caps
from costmodel.workload import Layer
from costmodel.zoo import load_network
from loopnest_oracle import walk
from test_loopnest_oracle import _coprime, _element_arch, _padded, _regs_arch, tiny_case

SAME = Layer("same3x3", K=1, C=1, OY=4, OX=4, FY=3, FX=3, PY=1, PX=1, in_rows=4, in_cols=4)
LOOPS = (("FX", 3), ("FY", 3), ("OX", 4), ("OY", 4))


def _one_pe(i_cut: int, i_bits: int | None = None):
    """One PE with registers rW, rI, rO over DRAM (8-bit words, 8-bit inputs); rI of ``i_bits``
    bits; rW and rO hold every loop, rI the innermost ``i_cut`` loops of `LOOPS`."""
    arch = _regs_arch(SpatialMapping({}), n_pe=1)
    if i_bits is not None:
        mems = tuple(dataclasses.replace(m, size_bits=i_bits) if m.name == "rI" else m for m in arch.memories)
        arch = dataclasses.replace(arch, memories=mems)
    return arch, Mapping(SpatialMapping({}), TemporalMapping(LOOPS), {"W": (4, 4), "I": (i_cut, 4), "O": (4, 4)})


def _i(rep, memory):
    return next(c for c in rep.breakdown["operands"]["I"] if c["memory"] == memory)


def test_hand_same_convolution_moves_the_real_input_only():
    """4 x 4 input, 3 x 3 filter, pad 1: the padded window is 6 x 6 = 36 inputs, the input 16.
    rI holding every loop: DRAM reads 16 inputs once (version 3: 36). rI holding one 3 x 3 window
    per output (16 tiles): the model counts each clipped to the 4 x 4 input, 16 x 9 = 144; the
    literal walk reads each window's real rows x columns, (2 + 3 + 3 + 2)^2 = 100 (corner windows
    2 x 2, edge windows 2 x 3, inner ones 3 x 3)."""
    assert window_caps(SAME) == (4, 4)
    arch, whole = _one_pe(4)
    rep = evaluate(SAME, arch, whole)
    assert (_i(rep, "dram")["reads"], _i(rep, "rI")["writes"], _i(rep, "rI")["tile_elems"]) == (16, 16, 16)
    unknown = SAME.with_(in_rows=None, in_cols=None)
    assert _i(evaluate(unknown, arch, whole), "dram")["reads"] == 36
    arch, per_output = _one_pe(2)
    rep = evaluate(SAME, arch, per_output)
    assert (_i(rep, "dram")["reads"], _i(rep, "rI")["tile_elems"]) == (144, 9)
    lit = walk(SAME, arch, per_output)
    assert lit[("I", "dram")]["reads"] == 100 and lit[("I", "rI")]["writes"] == 100
    assert lit[("I", "dram")]["reads_c"] == 144     # the model's convention, walked
    assert rep.breakdown["macs"] == 144              # the MACs on generated zeros still run


def test_hand_capacity_counts_the_real_input():
    """rI of exactly 16 x 8 bits holds the whole 4 x 4 input (valid); the padded 6 x 6 window
    (no input size known) needs 288 bits (invalid); 127 bits do not hold the real input."""
    arch, whole = _one_pe(4, i_bits=128)
    assert evaluate(SAME, arch, whole).valid
    assert not evaluate(SAME.with_(in_rows=None, in_cols=None), arch, whole).valid
    arch, whole = _one_pe(4, i_bits=127)
    rep = evaluate(SAME, arch, whole)
    assert not rep.valid and "capacity exceeded at rI" in rep.reason


def test_caps_by_hand():
    """ResNet-18 conv1 (7 x 7 / 2, pads 3 and 3, 224 rows): window 229, min(229 - 3, 224) = 224
    (the stride leaves the end pad's last row unread); an unpadded layer reads its window; a
    layer without an input size is not capped."""
    conv1 = next(layer for layer in load_network("resnet18").layers if layer.name == "conv1")
    assert (conv1.IY, conv1.in_rows, window_caps(conv1)) == (229, 224, (224, 224))
    assert window_caps(Layer("v", K=1, C=1, OY=5, OX=5, FY=3, FX=3, in_rows=7, in_cols=8)) == (7, 7)
    assert window_caps(Layer("n", K=1, C=1, OY=5, OX=5, FY=3, FX=3, PY=1, PX=1)) == (NO_CAP, NO_CAP)


@st.composite
def _padded_case(draw):
    """`tiny_case` with zero padding drawn on both axes (total pad 0 .. 2 (F - 1), the mean as
    PY; the input the pads leave, plus up to stride - 1 rows the stride does not reach), an
    unrolling that divides the layer and no multicast (the unpadded-nest relations)."""
    layer, arch, mapping = draw(tiny_case())
    assume(not _padded(layer, arch, mapping))
    kw = {}
    for pad, rows, window, s in (("PY", "in_rows", layer.IY, layer.SY), ("PX", "in_cols", layer.IX, layer.SX)):
        total = draw(st.integers(0, window - 1))
        kw[pad] = total // 2 if total % 2 == 0 else total / 2
        kw[rows] = window - total + draw(st.integers(0, s - 1))
    padded = layer.with_(**kw)
    assume(min(_reads_real(padded, "Y"), _reads_real(padded, "X")) > 0)   # else every input is a zero
    return padded, dataclasses.replace(arch, multicast=()), mapping


def _reads_real(layer, axis):
    """Real rows (columns) the layer reads, by brute force over its output and filter indices."""
    s, d, o, f, p, n = ((layer.SY, layer.DY, layer.OY, layer.FY, layer.PY, layer.in_rows) if axis == "Y" else
                        (layer.SX, layer.DX, layer.OX, layer.FX, layer.PX, layer.in_cols))
    pb = math.floor(p)
    return len({s * i + d * j for i in range(o) for j in range(f) if pb <= s * i + d * j < pb + n})


@settings(max_examples=300, derandomize=True, deadline=None)
@given(_padded_case())
def test_drawn_nests_walk_the_convention_and_bound_the_literal_count(case):
    """Per (I, memory), in elements: the model equals the walk of its convention (each padded-nest
    tile clipped to the real rows and columns the layer reads) wherever the unpadded-nest relation
    is exact (no gapped tile, no coprime stride and dilation), and is never below the literal walk
    (the real rows of each tile). W and O: the same counts as without the halo."""
    layer, arch, mapping = case
    rep = evaluate(layer, _element_arch(arch), mapping)
    bare = evaluate(layer.with_(PY=0, PX=0, in_rows=None, in_cols=None), _element_arch(arch), mapping)
    walked = walk(layer, _element_arch(arch), mapping)
    coprime = _coprime(layer, {})
    for op, levels in rep.breakdown["operands"].items():
        for c, b in zip(levels, bare.breakdown["operands"][op]):
            if op != "I":
                assert (c["reads"], c["writes"]) == (b["reads"], b["writes"]), (op, c["memory"])
                continue
            r = walked[("I", c["memory"])]
            for kind, gap in (("reads", "gap_r"), ("writes", "gap_w")):
                if gap in r["flags"] or coprime:
                    continue
                assert c[kind] == r[kind + "_c"], (kind, c["memory"], "the convention, walked")
                assert c[kind] >= r[kind + "_e"] - 1e-9, (kind, c["memory"], "model >= literal")
                assert c[kind] <= b[kind], (kind, c["memory"], "the halo only removes inputs")


def test_importers_give_the_unpadded_input():
    """Zoo files carry in_rows / in_cols for every padded convolution: the input its pads and
    stride imply (OY x SY for the strided 'same' ones), the floor rule holding."""
    for name in ("resnet18", "mobilenet_v2", "vgg16", "googlenet_v1", "yolov2", "deepbench_face"):
        for layer in load_network(name).layers:
            if not (layer.PY or layer.PX):
                continue
            for o, f, s, d, p, h in ((layer.OY, layer.FY, layer.SY, layer.DY, layer.PY, layer.in_rows),
                                     (layer.OX, layer.FX, layer.SX, layer.DX, layer.PX, layer.in_cols)):
                assert h is not None, (name, layer.name)
                assert (h + int(2 * p) - d * (f - 1) - 1) // s + 1 == o, (name, layer.name, h)
    assert math.prod(window_caps(load_network("resnet18").layers[1])) == 56 * 56
