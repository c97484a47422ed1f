"""Brute-force walker of a loop nest that counts what the hardware touches: the oracle for
`costmodel.loopnest.reference` (`tests/costmodel/loopnest/test_loopnest_oracle.py` asserts the
model equal to it or in the relation the model's docstring documents). It shares no code with
the model except `SpatialMapping.fit` and the accelerator's data.

**Indices.** A PE is one digit per spatial component (array dim, loop dim, factor) of the fitted
unrolling; an iteration is one digit per temporal loop, innermost fastest. The index of loop dim d
is the mixed-radix number whose lowest digits are d's spatial components (array dims in order:
the spatial loops sit below all temporal loops) and whose higher digits are d's temporal loops,
innermost first. With OY 2 over two PEs and OY 2 temporal, PE p computes output rows p and p + 2.
An index at or above the layer's bound is padding (an unrolling that does not divide the layer);
a MAC is real iff all its indices are in bounds. A MAC touches the weight (k, c, fy, fx, g), the
output (b, k, oy, ox, g) and the input (b, c, g, iy, ix), iy = SY*oy + DY*fy, ix = SX*ox + DX*fx.

**Tiles (stationarity: the hardware's control, as the model's).** For every operand and every
link between a storage (the MAC, then each memory level of the operand) and the level above, each
instance of the lower storage (its PEs share their digits on the array dims it is private to)
keeps one tile while the operand-relevant temporal indices above the link's boundary stay the
same: its *segment* (the MAC without an accumulator keeps no partial sum: each MAC is an O
segment of its own). A new tile is loaded whole (overlap with the previous one is not kept). The
tile's data is what the real MACs of the instance's PEs touch in the segment, element by
element: the input rows and columns of its real output and filter indices, whatever their
spacing. A segment without a real MAC moves nothing.

**Transfers (the literal counts: ``reads`` / ``writes`` in words, ``*_e`` in elements).** W, I:
each lower instance writes its tile; each upper instance reads once the union of the tiles of the
lower instances under it (an element several of them need is read once); where the accelerator
multicasts I over array dims (``multicast``), per set of lower instances that differ only along
those dims (and along irrelevant loops): the sum of the sets' unions, the distinct inputs the
interconnect delivers (the model's "Multicast of inputs"; ``mident``). O: at the end of a
segment each lower instance reads its values out and each upper instance writes their union (PEs
along O-irrelevant array dims are summed on the way: spatial reduction). At the start of a
segment, the partial sums the upper instance holds of the new tile's outputs (made by its PEs
since it loaded its own tile, or read back into it then) are read back from it, each into one
lower instance of the group of instances reduced together (the others start from zero: a
partial sum must be added once). A value is final iff it includes every real MAC of its output:
all have run and all their PEs lie under the instance that holds or receives it. Final values
move at final precision, the others at partial-sum precision; a transfer of elements totalling
B bits costs ceil(B / word_bits) accesses.

**The padded nest under the model's conventions (``*_p``, elements).** The same walk with every
padded index counted as data, an I multicast sending the distinct tiles of the lower instances
whole (even where they overlap), and a read-back into every lower instance that held the tile
before. ``flags`` name where the literal count departs from it on an unpadded nest: ``gap_w``
(this level's I tile) / ``gap_r`` (the I tile it sends down) has output or filter indices that are
not consecutive (a PE's OY indices p and p + 2: the model counts the rows of the extents),
``overlap`` (I tiles of one multicast overlap), ``group_w`` / ``group_r`` (a read-back written
into / read for one instance of a reduction group, not each), ``lowread`` (a lower instance reads
out a partial sum that the reduction makes final on its way up). ``env_lo_*`` / ``env_hi_*``
(``r`` reads, ``w`` writes): for I, the elements of the moved tiles if each one's o output and f
filter rows gave o + f - 1 rows (the fewest any o and f rows give: Cauchy-Davenport) or o * f
(the most), columns alike. ``new_e``: elements of W / I written that the instance did not hold in
its previous tile (what a buffer keeping the overlap would load).

**Zero padding.** An input row (column) is real iff it lies in the unpadded input: pb <= iy <
pb + ``in_rows``, pb = floor(PY) (the layer's padded coordinates; the model's ``window_caps``
convention for pb). A real MAC whose input is in the halo multiplies a generated zero: it runs,
but that input is not data, so it is in no literal I count (``reads``, ``writes``, ``*_e``).
``*_c`` (I only, elements): the padded-nest tiles (``*_p``) with each tile's rows clipped to the
real rows the whole layer reads (the distinct real rows over all its MACs), columns alike: the
model's convention (ZigZag's), walked.

**Held precision (capacity).** A memory instance holds an O tile at partial-sum precision iff it
holds a value that is not final when one of the loops above its boundary advances (after a pass
of its own loops: between two segments, or within the run of O-irrelevant loops that keeps the
tile) or when the layer ends. That is: an O-irrelevant temporal loop lies above the level (its
outputs are summed over that loop's iterations, the sum in between is partial), or the memory
is private to an array dim carrying an O-irrelevant spatial loop (C, FY, FX): each instance sums
the MACs of its own PEs only, the spatial reduction completes above it, so what it holds is a
partial sum however far the temporal loops have run. Partial values that exist only while the
level's own loops run (without an accumulator every MAC's partial sum enters the lowest O level)
do not count: ZigZag's rule and the model's; ``work_bits`` counts them too (every value written
into the memory). Tiles are the padded nest's (a memory holds a full slice): ``tile``;
``tile_real``: the most real elements one segment touched.
"""

