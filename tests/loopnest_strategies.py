"""Hypothesis strategies that draw whole loop-nest problems, and the kernel-vs-reference check.

Used by ``tests/costmodel/loopnest/test_kernel_fuzz.py`` (fixed seed, CI) and
``scripts/fuzz_costmodel.py`` (random seeds, long runs). One drawn `Case` is a layer, an
accelerator, a spatial unrolling, an optional LPF multiset (``factors``), ``even`` and a few loop
orderings; `check_case` evaluates every ordering with `OrderingEvaluator` (one backend) and with
the reference, ``reference.evaluate(layer, arch, allocate(layer, arch, spatial, ev.loops(o), even))``,
and returns every disagreement (validity, energy, latency, EDP, boundaries, each access count and
each memory's stall).

What is drawn, and why:

* **Layers** (`layers`): one of six kinds, so that each code path of the window and of the
  relevance rules is exercised: a dense conv (FY, FX > 1, strides 1-3 and dilations 1-3 on each
  axis, including coprime stride/dilation pairs whose window is an upper bound), a 1x1 conv (the
  rows-read rule at stride > 1), a grouped conv (G > 1 with K, C > 1), a depthwise conv (G > 1 and
  K = C = 1 per group, as `Layer` models it), a fully-connected layer (OY = OX = FY = FX = 1, batch
  in B) and a batched conv (B > 1). Dims are drawn under a budget of 1e9 MACs, at least 1e3: 2-21
  LPFs (enough for the allocation to choose), access counts up to ~3e10 (beyond int32, within
  int64); precisions 4-16 bits (W, I, final O) and 16-32 bits (partial sums). In one case in 20
  instead: K, C, OX of 10-16 that the array unrolls entirely, or all but one OX loop (0 or 1
  temporal loop).
* **Accelerators** (`accelerators`): 1-3 array dims of sizes 1..16; each operand gets 2-6 memory
  levels. Memories are drawn innermost first, each serving a random non-empty subset of the
  operands that still need levels, so memories shared by 2 or 3 operands and unshared ones both
  occur, and the top memory is shared (one DRAM) or split (per-operand tops). ``private_to`` is
  per PE (all array dims), none, or any subset allowed by the rule of `Accelerator` (an upper
  level of an operand is private to a subset of the dims of the level below). Sizes (`_sizes`) are
  unbounded (DRAM-like, always double-buffered; most tops) or bounded: in three accelerators in
  four 1-64 times what the levels below need (a realistic hierarchy), else anything from half the
  smallest tile to twice the whole tensors, so that tiles fit twice (double buffering), once
  (single buffering, stall windows C // T) or not at all (LOMA raises MappingError: an invalid
  ordering; about a third of the orderings). Word widths 1-256 bits including widths that
  precisions do not divide (the ceil of a transfer); read and write bandwidths independent, as
  multiples of the word or arbitrary integers, ports shared or separate; pJ as ints or floats (the
  kernel keeps int pJ exact); an ``accumulator_pj`` (0 or positive) or none; precisions given for
  none, some or all of W, I, O, O_final. Per-operand ports (`_per_operand`): in one memory in
  four that serves several operands, each operand's own word, bandwidths and pJ (the
  reference's "Per-operand ports"; gemm_l1_l3's l1 in ZigZag), some keys per operand, others
  shared. Multicast of I (one accelerator in three): over any non-empty set of its array dims
  (the reference's "Multicast of inputs"; Eyeriss's diagonal input reuse).
* **Spatial unrollings** (`spatials`): the accelerator's default unrolling, passed to the
  evaluator explicitly or as None: 0-3 loops per array dim, any loop dim (the same dim may be
  unrolled on several array dims), fan-out within the array dim's size; factors may exceed the
  layer (`SpatialMapping.fit` clips), equal a whole dim or not divide it (padding, the real-share
  scaling and I's fractional window).
* **Orderings** (`_perms`): permutations of the positions of the evaluator's loop multiset
  ``np.repeat(np.arange(len(ev.types)), ev.counts)`` (applied in `Case.orderings`, so the strategy
  does not need an evaluator), 1-6 per case, each at random or a local move of the one before (the
  kernel reuses a prefix shared with the previous ordering); ``even`` True or False; ``factors``
  None (the prime factors), LOMA's ``lpf_limit`` merge (`mappers.loop_order.lpf.merge_lpfs`) or
  random merges of two loops of one dim (composite LPFs, repeated types).
* **Boundaries** (`_tighten`): in a third of the cases one memory is resized to exactly once or
  twice the tiles it holds under the first ordering, so that ``tiles == size`` (capacity) and
  ``2 x tiles == size`` (double buffering) occur.
"""

from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass, field

import numpy as np
from hypothesis import strategies as st

