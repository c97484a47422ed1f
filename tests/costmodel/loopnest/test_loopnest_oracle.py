"""The reference evaluator against the literal walk of the hardware (tests/loopnest_oracle.py).

The walk counts what each PE touches (real indices, real rows and columns, real data only) and,
separately, the padded nest under the model's conventions (``*_p``). `check` asserts, count by
count, the relation the model's docstring documents between the two (its *Convention* notes):

* always: fills and read-backs per instance (the padded nest's loads) are equal; so are the tiles
  of W and O and the bits they take (O at partial-sum precision while a loop above the memory or
  an unfinished spatial reduction still adds to it: the walk's ``held_bits``), the I tiles but
  gapped or coprime ones, and the capacity verdict where no memory holds such an I tile;
* unpadded nest: every access count equals the walk's, word for word, except where the model
  follows a convention: an I tile whose output / filter indices are not consecutive (``gap``: the
  model counts the rows of the extents, the walk the rows read; both in the Cauchy-Davenport
  envelope), a stride and dilation whose reduced parts are both > 1 and where rows repeat
  (`window_rows` is an upper bound: model >= walk), overlapping I tiles of one multicast (sent
  whole: model >= walk), a read-back written into every instance of a reduction group and read
  back from each below (model >= walk); in elements the model equals the padded walk under its conventions unless an I tile is
  gapped or coprime;
* padded nest (unrolling that does not divide the layer), in elements (1-bit words, 1-bit data:
  no rounding): the model's average share equals the walk's count when every padded dim is
  relevant to the operand (and I's padded window dims slide at stride = dilation), is at most
  the walk's for W and for I without padded window dims (an idle slice at the end of a reuse run
  still costs the whole load), and at most the padded count everywhere;
* energy = MACs x (mac_pj + accumulator_pj) + the walk's accesses x their energies wherever every
  count is equal (else the model's own counts).
"""

import dataclasses
import math

import pytest
from hypothesis import given, settings, strategies as st

from costmodel.loopnest.arch import Accelerator, MemoryLevel
from costmodel.loopnest.reference import evaluate
from costmodel.loopnest.mapping import Mapping, SpatialMapping, TemporalMapping, prime_factors
from costmodel.workload import Layer
from loopnest_oracle import REL, walk

DIMS = ("B", "K", "C", "OY", "OX", "FY", "FX", "G")
#: (stride, dilation) pairs per axis: coprime ones with both > 1 (2, 3 and 3, 2) are the
#: documented upper-bound case of `window_rows`
PAIRS = [(1, 1), (1, 2), (2, 1), (2, 2), (1, 3), (3, 1), (2, 3), (3, 2), (3, 3)]


def _layer(draw, window):
    """A tiny layer (at most ~400 MACs so the walk stays fast); ``window``: OY 3..5 over FY 2..4
    at a coprime stride / dilation pair, so that filter rows of different outputs meet."""
    sizes = {}
    budget = 400
    if window:
        sizes["OY"] = draw(st.integers(3, 5))
        sizes["FY"] = draw(st.integers(2, 4))
        budget //= sizes["OY"] * sizes["FY"]
    for d in draw(st.permutations([d for d in DIMS if d not in sizes])):
        v = draw(st.integers(1, max(1, min(4, budget))))
        sizes[d] = v
        budget //= v
    sy, dy = draw(st.sampled_from([(2, 3), (3, 2)] if window else PAIRS))
    sx, dx = draw(st.sampled_from(PAIRS))
    return Layer("tiny", **sizes, SY=sy, SX=sx, DY=dy, DX=dx,
                 w_bits=draw(st.sampled_from([4, 8])), i_bits=draw(st.sampled_from([4, 8])),
                 o_bits=8, o_partial_bits=draw(st.sampled_from([16, 24])))