from __future__ import annotations

import bisect
import itertools
import math
from collections import defaultdict

DIMS = ("B", "K", "C", "OY", "OX", "FY", "FX", "G")
REL = {"W": {"K", "C", "FY", "FX", "G"}, "I": {"B", "C", "OY", "OX", "FY", "FX", "G"},
       "O": {"B", "K", "OY", "OX", "G"}}
COUNTERS = ("reads", "writes", "reads_e", "writes_e", "reads_p", "writes_p", "reads_c", "writes_c", "new_e",
            "env_lo_r", "env_hi_r", "env_lo_w", "env_hi_w", "fills", "readbacks", "tile", "tile_real")
_B, _K, _C, _OY, _OX, _FY, _FX, _G = range(8)


def _cdiv(a, b):
    return -(-a // b)


class Nest:
    """The padded nest of one mapping: PEs, iterations, and per (iteration, PE) the elements of W,
    I and O its MAC touches and whether the MAC is real."""

    def __init__(self, layer, arch, mapping):
        self.layer, self.arch, self.mapping = layer, arch, mapping
        sp = (mapping.spatial if mapping.spatial is not None else arch.spatial).fit(layer)
        self.comps = [(a, d, f) for a, sl in sp.dims.items() for d, f in sl]
        self.loops = list(mapping.temporal.loops)
        weight = defaultdict(lambda: 1)
        s_w, t_w = [], []
        for _, d, f in self.comps:
            s_w.append(weight[d])
            weight[d] *= f
        for d, f in self.loops:
            t_w.append(weight[d])
            weight[d] *= f
        self.pes = list(itertools.product(*[range(f) for _, _, f in self.comps]))
        self.iters = [tuple(reversed(t)) for t in itertools.product(*[range(f) for _, f in reversed(self.loops)])]
        pe_idx = [[sum(v * s_w[i] for i, v in enumerate(pe) if self.comps[i][1] == d) for d in DIMS]
                  for pe in self.pes]
        it_idx = [[sum(v * t_w[i] for i, v in enumerate(it) if self.loops[i][0] == d) for d in DIMS]
                  for it in self.iters]
        bound = [getattr(layer, d) for d in DIMS]
        sy, sx, dy, dx = layer.SY, layer.SX, layer.DY, layer.DX
        py, px = math.floor(layer.PY), math.floor(layer.PX)
        ry = range(py, py + layer.in_rows) if layer.in_rows is not None else None
        rx = range(px, px + layer.in_cols) if layer.in_cols is not None else None
        self.elem = {op: [] for op in REL}
        self.real = []
        self.real_in = []   # real MAC and its input element real (not in the halo)
        for ti in it_idx:
            rw, ri, ro, rr = [], [], [], []
            for pi in pe_idx:
                x = [a + b for a, b in zip(pi, ti)]
                rw.append((x[_K], x[_C], x[_FY], x[_FX], x[_G]))
                ri.append((x[_B], x[_C], x[_G], sy * x[_OY] + dy * x[_FY], sx * x[_OX] + dx * x[_FX]))
                ro.append((x[_B], x[_K], x[_OY], x[_OX], x[_G]))
                rr.append(all(v < b for v, b in zip(x, bound)))
            self.elem["W"].append(rw)
            self.elem["I"].append(ri)
            self.elem["O"].append(ro)
            self.real.append(rr)
            self.real_in.append([r and (ry is None or e[3] in ry) and (rx is None or e[4] in rx)
                                 for r, e in zip(rr, ri)])
        # the real rows (columns) the whole layer reads, each axis on its own: the cap of *_c
        seen = [e for row, rr in zip(self.elem["I"], self.real) for e, r in zip(row, rr) if r]
        self.caps = (len({e[3] for e in seen if ry is None or e[3] in ry}),
                     len({e[4] for e in seen if rx is None or e[4] in rx}))
        # per output: the last iteration with a real MAC of it, the PEs that run one and when
        self.last, self.contrib, self.times = {}, defaultdict(set), defaultdict(list)
        for t, (row, rr) in enumerate(zip(self.elem["O"], self.real)):
            for p, (e, r) in enumerate(zip(row, rr)):
                if r:
                    self.last[e] = t
                    self.contrib[e].add(p)
                    self.times[(p, e)].append(t)

    def key(self, p, scope):
        """The digits of PE ``p`` on the components of the array dims in ``scope``."""
        return tuple(v for v, (a, _, _) in zip(self.pes[p], self.comps) if a in scope)

    def extent(self, d, varying):
        """How many indices of dim d a tile spans whose varying digits are ``varying`` (spatial
        component positions and temporal loop positions, as ("s", i) / ("t", i))."""
        n = 1
        for i, (_, dd, f) in enumerate(self.comps):
            n *= f if dd == d and ("s", i) in varying else 1
        for i, (dd, f) in enumerate(self.loops):
            n *= f if dd == d and ("t", i) in varying else 1
        return n

    def gapped(self, varying):
        """True if some tile's OY, OX, FY or FX indices are not consecutive: a fixed digit (factor
        > 1) lies below a varying one in that dim's mixed radix."""
        for d in ("OY", "OX", "FY", "FX"):
            places = [(("s", i), f) for i, (_, dd, f) in enumerate(self.comps) if dd == d]
            places += [(("t", i), f) for i, (dd, f) in enumerate(self.loops) if dd == d]
            fixed_below = False
            for pl, f in places:
                if f == 1:
                    continue
                if pl not in varying:
                    fixed_below = True
                elif fixed_below:
                    return True
        return False


class Link:
    """One link of operand ``op``: the lower storage (the MAC if ``lo`` is -1, else level ``lo``)
    and the level above it (None above the top level: only the top level's own tile is walked)."""

    def __init__(self, nest, op, lo):
        levels = nest.arch.levels(op)
        self.op, self.nest = op, nest
        self.lower = None if lo < 0 else levels[lo]
        self.upper = levels[lo + 1] if lo + 1 < len(levels) else None
        lo_scope = tuple(nest.arch.array) if lo < 0 else self.lower.private_to
        up_scope = self.upper.private_to if self.upper is not None else ()
        self.blo = 0 if lo < 0 else nest.mapping.boundaries[op][lo]
        self.every = op == "O" and lo < 0 and nest.arch.accumulator_pj is None
        self.inst = defaultdict(list)                 # lower instance -> its PEs
        for p in range(len(nest.pes)):
            self.inst[nest.key(p, lo_scope)].append(p)
        self.inst_pes = {k: set(ps) for k, ps in self.inst.items()}
        rel_s = [i for i, (a, d, _) in enumerate(nest.comps) if a in lo_scope and d in REL[op]]
        self.ident = {k: tuple(nest.pes[ps[0]][i] for i in rel_s) for k, ps in self.inst.items()}
        # multicast (I): array dims of the group (lower private, upper not) the interconnect multicasts
        # over, if one carries a relevant loop; then an upper instance reads, per set of lower
        # instances differing only along them (``mident``), the union of their tiles
        mc = [a for a in nest.arch.multicast_dims(op) if a in lo_scope and a not in up_scope]
        self.mc = mc if any(a in mc and d in REL[op] and f > 1 for a, d, f in nest.comps) else []
        self.mident = {k: tuple(nest.pes[ps[0]][i] for i in rel_s if nest.comps[i][0] not in self.mc)
                       for k, ps in self.inst.items()}
        self.under = defaultdict(list)                # upper instance -> its lower instances
        for k, ps in self.inst.items():
            self.under[nest.key(ps[0], up_scope)].append(k)
        self.up_pes = {u: set().union(*(self.inst_pes[k] for k in ks)) for u, ks in self.under.items()}
        # O: the iterations with a real MAC of output e by a PE under upper instance u
        self.times = defaultdict(list)
        if op == "O":
            for (p, e), ts in nest.times.items():
                self.times[(nest.key(p, up_scope), e)].extend(ts)
            for ts in self.times.values():
                ts.sort()
        self.varying = {("s", i) for i, (a, _, _) in enumerate(nest.comps) if a not in lo_scope}
        self.varying |= {("t", i) for i in range(self.blo)}
        self.mvarying = self.varying | {("s", i) for i, (a, _, _) in enumerate(nest.comps) if a in self.mc}

    def segments(self):
        """Yield (t0, t, held, real, pad, closing) at every pass of the lower storage's own loops
        (t a multiple of their product) and at the end: ``real`` / ``pad`` map each lower instance
        to the real / padded elements its PEs touched since its tile was loaded at t0, ``held``
        the operand-relevant temporal indices above the boundary then; ``closing``: they change at
        t (a new tile) or the nest ends."""
        nest, op = self.nest, self.op
        rel_above = [i for i in range(self.blo, len(nest.loops)) if nest.loops[i][0] in REL[op]]
        inner = math.prod(f for _, f in nest.loops[:self.blo])
        elem, realm = nest.elem[op], (nest.real_in if op == "I" else nest.real)
        t0, held = 0, None
        real = {k: set() for k in self.inst}
        pad = {k: set() for k in self.inst}
        for t, it in enumerate(nest.iters):
            cur = tuple(it[i] for i in rel_above)
            if t == 0:
                held = cur
            elif t % inner == 0:
                closing = self.every or cur != held
                yield t0, t, held, real, pad, closing
                if closing:
                    t0, held = t, cur
                    real = {k: set() for k in self.inst}
                    pad = {k: set() for k in self.inst}
            row, rr = elem[t], realm[t]
            for k, ps in self.inst.items():
                for p in ps:
                    pad[k].add(row[p])
                    if rr[p]:
                        real[k].add(row[p])
        yield t0, len(nest.iters), held, real, pad, True



def _note_tile(c, pad, real):
    """Keep in counters ``c`` the largest tile a lower instance held: padded and real elements."""
    c["tile"] = max(c["tile"], len(pad))
    c["tile_real"] = max(c["tile_real"], len(real))

def _bits(layer, arch):
    p = arch.precisions
    return {"W": p.get("W", layer.w_bits), "I": p.get("I", layer.i_bits), "O": p.get("O", layer.o_partial_bits),
            "Of": p.get("O_final", layer.o_bits)}


def _clipped(nest, tile):
    """Elements of an I tile (a set of (b, c, g, iy, ix)) with its rows and columns clipped to the
    real rows and columns the whole layer reads (`Nest.caps`): the model's zero-padding
    convention, as if the tile were the product of its distinct (b, c, g), rows and columns."""
    if not tile:
        return 0
    bcg = len({e[:3] for e in tile})
    return bcg * min(len({e[3] for e in tile}), nest.caps[0]) * min(len({e[4] for e in tile}), nest.caps[1])


def _envelope(link, varying):
    """Elements of one I tile of ``link`` (its digits ``varying``) if its o output and f filter
    rows (columns alike) gave the fewest rows any o and f rows give (o + f - 1) and the most (o * f)."""
    ext = {d: link.nest.extent(d, varying) for d in DIMS}
    bcg = ext["B"] * ext["C"] * ext["G"]
    return (bcg * (ext["OY"] + ext["FY"] - 1) * (ext["OX"] + ext["FX"] - 1),
            bcg * ext["OY"] * ext["FY"] * ext["OX"] * ext["FX"])


def _move_in(link, bits, out, flags):
    """W / I across one link: each lower instance writes its tile, each upper instance reads the
    union of its lower instances' tiles once; the padded tile-granular counts, the envelope and
    the overlap flag."""
    op = link.op
    lo = out[(op, link.lower.name)] if link.lower is not None else None
    up = out[(op, link.upper.name)] if link.upper is not None else None
    b = bits[op]
    env = _envelope(link, link.varying) if op == "I" else (0, 0)
    env_r = _envelope(link, link.mvarying) if link.mc else env
    before = {k: set() for k in link.inst}
    for _, _, _, real, pad, closing in link.segments():
        if not closing:
            continue
        if lo is not None:
            for k in link.inst:
                _note_tile(lo, pad[k], real[k])
        if up is None:
            continue
        if lo is not None:
            lo["fills"] += 1
            for k in link.inst:
                r = real[k]
                lo["writes"] += _cdiv(len(r) * b, link.lower.port(op).word_bits)
                lo["writes_e"] += len(r)
                lo["writes_p"] += len(pad[k])
                lo["writes_c"] += _clipped(link.nest, pad[k]) if op == "I" else len(pad[k])
                lo["new_e"] += len(r - before[k])
                lo["env_lo_w"] += env[0]
                lo["env_hi_w"] += env[1]
                before[k] = r
        for ks in link.under.values():
            tiles = {}   # distinct tiles (multicast: the union along the multicast dims), real and padded
            for k in ks:
                t = tiles.setdefault((link.mident if link.mc else link.ident)[k], [set(), set()])
                t[0] |= real[k]
                t[1] |= pad[k]
            union = set().union(*(r for r, _ in tiles.values()))
            n_e = sum(len(r) for r, _ in tiles.values()) if link.mc else len(union)
            up["reads"] += _cdiv(n_e * b, link.upper.port(op).word_bits)
            up["reads_e"] += n_e
            up["reads_p"] += sum(len(p) for _, p in tiles.values())
            up["reads_c"] += sum(_clipped(link.nest, p) if op == "I" else len(p) for _, p in tiles.values())
            up["env_lo_r"] += len(tiles) * env_r[0]
            up["env_hi_r"] += len(tiles) * env_r[1]
            if len(union) < sum(len(r) for r, _ in tiles.values()):
                flags[(op, link.upper.name)].add("overlap")


def _final(nest, e, t, pes):
    """The value of output e summed over the PEs ``pes`` before iteration t is final."""
    return nest.last[e] < t and nest.contrib[e] <= pes


def _precision_words(nest, elems, t, pes, bits, word):
    """(words, finals) of one transfer of the values of ``elems`` summed over ``pes`` before t."""
    fin = {e for e in elems if _final(nest, e, t, pes)}
    return _cdiv(len(fin) * bits["Of"] + (len(elems) - len(fin)) * bits["O"], word), fin


def _holds(link, above, u, e, t0):
    """Upper instance u of ``link`` holds a partial sum of output e at iteration t0: a real MAC of
    e by one of its PEs ran since it loaded its current tile, or it received e's partial sum from
    above then. ``above`` = (the iterations at which the upper level loads its tiles, {(instance,
    load iteration): elements read back into it}), from the link above (`_move_out`)."""
    starts, got = above
    a = starts[bisect.bisect_right(starts, t0) - 1]
    ts = link.times.get((u, e))
    if ts:
        i = bisect.bisect_left(ts, a)
        if i < len(ts) and ts[i] < t0:
            return True
    return e in got.get((u, a), ())


def _move_out(link, bits, out, flags, partial, above):
    """O across one link: at the end of each segment the lower instances read their values and
    each upper instance writes their reduced union; at its start the partial sums the upper
    instance holds (`_holds`) are read back into one lower instance of each group of instances
    reduced together (upper reads, lower writes). Also the padded counts (every instance that held
    the tile before reads it back), the group / lowread flags, and in ``partial`` the (memory,
    "held" / "work") pairs of memories that hold a partial value at a pass of their loops / get
    one written. Returns ``above`` for the link below: the lower level's tile loads and reads-back."""
    nest = link.nest
    lo = out[("O", link.lower.name)] if link.lower is not None else None
    up = out[("O", link.upper.name)] if link.upper is not None else None
    seen = {k: set() for k in link.inst}
    starts, got = [], {}
    for t0, t, held, real, pad, closing in link.segments():
        if lo is not None and any(not _final(nest, e, t, link.inst_pes[k]) for k, r in real.items() for e in r):
            partial.add((link.lower.name, "held"))
        if not closing:
            continue
        starts.append(t0)
        back = {k for k in link.inst if (held, link.ident[k]) in seen[k]}
        for k in link.inst:
            seen[k].add((held, link.ident[k]))
            if lo is not None:
                _note_tile(lo, pad[k], real[k])
        if up is None:
            continue
        if lo is not None:
            lo["fills"] += 1
            lo["readbacks"] += bool(back)
        te = max(len(p) for p in pad.values())
        for u, ks in link.under.items():
            union = set().union(*(real[k] for k in ks))
            words, fin = _precision_words(nest, union, t, link.up_pes[u], bits, link.upper.port("O").word_bits)
            up["writes"] += words
            up["writes_e"] += len(union)
            up["writes_p"] += len({link.ident[k] for k in ks}) * te
            if len(fin) < len(union):
                partial.add((link.upper.name, "work"))
            rb = {e for e in union if _holds(link, above, u, e, t0)}
            if any(link.times[(u, e)][0] < t0 for e in union - rb if link.times.get((u, e))):
                # a partial sum made under u went, on its way back, into another instance of u's group
                flags[("O", link.upper.name)].add("group_r")
                if link.lower is not None:
                    flags[("O", link.lower.name)].add("group_w")
            up["reads"] += _cdiv(len(rb) * bits["O"], link.upper.port("O").word_bits)
            up["reads_e"] += len(rb)
            up["reads_p"] += len({link.ident[k] for k in ks if k in back}) * te
            if lo is not None:
                got.update(_lower_out(link, lo, ks, real, rb, fin, t, t0, te, back, bits, flags))
                if rb:
                    partial.add((link.lower.name, "work"))
    return starts, got


def _lower_out(link, lo, ks, real, rb, fin, t, t0, te, back, bits, flags):
    """The lower side of one O segment of the lower instances ``ks`` under one upper instance:
    each reads its own values out at their own precision (``fin``: final after the reduction);
    each partial sum in ``rb`` is read back into the first instance that needs it. Returns
    {(instance, t0): elements read back into it}."""
    wl = link.lower.port("O").word_bits
    into = {}
    needing = sum(1 for k in ks if real[k] & rb)
    for k in ks:
        words, own_fin = _precision_words(link.nest, real[k], t, link.inst_pes[k], bits, wl)
        lo["reads"] += words
        lo["reads_e"] += len(real[k])
        lo["reads_p"] += te
        lo["writes_p"] += te if k in back else 0
        if len(own_fin) < len(real[k] & fin):
            flags[("O", link.lower.name)].add("lowread")
        into[(k, t0)] = rb & real[k]
        rb = rb - real[k]
    for k, g in into.items():
        lo["writes"] += _cdiv(len(g) * bits["O"], wl)
        lo["writes_e"] += len(g)
    if needing > sum(1 for g in into.values() if g):
        flags[("O", link.lower.name)].add("group_w")
    return into


def walk(layer, arch, mapping, held_bits=None, work_bits=None):
    """Walk the nest. Returns {(op, memory): counters} (`COUNTERS` and ``flags``, a set; see the
    module docstring). ``held_bits`` / ``work_bits``: optional dicts, filled with memory name ->
    bits every instance holds (the padded tiles of all its operands; O at the held precision, or
    at the precision of every value written into it)."""
    nest = Nest(layer, arch, mapping)
    bits = _bits(layer, arch)
    out = defaultdict(lambda: dict.fromkeys(COUNTERS, 0))
    flags = defaultdict(set)
    partial = set()
    for op in ("W", "I", "O"):
        above = ([0], {})                         # the top level holds every partial sum it gets
        for lo in reversed(range(-1, len(arch.levels(op)))):
            link = Link(nest, op, lo)
            if op == "O":
                above = _move_out(link, bits, out, flags, partial, above)
            else:
                _move_in(link, bits, out, flags)
            if op == "I" and link.lower is not None and nest.gapped(link.varying):
                flags[(op, link.lower.name)].add("gap_w")     # its own tile
                if link.upper is not None and not link.mc:
                    flags[(op, link.upper.name)].add("gap_r")  # the tile it sends down
            if link.mc and nest.gapped(link.mvarying):
                flags[(op, link.upper.name)].add("gap_r")      # the multicast union it sends down
    for op in ("W", "I", "O"):
        for m in arch.levels(op):
            out[(op, m.name)]["flags"] = flags[(op, m.name)]
            tile = out[(op, m.name)]["tile"]
            held = bits[op] if op != "O" else bits["O" if (m.name, "held") in partial else "Of"]
            work = bits[op] if op != "O" else bits["O" if partial & {(m.name, "held"), (m.name, "work")} else "Of"]
            out[(op, m.name)]["held_bits"] = tile * held
            out[(op, m.name)]["work_bits"] = tile * work
            if held_bits is not None:
                held_bits[m.name] = held_bits.get(m.name, 0) + tile * held
            if work_bits is not None:
                work_bits[m.name] = work_bits.get(m.name, 0) + tile * work
    return dict(out)


def real_macs(layer, arch, mapping):
    """(PE, iteration) pairs of the padded nest whose loop indices all lie inside the layer."""
    return sum(map(sum, Nest(layer, arch, mapping).real))