from costmodel.loopnest import ordering as _ordering
from costmodel.loopnest.allocation import allocate
from costmodel.loopnest.arch import Accelerator, MemoryLevel
from costmodel.loopnest.mapping import OPERANDS, RELEVANT, MappingError, SpatialMapping, prime_factors
from costmodel.loopnest.ordering import OrderingEvaluator
from costmodel.loopnest.reference import evaluate
from costmodel.loopnest.window import footprint, window_caps
from costmodel.workload import LOOP_DIMS, Layer
from mappers.loop_order.lpf import merge_lpfs

__all__ = ["BACKENDS", "available_backends", "Case", "layers", "accelerators", "spatials", "cases", "check_case",
           "case_to_dict", "case_from_dict", "features", "REL"]

#: The backends of `OrderingEvaluator`: the module's ``BACKENDS`` if it declares one (after the
#: kernel rewrite: "numba", "python"), else the two of today's evaluator.
BACKENDS: tuple[str, ...] = tuple(getattr(_ordering, "BACKENDS", ("numba", "numpy")))

def available_backends() -> tuple[str, ...]:
    """The backends of `BACKENDS` this process can run: "numba" needs numba installed and
    ``DSE_SWEEP_NO_NUMBA`` unset (the evaluator raises ValueError otherwise)."""
    from costmodel.loopnest.arch import load_accelerator
    out = []
    for b in BACKENDS:
        try:
            OrderingEvaluator(Layer("probe", K=2, C=2), load_accelerator("eyeriss_like"), backend=b)
        except ValueError:
            continue
        out.append(b)
    return tuple(out)


#: Relative tolerance of float comparisons (energy, latency, EDP, access counts, stalls).
REL = 1e-12

MAX_MACS = 10 ** 9
MIN_MACS = 10 ** 3
_KINDS = ("conv", "1x1", "grouped", "depthwise", "fc", "batched")