def _spatial(draw, array, layer):
    """Up to two loops per array dim, factors may exceed the layer (then clipped by `fit`), most
    of them on dims of the layer larger than 1 (so that unrollings pad and PEs' tiles have gaps)."""
    big = [d for d in DIMS if getattr(layer, d) > 1] or list(DIMS)
    spatial = {}
    for a, size in array.items():
        loops = []
        left = size
        for _ in range(draw(st.integers(0, 2))):
            if left < 2:
                break
            f = draw(st.integers(2, left))
            loops.append((draw(st.sampled_from(big if draw(st.integers(0, 3)) else DIMS)), f))
            left //= f
        if loops:
            spatial[a] = tuple(loops)
    return SpatialMapping(spatial)


def _memories(draw, dims):
    """Memories innermost first with shrinking scopes: per PE, a partial scope, none; then DRAM."""
    mid_scope = tuple(draw(st.lists(st.sampled_from(dims), unique=True, max_size=len(dims))))
    mems = []
    for i, scope in enumerate([tuple(dims), mid_scope, ()]):
        for j in range(draw(st.integers(0, 2))):
            ops = draw(st.lists(st.sampled_from(["W", "I", "O"]), unique=True, min_size=1, max_size=3))
            size = draw(st.sampled_from([None, None, 64, 256, 2048]))
            words = st.sampled_from([4, 8, 16, 24, 64])
            # per-operand ports in one multi-operand memory in two: each operand its own word and pJ
            per = (tuple((op, draw(words), 8.0, 8.0, 1.0 + i + k / 2, 2.0 + i + k) for k, op in enumerate(ops))
                   if len(ops) > 1 and draw(st.booleans()) else ())
            mems.append(MemoryLevel(f"m{i}{j}", size, tuple(ops), 1.0 + i, 2.0 + i, draw(words), 8.0, 8.0,
                                    draw(st.booleans()), scope, per))
    mems.append(MemoryLevel("dram", None, ("W", "I", "O"), 100.0, 100.0, draw(st.sampled_from([8, 64])),
                            16.0, 16.0, True, ()))
    return tuple(mems)


@st.composite
def tiny_case(draw, window=False):
    layer = _layer(draw, window)
    array = {f"D{i + 1}": draw(st.integers(1, 4)) for i in range(draw(st.integers(1, 2)))}
    sp = _spatial(draw, array, layer)
    prec = draw(st.sampled_from([{}, {"W": 8, "I": 8, "O": 16, "O_final": 8}]))
    acc_pj = draw(st.sampled_from([None, None, 0.0, 0.25]))
    mc = tuple(draw(st.lists(st.sampled_from(list(array)), unique=True, max_size=len(array))))
    arch = Accelerator("tiny_acc", array, 0.5, _memories(draw, list(array)), SpatialMapping({}), prec,
                       accumulator_pj=acc_pj, multicast=(("I", mc),) if mc else ())
    # temporal loops: prime factors of the padded temporal bounds, sometimes merged, shuffled
    tb = sp.temporal_bounds(layer)
    loops = [(d, p) for d in DIMS for p in prime_factors(tb[d])]
    if len(loops) >= 2 and draw(st.booleans()):
        i = draw(st.integers(0, len(loops) - 2))
        if loops[i][0] == loops[i + 1][0]:
            loops[i:i + 2] = [(loops[i][0], loops[i][1] * loops[i + 1][1])]
    if draw(st.booleans()):
        loops.insert(draw(st.integers(0, len(loops))), ("K", 1))  # a factor-1 loop is transparent
    loops = draw(st.permutations(loops))
    bounds = {}
    for op in ("W", "I", "O"):
        k = len(arch.levels(op))
        cuts = sorted(draw(st.lists(st.integers(0, len(loops)), min_size=k - 1, max_size=k - 1)))
        bounds[op] = tuple(cuts) + (len(loops),)
    return layer, arch, Mapping(sp, TemporalMapping(tuple(loops)), bounds)


def _padded(layer, arch, mapping):
    """{d: (D, P)} of the dims whose fitted spatial factor s does not divide the bound D."""
    sp = (mapping.spatial if mapping.spatial is not None else arch.spatial).fit(layer)
    out = {}
    for d in DIMS:
        s, D = sp.factor(d), getattr(layer, d)
        if s * -(-D // s) > D:
            out[d] = (D, s * -(-D // s))
    return out


def _coprime(layer, padded):
    """The axes ("Y", "X") where `window_rows` may exceed the rows read: stride s and dilation d,
    divided by their gcd, both > 1, more (padded) output rows than d and filter rows than s (else
    no two (output, filter) pairs read one row: s*oy + d*fy = s*oy' + d*fy' needs d | oy - oy')."""
    out = set()
    for ax, s, d, o, f in (("Y", layer.SY, layer.DY, "OY", "FY"), ("X", layer.SX, layer.DX, "OX", "FX")):
        g = math.gcd(s, d)
        po, pf = (padded.get(x, (0, getattr(layer, x)))[1] for x in (o, f))
        if s // g > 1 and d // g > 1 and po > d // g and pf > s // g:
            out.add(ax)
    return out


def _element_arch(arch):
    """The accelerator with 1-bit words, 1-bit data and no capacity: counts are elements moved."""
    mems = tuple(dataclasses.replace(m, word_bits=1, size_bits=None, per_operand=tuple((r[0], 1, *r[2:])
                                     for r in m.per_operand)) for m in arch.memories)
    return dataclasses.replace(arch, memories=mems, precisions={"W": 1, "I": 1, "O": 1, "O_final": 1})


def _relation(op, kind, flags, coprime):
    """The documented relation of the model's word count to the walk's on an unpadded nest: "==",
    ">=" (model >= walk), "<=" or "env" (a gapped I tile: only the envelope holds). O reads: "=="
    but where a read-back goes into one instance of a reduction group (">="); a lower level under an
    unfinished spatial reduction is read at its own partial precision, as the walk (model version 4;
    "<=" before)."""
    if op == "I":
        if ("gap_r" if kind == "reads" else "gap_w") in flags:
            return "env"
        return ">=" if coprime or (kind == "reads" and "overlap" in flags) else "=="
    if op == "O" and kind == "reads":
        return ">=" if "group_r" in flags else "=="
    if op == "O" and kind == "writes" and "group_w" in flags:
        return ">="
    return "=="


def _check_count(op, kind, model, model_e, r, padded, coprime, layer):
    """One access count of (op, memory): the model's words ``model`` and elements ``model_e``
    against the walk's record ``r``. Returns the relation asserted on words ("==" if exact)."""
    lit, lit_e, pad_e, flags = r[kind], r[kind + "_e"], r[kind + "_p"], r["flags"]
    odd = op == "I" and (coprime or ("gap_r" if kind == "reads" else "gap_w") in flags)
    assert lit_e <= pad_e
    tol = 1e-9 * max(1, pad_e)
    if not padded:
        if not odd:
            assert model_e == pad_e, "the model's conventions, walked"
        elif op == "I":
            lo, hi = r[f"env_lo_{kind[0]}"], r[f"env_hi_{kind[0]}"]
            assert lo <= model_e <= hi, "Cauchy-Davenport envelope"
            if "gap_r" not in flags and "gap_w" not in flags:
                assert model_e >= pad_e, "window_rows is an upper bound of the rows read"
        rel = _relation(op, kind, flags, coprime)
        assert {"==": model == lit, ">=": model >= lit, "<=": model <= lit}.get(rel, True), (rel, model, lit)
        return rel
    if not odd:
        assert model_e <= pad_e + tol, "the average share of the padded count"
    window_pad = [d for d in padded if d in ("OY", "OX", "FY", "FX")]
    slides = all((layer.SY == layer.DY) if d in ("OY", "FY") else (layer.SX == layer.DX) for d in window_pad)
    quiet = not (flags & {"gap_r", "gap_w", "overlap", "group_r", "group_w"}) and not coprime
    if quiet and all(d in REL[op] for d in padded) and (op != "I" or slides):
        assert model_e == pytest.approx(lit_e, rel=1e-9, abs=1e-9), "every padded dim relevant: exact share"
        return "pad =="
    if op == "W" or (op == "I" and quiet and not window_pad):
        assert model_e <= lit_e + tol, "idle slices inside a reuse run still load"
        return "pad <="
    return "pad"


def check(layer, arch, mapping):
    """Evaluate ``mapping`` with the model and walk it; assert every documented relation (module
    docstring). Returns the model's report."""
    rep = evaluate(layer, arch, mapping)
    assert rep.breakdown, rep.reason
    rep_e = evaluate(layer, _element_arch(arch), mapping)
    held, work = {}, {}
    walked = walk(layer, arch, mapping, held, work)
    padded = _padded(layer, arch, mapping)
    coprime = _coprime(layer, padded)
    rels = set()
    inexact = set()                               # memories holding a gapped / coprime I tile
    for op, levels in rep.breakdown["operands"].items():
        for i, (c, ce) in enumerate(zip(levels, rep_e.breakdown["operands"][op])):
            r = walked[(op, c["memory"])]
            if i < len(levels) - 1:
                assert (c["fills"], c["readbacks"]) == (r["fills"], r["readbacks"]), (op, c["memory"])
            for kind in ("reads", "writes"):
                rels.add(_check_count(op, kind, c[kind], ce[kind], r, padded, coprime, layer))
            assert r["new_e"] <= r["writes_e"]
            if op != "I" or not ("gap_w" in r["flags"] or coprime):
                assert c["tile_elems"] == r["tile"], (op, c["memory"])
                assert c["tile_bits"] == r["held_bits"], (op, c["memory"], "held precision")
            else:
                inexact.add(c["memory"])
                if "gap_w" not in r["flags"]:
                    assert c["tile_elems"] >= r["tile"], (op, c["memory"], "window_rows is an upper bound")
            assert r["held_bits"] <= r["work_bits"]
    _check_capacity(rep, arch, held, inexact)
    _check_energy(rep, arch, layer, walked if rels == {"=="} else None)
    return rep


def _check_capacity(rep, arch, held, inexact):
    """Valid iff every bounded memory holds its tiles, unless one holds an I tile whose size the
    model counts by convention (gapped, or an upper bound: coprime stride and dilation)."""
    bounded = [m for m in arch.memories if m.size_bits is not None]
    if not any(m.name in inexact for m in bounded):
        assert rep.valid == all(held.get(m.name, 0) <= m.size_bits for m in bounded), (rep.reason, held)
    if not rep.valid:
        assert rep.energy_pj == math.inf and "capacity exceeded" in rep.reason


def _check_energy(rep, arch, layer, walked):
    """Energy = MACs x (mac_pj + accumulator_pj) + every access x its energy: of the walk's counts
    when all of them equal the model's, else of the model's own counts."""
    if not rep.valid:
        return
    e = layer.macs * (arch.mac_pj + (arch.accumulator_pj or 0.0))
    for op, levels in rep.breakdown["operands"].items():
        for c in levels:
            m = arch.memory(c["memory"])
            src = walked[(op, c["memory"])] if walked is not None else c
            e += src["reads"] * m.port(op).read_pj + src["writes"] * m.port(op).write_pj
    assert rep.energy_pj == pytest.approx(e, rel=1e-12)
    assert rep.latency_cycles >= rep.breakdown["compute_cycles"]


@settings(max_examples=1000, derandomize=True, deadline=None)
@given(tiny_case())
def test_access_counts_follow_the_literal_walk(case):
    check(*case)


@settings(max_examples=200, derandomize=True, deadline=None)
@given(tiny_case(window=True))
def test_coprime_stride_and_dilation_bound_the_rows_read(case):
    """SY, DY = 2, 3 or 3, 2 over OY 3..5 and FY 2..4: the filter rows of different outputs meet
    (SY*oy + DY*fy repeats) and some rows are skipped, so `window_rows` = min(span, o*f) is an
    upper bound of the distinct rows read: `check` asserts model >= literal for every I count and
    tile (and equality on the X axis drawn with the other pairs)."""
    layer, arch, mapping = case
    assert math.gcd(layer.SY, layer.DY) == 1 and min(layer.SY, layer.DY) > 1
    check(layer, arch, mapping)


def _regs_arch(spatial, n_pe=2, o_word=16, o_size=None):
    """Per-PE registers rW, rI, rO (8-bit words; rO ``o_word`` bits, ``o_size`` bits) over
    ``n_pe`` PEs along D1, then DRAM (8-bit words); W, I 8 bits, partial sums 16, outputs 8."""
    mems = (MemoryLevel("rW", None, ("W",), 1.0, 1.0, 8, 8, 8, False, ("D1",)),
            MemoryLevel("rI", None, ("I",), 1.0, 1.0, 8, 8, 8, False, ("D1",)),
            MemoryLevel("rO", o_size, ("O",), 1.0, 1.0, o_word, 16, 16, False, ("D1",)),
            MemoryLevel("dram", None, ("W", "I", "O"), 10.0, 10.0, 8, 8, 8, True, ()))
    return Accelerator("regs", {"D1": n_pe}, 1.0, mems, spatial, {"W": 8, "I": 8, "O": 16, "O_final": 8})


def _by(rep):
    return {(c["operand"], c["memory"]): c for op in rep.breakdown["operands"].values() for c in op}


def test_hand_a_pe_with_unrolled_output_rows_reads_five_rows_not_four():
    """OY=4, FY=3, stride 1 (K=C=OX=FX=1): the input has 4 - 1 + 3 = 6 rows. OY 2 is unrolled over
    the 2 PEs of D1; OY 2 and FY 3 are temporal, all in the per-PE registers (loops OY 2 | FY 3).

    The spatial OY is the lowest digit of the output row: PE p computes oy = p + 2 * t, t = 0, 1,
    i.e. PE0 rows 0 and 2, PE1 rows 1 and 3. PE0 reads iy = oy + fy in {0, 1, 2} + {2, 3, 4} =
    {0, 1, 2, 3, 4}: 5 rows; PE1 {1, ..., 5}: 5 rows. The model counts the rows of the tile's
    extents as if its output rows were consecutive (ZigZag's tile size from loop sizes):
    window_rows(1, 1, 2, 3) = min(1 + 2 + 1, 2 x 3) = 4.

    * rI tile: walk 5 elements, model 4 (both in the envelope [2 + 3 - 1, 2 x 3] = [4, 6]).
    * rI writes: walk 2 PEs x 5 = 10 words; model 2 x 4 = 8.
    * DRAM reads: walk: the union of the two PEs' rows {0, ..., 5} = 6 (the whole input, each row
      once); sent per PE tile (the model's multicast of distinct tiles) 2 x 5 = 10; model 2 x 4 = 8.
    * rI reads (one input per MAC, the OY loop innermost changes it every cycle): 2 x 6 = 12, equal."""
    layer = Layer("gap", K=1, C=1, OY=4, FY=3)
    sp = SpatialMapping({"D1": (("OY", 2),)})
    arch = _regs_arch(sp)
    m = Mapping(sp, TemporalMapping((("OY", 2), ("FY", 3))), {"W": (2, 2), "I": (2, 2), "O": (2, 2)})
    by = _by(check(layer, arch, m))
    lit = walk(layer, arch, m)
    ri, dram = lit[("I", "rI")], lit[("I", "dram")]
    assert (ri["tile"], by[("I", "rI")]["tile_elems"]) == (5, 4)
    assert (ri["writes"], by[("I", "rI")]["writes"]) == (10, 8)
    assert (dram["reads"], dram["reads_p"], by[("I", "dram")]["reads"]) == (6, 10, 8)
    assert ri["reads"] == by[("I", "rI")]["reads"] == 12
    assert "gap_w" in ri["flags"] and "gap_r" in dram["flags"]
    # The other side: DY=2, FY=2 (OY=4, FY=2: 3 + 2 x 1 + 1 = 6 input rows). PE0 reads iy = oy + 2 fy
    # in {0, 2} + {0, 2} = {0, 2, 4}: 3 rows; the model min(1 + 2 x 1 + 1, 2 x 2) = 4.
    dil = Layer("gap2", K=1, C=1, OY=4, FY=2, DY=2)
    m2 = Mapping(sp, TemporalMapping((("OY", 2), ("FY", 2))), {"W": (2, 2), "I": (2, 2), "O": (2, 2)})
    by2 = _by(check(dil, arch, m2))
    assert (walk(dil, arch, m2)[("I", "rI")]["tile"], by2[("I", "rI")]["tile_elems"]) == (3, 4)


def test_hand_coprime_stride_and_dilation_window_rows_is_an_upper_bound():
    """SY=2, DY=3 (coprime, both > 1), OY=4, FY=3 (K=C=OX=FX=1), one PE, everything in rI.

    Rows read iy = 2 oy + 3 fy: fy 0: 0 2 4 6; fy 1: 3 5 7 9; fy 2: 6 8 10 12 -> {0, 2, 3, 4, 5,
    6, 7, 8, 9, 10, 12} = 11 distinct (6 is read twice, 1 and 11 never). window_rows(2, 3, 4, 3) =
    min(2 x 3 + 3 x 2 + 1, 4 x 3) = min(13, 12) = 12 >= 11: an upper bound. With OY=3 (o = 3 <=
    d = 3) no row repeats: {0, 2, 4, 3, 5, 7, 6, 8, 10} = 9 = min(2 x 2 + 3 x 2 + 1, 9): equal."""
    sp = SpatialMapping({"D1": (("K", 1),)})
    arch = _regs_arch(sp, n_pe=1)
    for oy, rows, model_rows in ((4, 11, 12), (3, 9, 9)):
        layer = Layer("cop", K=1, C=1, OY=oy, FY=3, SY=2, DY=3)
        loops = (("OY", oy), ("FY", 3)) if oy != 4 else (("OY", 2), ("OY", 2), ("FY", 3))
        n = len(loops)
        m = Mapping(sp, TemporalMapping(loops), {"W": (n, n), "I": (n, n), "O": (n, n)})
        by = _by(check(layer, arch, m))
        lit = walk(layer, arch, m)
        assert (lit[("I", "rI")]["tile"], by[("I", "rI")]["tile_elems"]) == (rows, model_rows)
        assert (lit[("I", "dram")]["reads"], by[("I", "dram")]["reads"]) == (rows, model_rows)


def test_hand_partial_sums_held_under_an_unfinished_spatial_reduction():
    """K=1, C=2, OX=2: C 2 unrolled over the 2 PEs of D1, OX 2 temporal in the per-PE rO (8-bit
    words). No O-irrelevant temporal loop lies above rO, yet each PE's rO holds the sum of its own
    channel only: the two PEs' values are added on the way to DRAM, so what rO holds is a partial
    sum, held at partial-sum precision: 2 outputs x 16 bits = 32 bits (model and walk; before
    issue 20 the walk said 2 x 8 = 16, as no partial sum ever left rO). In 24 bits it does not fit.

    The write-up: DRAM receives the reduced sums, final: 2 x 8 bits = 2 words. Each PE reads its
    own 2 partial sums out of rO: 2 x 16 bits = 4 words, 8 for the two PEs (the walk, and the model
    since version 4, which reads a level at the precision it holds; before: at the final precision
    of the write, 2 x 8 bits = 2 words per PE, 4)."""
    layer = Layer("red", K=1, C=2, OX=2)
    sp = SpatialMapping({"D1": (("C", 2),)})
    m = Mapping(sp, TemporalMapping((("OX", 2),)), {"W": (1, 1), "I": (1, 1), "O": (1, 1)})
    held = {}
    by = _by(check(layer, _regs_arch(sp, o_word=8), m))
    lit = walk(layer, _regs_arch(sp, o_word=8), m, held)
    assert by[("O", "rO")]["tile_bits"] == lit[("O", "rO")]["held_bits"] == 32 == held["rO"]
    assert by[("O", "dram")]["writes"] == lit[("O", "dram")]["writes"] == 2
    assert (lit[("O", "rO")]["reads"], by[("O", "rO")]["reads"]) == (8, 8)
    small = _regs_arch(sp, o_word=8, o_size=24)
    assert not check(layer, small, m).valid


def test_hand_a_level_that_completes_the_reduction_holds_final_outputs():
    """K=1, C=4, one PE, loops C 4 all in rO, no accumulator (ZigZag's rule, the model's): no
    O-irrelevant loop lies above rO and no spatial reduction is pending, so its tile counts at
    final precision: 1 x 8 bits. Yet without an accumulator the MAC writes its partial sum into rO
    after each of the first 3 MACs: the walk's ``work_bits`` (every value written in) is 16. An
    accumulator keeps the sum in the MAC: only the final value reaches rO (work_bits 8)."""
    layer = Layer("acc", K=1, C=4)
    sp = SpatialMapping({"D1": (("K", 1),)})
    m = Mapping(sp, TemporalMapping((("C", 4),)), {"W": (1, 1), "I": (1, 1), "O": (1, 1)})
    for acc, work in ((None, 16), (0.1, 8)):
        arch = dataclasses.replace(_regs_arch(sp, n_pe=1), accumulator_pj=acc)
        by = _by(check(layer, arch, m))
        lit = walk(layer, arch, m)
        assert by[("O", "rO")]["tile_bits"] == lit[("O", "rO")]["held_bits"] == 8
        assert lit[("O", "rO")]["work_bits"] == work


def test_hand_read_back_into_one_instance_of_a_reduction_group():
    """K=1, C=4, OX=2: C 2 over the 2 PEs of D1; loops OX 2 | C 2, rO (per PE, 16-bit words)
    holding nothing (boundary 0: one partial sum per MAC, no accumulator). rO visits: 4 per PE
    (every MAC: OX, relevant, is innermost), 2 first (one per output), then 2 preceded by a
    read-back of the partial sum from DRAM (16 bits = 2 DRAM words; the group's distinct data,
    read once for both PEs: 2 x 2 = 4 DRAM reads, walk and model). The two PEs are summed on the
    way up, so the read-back enters one of them (added twice it would be wrong): rO writes of
    read-backs 2 in the walk, 2 PEs x 2 = 4 in the model. The MAC reads its partial sum back from
    rO where rO holds one: the walk 2 (the PE that got it), the model 2 per PE = 4. rO writes from
    the MACs: 2 PEs x 4 = 8 in both: rO writes walk 8 + 2 = 10, model 8 + 4 = 12; rO reads walk
    2 + 8 (each MAC's partial sum written up), model 4 + 8."""
    layer = Layer("grp", K=1, C=4, OX=2)
    sp = SpatialMapping({"D1": (("C", 2),)})
    m = Mapping(sp, TemporalMapping((("OX", 2), ("C", 2))), {"W": (0, 2), "I": (0, 2), "O": (0, 2)})
    arch = _regs_arch(sp)
    by = _by(check(layer, arch, m))
    lit = walk(layer, arch, m)
    assert (by[("O", "rO")]["fills"], by[("O", "rO")]["readbacks"]) == (4, 2)
    assert by[("O", "dram")]["reads"] == lit[("O", "dram")]["reads"] == 4
    assert (lit[("O", "rO")]["writes"], by[("O", "rO")]["writes"]) == (10, 12)
    assert (lit[("O", "rO")]["reads"], by[("O", "rO")]["reads"]) == (10, 12)
    assert {"group_r", "group_w"} <= lit[("O", "rO")]["flags"]