# ---------------------------------------------------------------------------------------- layers
def _dim(draw, budget: list[int], hi: int, lo: int = 1) -> int:
    """One loop bound in [lo, hi] that keeps the running MAC product under ``budget[0]``."""
    top = max(lo, min(hi, budget[0]))
    v = draw(st.integers(lo, top))
    budget[0] = max(1, budget[0] // v)
    return v


@st.composite
def layers(draw, kind: str | None = None) -> Layer:
    """A layer of one of the kinds of the module docstring, MACs in [1e3, 1e9]: each dim is drawn
    within what is left of the budget (then halved if a G or B >= 2 overshot it), and K (B for
    depthwise) is raised if the product stays under 1e3."""
    kind = kind or draw(st.sampled_from(_KINDS))
    if kind == "unrolled":
        return _unrolled_layer(draw)
    budget = [MAX_MACS]
    d = dict(B=1, K=1, C=1, OY=1, OX=1, FY=1, FX=1, G=1)
    spatial_dims = kind not in ("fc",)
    order = draw(st.permutations(["B", "K", "C", "OY", "OX", "FY", "FX", "G"]))
    for dim in order:
        if dim in ("OY", "OX") and spatial_dims:
            d[dim] = _dim(draw, budget, 56)
        elif dim in ("FY", "FX") and kind in ("conv", "grouped", "depthwise", "batched"):
            d[dim] = _dim(draw, budget, 7)
        elif dim == "G" and kind in ("grouped", "depthwise"):
            d[dim] = _dim(draw, budget, 8 if kind == "grouped" else 96, lo=2)
        elif dim in ("K", "C") and kind != "depthwise":
            d[dim] = _dim(draw, budget, 1024 if kind == "fc" else 256)
        elif dim == "B" and kind in ("fc", "batched"):
            d[dim] = _dim(draw, budget, 64 if kind == "fc" else 8, lo=2)
    while math.prod(d.values()) > MAX_MACS:   # a G or B of at least 2 drawn on an exhausted budget
        big = max(("K", "C", "OY", "OX"), key=d.get)
        d[big] = -(-d[big] // 2)
    macs = math.prod(d.values())
    if macs < MIN_MACS:   # raise the dim that carries no structure (K; B for depthwise)
        grow = "B" if kind == "depthwise" else "K"
        d[grow] *= -(-MIN_MACS // macs)
    window = kind in ("conv", "grouped", "depthwise", "batched", "1x1")
    strides = st.integers(1, 3) if window else st.just(1)
    dilations = strides if kind != "1x1" else st.just(1)
    steps = dict(SY=draw(strides), SX=draw(strides), DY=draw(dilations), DX=draw(dilations))
    return Layer(f"fuzz_{kind}", **d, **steps, **_zero_padding(draw, d, steps, window),
                 kind={"fc": "fc", "depthwise": "dwconv"}.get(kind, "conv"),
                 w_bits=draw(st.sampled_from([4, 8, 16])), i_bits=draw(st.sampled_from([4, 8, 16])),
                 o_bits=draw(st.sampled_from([8, 16])), o_partial_bits=draw(st.sampled_from([16, 24, 32])))


def _zero_padding(draw, d: dict, steps: dict, window: bool) -> dict:
    """PY, PX and the unpadded input size of a window layer (model version 4): per axis a pad of
    0 to FY - 1 on each side (a mean, as the importers give it: half-integers too) and the input
    the pads leave, plus up to stride - 1 rows the stride does not reach; or no input size."""
    if not window or not draw(st.booleans()):
        return {}
    out = {}
    for o, f, s, dl, pad, rows in (("OY", "FY", "SY", "DY", "PY", "in_rows"), ("OX", "FX", "SX", "DX", "PX", "in_cols")):
        window_rows = steps[s] * (d[o] - 1) + steps[dl] * (d[f] - 1) + 1
        total = draw(st.integers(0, min(2 * (d[f] - 1), window_rows - 1)))
        out[pad] = total // 2 if total % 2 == 0 else total / 2
        out[rows] = window_rows - total + draw(st.integers(0, steps[s] - 1))
    return out


# ---------------------------------------------------------------------------------- accelerators
_WORDS = [1, 4, 8, 12, 16, 24, 32, 48, 64, 128, 256]
_pj = st.one_of(st.integers(0, 400), st.floats(0.0, 400.0, allow_nan=False, allow_infinity=False,
                                                allow_subnormal=False))


def _fanout(fit: SpatialMapping, dims) -> int:
    """Product of the fitted spatial factors on the array dims ``dims``."""
    return math.prod(f for a in dims for _, f in fit.dims.get(a, ()))


def _least_bits(layer: Layer, fit: SpatialMapping, bits: dict[str, int], ops, scope) -> int:
    """Bits of the smallest tiles a memory of ``ops`` private to ``scope`` holds: the footprints
    of the spatial loops inside one instance (no temporal loop)."""
    ext: dict[str, int] = {}
    for a, loops in fit.dims.items():
        for d, f in loops:
            if a not in scope:
                ext[d] = ext.get(d, 1) * f
    return sum(footprint(op, ext, layer) * bits[op] for op in ops)


def _sizes(draw, mems: list[dict], layer: Layer, fit: SpatialMapping, bits: dict[str, int]) -> list[int | None]:
    """Capacities in bits of ``mems`` (dicts with operands, private_to, top), innermost first:
    unbounded (most tops, a fifth of the others) or, in three accelerators in four (a realistic
    hierarchy), 1-64 times what a memory must hold to take the tiles of the levels below it (their
    capacities, times the instances it serves; its own smallest tiles, `_least_bits`, at least),
    so that most orderings are valid, tiles fit once (single-buffered) or twice (double-buffered),
    and sometimes a shared memory cannot hold every operand's tile (invalid); in the others any
    size between half the smallest tiles and twice the operands' whole tensors (mostly invalid)."""
    full = {"W": layer.weight_count * bits["W"],
            "I": layer.B * layer.C * layer.G * layer.IY * layer.IX * bits["I"],
            "O": layer.B * layer.K * layer.G * layer.OY * layer.OX * bits["O"]}
    realistic = draw(st.integers(0, 3)) > 0
    held = {op: 0 for op in OPERANDS}   # bound of the tile bits of op at its latest level
    scope_of = {op: tuple(fit.dims) for op in OPERANDS}   # the MAC's (array dims without loops: fan-out 1)
    out = []
    for m in mems:
        ops, scope = m["operands"], m["private_to"]
        least = _least_bits(layer, fit, bits, ops, scope)
        need = max(least, sum(held[op] * _fanout(fit, set(scope_of[op]) - set(scope)) for op in ops))
        if draw(st.integers(0, 9)) < (8 if m["top"] else 2):
            size = None
        elif realistic:
            size = need * draw(st.sampled_from([1, 2, 3, 8, 64])) + draw(st.integers(0, 64))
        else:
            e = draw(st.integers(max(0, least.bit_length() - 2), (2 * sum(full[op] for op in ops)).bit_length()))
            size = (1 << e) + draw(st.integers(0, 1 << e))
        out.append(size)
        for op in ops:
            held[op] = full[op] if size is None else min(size, full[op])
            scope_of[op] = scope
    return out


def _bandwidth(draw, word: int):
    """Bits per cycle: a multiple (or fraction) of the word, or an arbitrary integer."""
    return draw(st.one_of(st.sampled_from([word * 0.25, word * 0.5, word, 2 * word, 8 * word]),
                          st.integers(1, 4096)))


def _per_operand(draw, ops, word: int) -> tuple:
    """Rows (operand, word_bits, read_bw, write_bw, read_pj, write_pj) of a memory with per-operand
    ports: each key drawn per operand or shared (the word's default bandwidth follows it)."""
    per = {k: draw(st.booleans()) for k in ("word", "rbw", "wbw", "rpj", "wpj")}
    shared = {k: None for k in per}
    rows = []
    for op in ops:
        w = draw(st.sampled_from(_WORDS)) if per["word"] else word
        vals = {}
        for k, make in (("rbw", lambda: _bandwidth(draw, w)), ("wbw", lambda: _bandwidth(draw, w)),
                        ("rpj", lambda: draw(_pj)), ("wpj", lambda: draw(_pj))):
            if not per[k] and shared[k] is None:
                shared[k] = make()
            vals[k] = make() if per[k] else shared[k]
        rows.append((op, w, vals["rbw"], vals["wbw"], vals["rpj"], vals["wpj"]))
    return tuple(rows)


def _scope(draw, allowed: tuple[str, ...]) -> tuple[str, ...]:
    """``private_to`` within ``allowed`` (array order): all of it, none, or any subset."""
    how = draw(st.sampled_from(["all", "none", "subset"]))
    if how == "all":
        return allowed
    if how == "none":
        return ()
    keep = draw(st.lists(st.booleans(), min_size=len(allowed), max_size=len(allowed)))
    return tuple(a for a, k in zip(allowed, keep) if k)


def _memories(draw, array: dict[str, int], layer: Layer, fit: SpatialMapping,
              bits: dict[str, int]) -> tuple[MemoryLevel, ...]:
    """Memories innermost first, 2-6 levels per operand (see the module docstring)."""
    left = {op: draw(st.integers(2, 6)) for op in OPERANDS}
    scope_of = {op: tuple(array) for op in OPERANDS}   # the MAC is private to every array dim
    mems = []
    while any(left.values()):
        need = [op for op in OPERANDS if left[op]]
        ops = tuple(draw(st.lists(st.sampled_from(need), min_size=1, max_size=len(need), unique=True)))
        allowed = tuple(a for a in array if all(a in scope_of[op] for op in ops))
        scope = _scope(draw, allowed)
        top = any(left[op] == 1 for op in ops)
        word = draw(st.sampled_from(_WORDS))
        mems.append(dict(
            name=f"m{len(mems)}_{''.join(ops)}", top=top, operands=ops,
            read_pj=draw(_pj), write_pj=draw(_pj), word_bits=word, read_bw=_bandwidth(draw, word),
            write_bw=_bandwidth(draw, word), shared_port=draw(st.booleans()), private_to=scope,
            per_operand=_per_operand(draw, ops, word) if len(ops) > 1 and draw(st.integers(0, 3)) == 0 else ()))
        for op in ops:
            left[op] -= 1
            scope_of[op] = scope
    sizes = _sizes(draw, mems, layer, fit, bits)
    return tuple(MemoryLevel(size_bits=b, **{k: v for k, v in m.items() if k != "top"})
                 for m, b in zip(mems, sizes))


def _unrolled_layer(draw) -> Layer:
    """K, C, OX in [10, 16] (1,000-4,096 MACs): an array of three dims can unroll all of it."""
    return Layer("fuzz_unrolled", K=draw(st.integers(10, 16)), C=draw(st.integers(10, 16)),
                 OX=draw(st.integers(10, 16)), SX=draw(st.integers(1, 3)), w_bits=8, i_bits=8, o_bits=8,
                 o_partial_bits=draw(st.sampled_from([16, 24])))


def _unrolling_all(draw, layer: Layer) -> tuple[dict[str, int], SpatialMapping]:
    """An array D1 x D2 x D3 = K x C x OX' and its unrolling of K, C and OX' = OX (no temporal loop
    left), ceil(OX / 2) (one temporal OX 2, padded if OX is odd) or OX - 1 (OX 2, padded)."""
    ox = draw(st.sampled_from([layer.OX, -(-layer.OX // 2), layer.OX - 1]))
    array = {"D1": layer.K, "D2": layer.C, "D3": ox}
    return array, SpatialMapping({"D1": (("K", layer.K),), "D2": (("C", layer.C),), "D3": (("OX", ox),)})


@st.composite
def accelerators(draw, layer: Layer, unroll_all: bool = False) -> Accelerator:
    """An `Accelerator` for ``layer`` that passes its own validation (module docstring), its
    default spatial unrolling drawn by `spatials` (or, if ``unroll_all``, one that leaves at most
    one temporal loop, `_unrolling_all`); memory sizes are drawn relative to the tiles that
    unrolling puts in them and to the layer's tensors."""
    if unroll_all:
        array, spatial = _unrolling_all(draw, layer)
    else:
        array = {f"D{i + 1}": draw(st.integers(1, 16)) for i in range(draw(st.integers(1, 3)))}
        spatial = draw(spatials(array, layer))
    prec = {k: draw(st.sampled_from(v)) for k, v in
            (("W", [4, 8, 16]), ("I", [4, 8, 16]), ("O", [12, 16, 24, 32]), ("O_final", [8, 16]))
            if draw(st.booleans())}
    bits = {"W": prec.get("W", layer.w_bits), "I": prec.get("I", layer.i_bits),
            "O": max(prec.get("O", layer.o_partial_bits), prec.get("O_final", layer.o_bits))}
    mems = _memories(draw, array, layer, spatial.fit(layer), bits)
    acc = draw(st.one_of(st.none(), st.just(0.0), st.floats(0.001, 2.0), st.integers(0, 3)))
    mac_pj = draw(st.one_of(st.integers(0, 5), st.floats(0.0, 5.0, allow_subnormal=False)))
    # multicast of I over a drawn set of array dims (the reference's "Multicast of inputs"), one in three
    mc = tuple(draw(st.lists(st.sampled_from(list(array)), unique=True, min_size=1))) if draw(
        st.integers(0, 2)) == 0 else ()
    return Accelerator("fuzz_acc", array, mac_pj, mems, spatial, prec, accumulator_pj=acc,
                       multicast=(("I", mc),) if mc else ())


@st.composite
def spatials(draw, array: dict[str, int], layer: Layer) -> SpatialMapping:
    """0-3 unrolled loops per array dim with fan-out <= its size: any loop dim (one of the
    layer's dims > 1 half of the time) and any factor >= 2 (fit clips factors larger than the
    layer, factors that do not divide it pad) or the whole dim where it fits (no temporal loop
    of that dim is left)."""
    out = {}
    real = [d for d in LOOP_DIMS if getattr(layer, d) > 1] or list(LOOP_DIMS)
    for a, size in array.items():
        loops, fan = [], 1
        for _ in range(draw(st.integers(0, 3))):
            if size // fan < 2:
                break
            d = draw(st.sampled_from(LOOP_DIMS if draw(st.booleans()) else real))
            whole = getattr(layer, d)
            fits = 2 <= whole <= size // fan
            f = whole if fits and draw(st.booleans()) else draw(st.integers(2, size // fan))
            loops.append((d, f))
            fan *= f
        if loops:
            out[a] = tuple(loops)
    return SpatialMapping(out)


# ------------------------------------------------------------------------------------------ cases
@dataclass
class Case:
    """One drawn problem: evaluate ``perms`` (positions into the evaluator's loop multiset) of
    ``layer`` on ``arch`` with ``spatial`` (None = the accelerator's default unrolling),
    ``factors`` (None = prime factors) and ``even``."""

    layer: Layer
    arch: Accelerator
    spatial: SpatialMapping | None
    factors: tuple[tuple[str, int], ...] | None
    even: bool
    perms: list[tuple[int, ...]] = field(default_factory=list)
    lookahead_saved: int = field(default=0, compare=False)  # orderings only LOMA's look-ahead allocates

    def evaluator(self, backend: str) -> OrderingEvaluator:
        return OrderingEvaluator(self.layer, self.arch, self.spatial, factors=self.factors, even=self.even,
                                 backend=backend)

    @property
    def unrolling(self) -> SpatialMapping:
        """The spatial unrolling in use (unfitted)."""
        return self.spatial if self.spatial is not None else self.arch.spatial

    def orderings(self, ev: OrderingEvaluator) -> np.ndarray:
        """(len(perms), n_loops) type ids: each permutation applied to the multiset."""
        base = np.repeat(np.arange(len(ev.types), dtype=np.int64), ev.counts)
        return np.array([base[list(p)] for p in self.perms], dtype=np.int64).reshape(len(self.perms), len(base))


def _factors(draw, layer: Layer, spatial: SpatialMapping):
    """None, LOMA's lpf_limit merge of the prime factors, or random merges of same-dim pairs."""
    tb = spatial.temporal_bounds(layer)
    primes = [(d, p) for d in LOOP_DIMS for p in prime_factors(tb[d])]
    how = draw(st.sampled_from(["primes", "primes", "lpf_limit", "random"]))
    if how == "primes" or not primes:
        return None, len(primes)
    if how == "lpf_limit":
        merged = merge_lpfs(primes, draw(st.integers(1, len(primes))))
    else:
        merged = list(primes)
        for _ in range(draw(st.integers(1, 4))):
            i = draw(st.integers(0, len(merged) - 1))
            same = [j for j, (d, _) in enumerate(merged) if d == merged[i][0] and j != i]
            if same:
                j = draw(st.sampled_from(same))
                merged[i] = (merged[i][0], merged[i][1] * merged[j][1])
                del merged[j]
        merged = draw(st.permutations(merged))
    return tuple(merged), len(merged)


@st.composite
def cases(draw, max_orderings: int = 6) -> Case:
    """A `Case`: a layer, an accelerator, factors, even and 1..``max_orderings`` orderings. The
    spatial unrolling is the accelerator's default, passed explicitly or as None (both paths of
    the evaluator and of `allocate`)."""
    unrolled = draw(st.integers(0, 19)) == 0   # one case in 20: 0 or 1 temporal loop
    layer = draw(layers("unrolled" if unrolled else None))
    arch = draw(accelerators(layer, unroll_all=unrolled))
    spatial = draw(st.sampled_from([arch.spatial, None]))
    factors, n = _factors(draw, layer, arch.spatial)
    perms = _perms(draw, n, max_orderings)
    case = Case(layer, arch, spatial, factors, draw(st.booleans()), [tuple(p) for p in perms])
    return _tighten(draw, case) if draw(st.integers(0, 2)) == 0 else case


def _perms(draw, n: int, k: int) -> list[tuple[int, ...]]:
    """1..k permutations of range(n): the first at random, each next one at random or a local
    move of the one before it (swap two loops, swap two neighbours, move one loop elsewhere), as
    SALSA's chains and LOMA's enumeration visit them: successive orderings sharing their inner
    loops exercise the kernel's reuse of a prefix shared with the previous row / call."""
    perms = [list(draw(st.permutations(range(n))))]
    for _ in range(draw(st.integers(0, k - 1))):
        p = list(perms[-1])
        move = draw(st.sampled_from(["fresh", "swap", "neighbours", "insert"])) if n >= 2 else "fresh"
        if move == "fresh":
            p = list(draw(st.permutations(range(n))))
        elif move == "neighbours":
            i = draw(st.integers(0, n - 2))
            p[i], p[i + 1] = p[i + 1], p[i]
        else:
            i, j = draw(st.integers(0, n - 1)), draw(st.integers(0, n - 1))
            if move == "swap":
                p[i], p[j] = p[j], p[i]
            else:
                p.insert(j, p.pop(i))
        perms.append(p)
    return [tuple(p) for p in perms]


def _tighten(draw, case: Case) -> Case:
    """``case`` with one memory (O's top half of the time) resized to exactly twice or once the
    tile bits it holds under the first ordering (if valid): the boundaries of double buffering
    (2 x tiles == size) and of capacity (tiles == size, in LOMA's prefix search too, top levels
    included), which random sizes rarely hit. A size is kept only if the first ordering's
    allocation does not change (else ``case`` is returned as drawn): once the tiles can change it
    too, as LOMA's prefix search stops at the first overflowing tile and an O tile at partial
    precision can outgrow a longer prefix's at final precision (at O's top: the later orderings
    whose outermost loop is O-irrelevant become invalid, the kernel's cached decisions must
    notice)."""
    ev = case.evaluator(BACKENDS[-1])
    loops = ev.loops(case.orderings(ev)[0])
    rep = reference_report(case, loops)
    if rep is None or not rep.valid:
        return case
    held = _held_bits(rep)
    o_top = case.arch.memories.index(case.arch.levels("O")[-1])   # its partial-sum prefixes can overflow
    i = draw(st.one_of(st.integers(0, len(case.arch.memories) - 1), st.just(o_top)))
    name = case.arch.memories[i].name
    for k in draw(st.sampled_from([(2, 1), (1,)])):
        mems = list(case.arch.memories)
        mems[i] = dataclasses.replace(mems[i], size_bits=k * held[name])
        new = dataclasses.replace(case, arch=dataclasses.replace(case.arch, memories=tuple(mems)))
        r = reference_report(new, loops)
        if r is not None and r.mapping.boundaries == rep.mapping.boundaries:
            return new
    return case


# ------------------------------------------------------------------------------------ the check
def _held_bits(rep) -> dict[str, int]:
    """Memory name -> tile bits it holds per instance (all operands) in a valid reference report."""
    held: dict[str, int] = {}
    for op in OPERANDS:
        for c in rep.breakdown["operands"][op]:
            held[c["memory"]] = held.get(c["memory"], 0) + c["tile_bits"]
    return held


def reference_report(case: Case, loops):
    """The reference's `CostReport` of one ordering (``loops``: (dim, factor) innermost first),
    or None if LOMA's allocation raises MappingError (the ordering is invalid)."""
    try:
        m = allocate(case.layer, case.arch, case.spatial, loops, even=case.even)
    except MappingError:
        return None
    try:
        allocate(case.layer, case.arch, case.spatial, loops, even=case.even, lookahead=False)
    except MappingError:
        case.lookahead_saved += 1
    return evaluate(case.layer, case.arch, m)


class _Compare:
    """Collects the disagreements of one ordering and counts bit-identical vs merely close floats
    (``tally[(quantity, "identical" | "close")]``)."""

    def __init__(self, tally: dict | None):
        self.errors: list[str] = []
        self.tally = tally if tally is not None else {}

    def num(self, what: str, got, want) -> None:
        """``got`` equal to ``want`` within `REL` (relative; equal infinities are equal, NaN never)."""
        if math.isclose(float(got), float(want), rel_tol=REL, abs_tol=0.0):
            key = (re.sub(r"\[.*?\]", "", what), "identical" if float(got) == float(want) else "close")
            self.tally[key] = self.tally.get(key, 0) + 1
        else:
            rel = abs(got - want) / abs(want) if want and math.isfinite(want) else math.inf
            self.errors.append(f"{what}: kernel {float(got)!r} != reference {want!r} (rel {rel:.3g})")

    def same(self, what: str, got, want) -> None:
        if got != want:
            self.errors.append(f"{what}: kernel {got!r} != reference {want!r}")


def _reference_counts(rep) -> dict:
    """The reference's access counts in the shape of `OrderingEvaluator.access_counts`."""
    ops = rep.breakdown["operands"]
    return {"boundaries": {op: tuple(rep.mapping.boundaries[op]) for op in OPERANDS},
            "reads": {(op, c["memory"]): c["reads"] for op in OPERANDS for c in ops[op]},
            "writes": {(op, c["memory"]): c["writes"] for op in OPERANDS for c in ops[op]},
            "stall_cycles": dict(rep.breakdown["stall_cycles"])}


def _check_counts(cmp: _Compare, got, rep) -> None:
    """``ev.access_counts(o)`` against the reference report (None when invalid)."""
    if rep is None or not rep.valid:
        cmp.same("access_counts (invalid ordering)", got is None, True)
        return
    if got is None:
        cmp.errors.append("access_counts: kernel None (invalid) for a valid ordering")
        return
    want = _reference_counts(rep)
    cmp.same("boundaries", {op: tuple(int(x) for x in got["boundaries"][op]) for op in OPERANDS},
             want["boundaries"])
    for kind in ("reads", "writes", "stall_cycles"):
        cmp.same(f"{kind} keys", sorted(got[kind]), sorted(want[kind]))
        for k in want[kind]:
            if k in got[kind]:
                cmp.num(f"{kind}[{k}]", got[kind][k], want[kind][k])


def check_case(case: Case, backend: str, reports=None, counts: bool = True, tally: dict | None = None):
    """Every disagreement between the kernel (``backend``) and the reference on ``case``.

    Each ordering is evaluated by ``ev.evaluate`` on a batch (the orderings repeated to more than 8
    rows, so that a batch path and not only a per-ordering path runs), by ``ev.evaluate_one`` and,
    if ``counts``, by ``ev.access_counts``. ``reports``: the reference reports per ordering
    (computed here if None; pass them to share them between backends).

    Returns:
        (errors, reports): errors a list of (ordering index, message); reports the reference's
        `CostReport` (None where the allocation raised MappingError) per ordering.
    """
    ev = case.evaluator(backend)
    ords = case.orderings(ev)
    if reports is None:
        reports = [reference_report(case, ev.loops(o)) for o in ords]
    reps = -(-9 // len(ords))
    batch = ev.evaluate(np.tile(ords, (reps, 1)))
    errors = []
    for i, (o, rep) in enumerate(zip(ords, reports)):
        cmp = _Compare(tally)
        valid = rep is not None and rep.valid
        one = ev.evaluate_one(o)
        row = [(float(batch.energy_pj[r]), float(batch.latency_cycles[r]), float(batch.edp[r]),
                bool(batch.valid[r])) for r in range(i, len(ords) * reps, len(ords))]
        for r, x in enumerate(row[1:], 1):   # the same ordering repeated in the batch
            if x != row[0]:
                cmp.errors.append(f"evaluate row {i + r * len(ords)}: kernel {x} != its row {i} {row[0]} "
                                  f"(the same ordering)")
        got = [("evaluate", row[0]), ("evaluate_one", one)]
        for path, (e, la, edp, v) in got:
            cmp.same(f"{path} valid", bool(v), valid)
            if not valid:
                cmp.same(f"{path} costs of an invalid ordering", (e, la, edp), (math.inf,) * 3)
                continue
            cmp.num(f"{path} energy_pj", e, rep.energy_pj)
            cmp.num(f"{path} latency_cycles", la, rep.latency_cycles)
            cmp.num(f"{path} edp", edp, rep.edp)
        if counts:
            _check_counts(cmp, ev.access_counts(o), rep)
        errors += [(i, msg) for msg in cmp.errors]
    return errors, reports


# ------------------------------------------------------------------------ reproducers, coverage
def case_to_dict(case: Case) -> dict:
    """A JSON-able description of ``case``: the layer's fields, the accelerator
    (`Accelerator.to_dict`, ints kept as ints), the spatial unrolling, factors, even, the
    permutations and, for reading, each ordering as (dim, factor) loops, innermost first."""
    ev = case.evaluator(BACKENDS[-1])
    return {"layer": dataclasses.asdict(case.layer), "arch": case.arch.to_dict(),
            "spatial": None if case.spatial is None else case.spatial.to_dict(),
            "factors": None if case.factors is None else [list(f) for f in case.factors],
            "even": case.even, "perms": [list(p) for p in case.perms],
            "loops_innermost_first": [[list(t) for t in ev.loops(o)] for o in case.orderings(ev)]}


def case_from_dict(d: dict) -> Case:
    """Inverse of `case_to_dict`. Builds `MemoryLevel` s directly (not `accelerator_from_dict`,
    which turns int pJ and bandwidths into floats: the kernel treats int pJ apart)."""
    a = d["arch"]
    keys = ("word_bits", "read_bw", "write_bw", "read_pj", "write_pj")

    def rows(m):   # per-operand ports: the keys given as tables
        if not any(isinstance(m[k], dict) for k in keys):
            return ()
        return tuple((op, *(m[k][op] if isinstance(m[k], dict) else m[k] for k in keys)) for op in m["operands"])
    mems = tuple(MemoryLevel(m["name"], m.get("size_bits"), tuple(m["operands"]), *(max(m[k].values())
                             if isinstance(m[k], dict) else m[k] for k in ("read_pj", "write_pj", "word_bits",
                             "read_bw", "write_bw")), m["shared_port"], tuple(m["private_to"]), rows(m))
                 for m in a["memory"])
    arch = Accelerator(a["name"], dict(a["array"]), a["mac_pj"], mems, SpatialMapping.from_dict(a["spatial"]),
                       dict(a["precision"]), a.get("clock_mhz", 200.0), a.get("description", ""),
                       a.get("accumulator", {}).get("energy_pj"),
                       multicast=tuple((op, tuple(dims)) for op, dims in a.get("multicast", {}).items()))
    factors = None if d["factors"] is None else tuple((str(x), int(f)) for x, f in d["factors"])
    spatial = None if d["spatial"] is None else SpatialMapping.from_dict(d["spatial"])
    return Case(Layer(**d["layer"]), arch, spatial, factors, bool(d["even"]),
                [tuple(p) for p in d["perms"]])


def features(case: Case, reports) -> set[str]:
    """Coverage tags of a checked case (for `hypothesis.event` and the fuzz script's summary)."""
    arch = case.arch
    tags = {f"kind={case.layer.name[5:]}", f"array_dims={len(arch.array)}"}
    tags.add("accumulator" if arch.accumulator_pj is not None else "no accumulator")
    tags.add(f"precisions given: {len(arch.precisions)}")
    tags |= {"per-operand ports" for m in arch.memories if m.per_operand}
    fit_i = case.unrolling.fit(case.layer)
    if any(f > 1 and d in RELEVANT["I"] for a in arch.multicast_dims("I") for d, f in fit_i.dims.get(a, ())):
        tags.add("multicast of I")
    tags |= {"memory shared by 3" if len(m.operands) == 3 else "memory shared by 2" if len(m.operands) == 2
             else "memory unshared" for m in arch.memories}
    tags |= {f"{op} levels={len(arch.levels(op))}" for op in OPERANDS}
    fit = case.unrolling.fit(case.layer)
    if any(fit.factor(d) > 1 and getattr(case.layer, d) % fit.factor(d) for d in LOOP_DIMS):
        tags.add("padded unrolling")
    if case.factors is not None:
        tags.add("merged factors")
    if case.layer.in_rows is not None and min(window_caps(case.layer)) < min(case.layer.IY, case.layer.IX):
        tags.add("zero padding")
    tags.add(f"even={case.even}")
    if case.lookahead_saved:
        tags.add("look-ahead allocated an ordering")
    for rep in reports:
        if rep is None:
            tags.add("invalid (allocation)")
            continue
        tags.add("valid" if rep.valid else "invalid (capacity)")
        if not rep.valid:
            continue
        held = _held_bits(rep)
        for m in arch.memories:
            if m.size_bits is not None:
                tags.add("double-buffered" if 2 * held[m.name] <= m.size_bits else "single-buffered")
                if held[m.name] == m.size_bits:
                    tags.add("tiles fill a memory exactly")
                if 2 * held[m.name] == m.size_bits:
                    tags.add("tiles fill half a memory exactly")
        if any(s > 0 for s in rep.breakdown["stall_cycles"].values()):
            tags.add("stalls")
    return tags
