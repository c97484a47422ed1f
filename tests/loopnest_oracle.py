"""Brute-force walker of a loop nest: the oracle for `costmodel.loopnest.reference`.

Walks every temporal iteration of the (padded) nest of a tiny layer, in order, innermost loop
fastest, as the hardware runs it: each cycle each PE takes its W and I from the lowest storage that
holds them and puts its partial sum where the hardware keeps it: in the MAC's accumulator if the
accelerator declares one (``accumulator_pj`` set; it then holds one output while it stays the
same), else in the lowest O memory level at *every* cycle (the MAC holds nothing: each cycle is a
new visit; the first visit of an output reads nothing back, later ones read the partial sum).
For every operand and every boundary between a storage (the MAC, then each memory level
of the operand) and the level above, it keeps which tile each instance of the lower storage holds,
identified by the indices of the operand-relevant loops that the tile does not contain (the temporal
loops above the boundary and the spatial loops the instance is replicated over). Whenever that
identity changes, the tile is (re)loaded. Counted per event, without the model's closed forms:

* W, I: each lower instance writes its tile; each upper instance reads the *distinct* tiles of the
  lower instances under it once (instances with equal identity share one read: multicast);
* O: the held tile is written up (the distinct tiles under each upper instance once: reduction),
  final if every iteration contributing to it has run and every PE contributing to its outputs sits
  under the same upper instance, else partial; the new tile is read back from above if this instance
  has held it before (first visits start from zero); at the end the held tiles are written up.

Tile sizes are counted from the index sets the tile's loops span (W, O: distinct index tuples; I:
the input rows times the input columns actually touched, each counted once: a 1x1 convolution at
stride 2 reads every other row, not the rows in between). One
transfer of k distinct tiles of e elements at b bits costs ceil(k*e*b / word_bits) accesses of a
memory. Capacities are bounded: `held_bits` reports the bits every memory instance holds (the tiles
of all its operands, O at partial precision if a partial sum ever leaves it) so that a test can check
the model's capacity verdict. Padding (non-divisible unrolling) is walked as the padded nest;
`real_macs` counts the (PE, cycle) pairs whose indices are all inside the layer. This file
deliberately shares no code with the model except `SpatialMapping.fit` and the accelerator's data.
"""

from __future__ import annotations

import itertools
import math
from collections import defaultdict

REL = {"W": {"K", "C", "FY", "FX", "G"}, "I": {"B", "C", "OY", "OX", "FY", "FX", "G"},
       "O": {"B", "K", "OY", "OX", "G"}}


def _cdiv(a, b):
    return -(-a // b)


def _tile_elems(op, layer, loops_inside):
    """Elements of op spanned by loops (dim, factor) (digits of their dims, any order)."""
    ext = defaultdict(lambda: 1)
    for d, f in loops_inside:
        ext[d] *= f
    ranges = {d: range(ext[d]) for d in ("B", "K", "C", "OY", "OX", "FY", "FX", "G")}
    if op == "W":
        return len(set(itertools.product(ranges["K"], ranges["C"], ranges["FY"], ranges["FX"], ranges["G"])))
    if op == "O":
        return len(set(itertools.product(ranges["B"], ranges["K"], ranges["OY"], ranges["OX"], ranges["G"])))
    iy = [layer.SY * oy + layer.DY * fy for oy in ranges["OY"] for fy in ranges["FY"]]
    ix = [layer.SX * ox + layer.DX * fx for ox in ranges["OX"] for fx in ranges["FX"]]
    return ext["B"] * ext["C"] * ext["G"] * len(set(iy)) * len(set(ix))


def walk(layer, arch, mapping, held_bits=None):
    """Count accesses by walking the nest. Returns {(op, memory): {reads, writes, fills, readbacks}}.

    ``held_bits``: optional dict, filled with memory name -> bits held per instance (all operands)."""
    sp = (mapping.spatial if mapping.spatial is not None else arch.spatial).fit(layer)
    loops = list(mapping.temporal.loops)
    n = len(loops)
    p = arch.precisions
    bits = {"W": p.get("W", layer.w_bits), "I": p.get("I", layer.i_bits), "O": p.get("O", layer.o_partial_bits),
            "Of": p.get("O_final", layer.o_bits)}
    # spatial components: (array dim, loop dim, factor); a PE is one index per component
    comps = [(a, d, f) for a, sl in sp.dims.items() for d, f in sl]
    pes = list(itertools.product(*[range(f) for _, _, f in comps]))
    all_dims = tuple(arch.array)
    # every temporal iteration's index vector, innermost loop fastest
    iters = [tuple(reversed(t)) for t in itertools.product(*[range(f) for _, f in reversed(loops)])]
    out = defaultdict(lambda: {"reads": 0, "writes": 0, "fills": 0, "readbacks": 0})

    no_acc = getattr(arch, "accumulator_pj", None) is None
    for op in ("W", "I", "O"):
        levels = arch.levels(op)
        b = mapping.boundaries[op]
        for lo in range(-1, len(levels) - 1):
            # the MAC without an accumulator keeps no partial sum: every cycle visits the O level
            every = op == "O" and lo < 0 and no_acc
            up = levels[lo + 1]
            lo_scope = all_dims if lo < 0 else levels[lo].private_to
            blo = 0 if lo < 0 else b[lo]
            lo_name = None if lo < 0 else levels[lo].name
            w_lo = None if lo < 0 else levels[lo].word_bits
            w_up = up.word_bits
            # instances: PE index projected on the components of the scope's array dims
            def key(pe, scope):
                return tuple(pe[i] for i, (a, _, _) in enumerate(comps) if a in scope)
            lo_inst = sorted({key(pe, lo_scope) for pe in pes})
            # tile of one lower instance: temporal loops below + spatial comps on dims outside its scope
            inside = loops[:blo] + [(d, f) for (a, d, f) in comps if a not in lo_scope]
            te = 1 if lo < 0 else _tile_elems(op, layer, inside)
            # identity parts
            rel_t = [i for i in range(blo, n) if loops[i][0] in REL[op]]
            lo_comp_idx = [i for i, (a, _, _) in enumerate(comps) if a in lo_scope]
            rel_s = [i for i in lo_comp_idx if comps[i][1] in REL[op]]
            up_idx = [i for i, (a, _, _) in enumerate(comps) if a in up.private_to]
            # a representative PE of each lower instance (its comps on the lower scope)
            rep = {}
            for pe in pes:
                rep.setdefault(key(pe, lo_scope), pe)
            inst_up = {k: tuple(rep[k][i] for i in up_idx) for k in lo_inst}
            inst_sid = {k: tuple(rep[k][i] for i in rel_s) for k in lo_inst}

            def ident(t, k):
                return (tuple(t[i] for i in rel_t), inst_sid[k])

            # O finality: iterations per temporal identity, and whether the reduction completes below `up`
            if op == "O":
                total = defaultdict(int)
                for t in iters:
                    total[tuple(t[i] for i in rel_t)] += 1
                o_rel_all = [i for i, (a, d, _) in enumerate(comps) if d in REL["O"]]
                spatial_complete = True
                for pe in pes:
                    same = [q for q in pes if all(q[i] == pe[i] for i in o_rel_all)]
                    if any(tuple(q[i] for i in up_idx) != tuple(pe[i] for i in up_idx) for q in same):
                        spatial_complete = False

            held = {k: None for k in lo_inst}
            seen = {k: set() for k in lo_inst}
            done = defaultdict(int)
            fills = 0
            readbacks = 0

            any_partial = [False]

            def write_up(keys, final_flags):
                if not all(final_flags[k] for k in keys):
                    any_partial[0] = True
                groups = defaultdict(set)
                for k in keys:
                    groups[inst_up[k]].add((held[k], final_flags[k]))
                for g in groups.values():
                    fl = {f for _, f in g}
                    assert len(fl) == 1
                    bb = bits["Of"] if fl.pop() else bits["O"]
                    out[(op, up.name)]["writes"] += _cdiv(len(g) * te * bb, w_up)
                for k in keys:
                    if lo >= 0:
                        out[(op, lo_name)]["reads"] += _cdiv(te * (bits["Of"] if final_flags[k] else bits["O"]), w_lo)

            for t in iters:
                changed = list(lo_inst) if every else [k for k in lo_inst if held[k] != ident(t, k)]
                if changed:
                    fills += 1
                    if op == "O":
                        old = [k for k in changed if held[k] is not None]
                        if old:
                            write_up(old, {k: done[held[k][0]] == total[held[k][0]] and spatial_complete for k in old})
                        back = defaultdict(set)
                        for k in changed:
                            new = ident(t, k)
                            if new in seen[k]:
                                back[inst_up[k]].add(new)
                                if lo >= 0:
                                    out[(op, lo_name)]["writes"] += _cdiv(te * bits["O"], w_lo)
                            seen[k].add(new)
                            held[k] = new
                        if any(back.values()):
                            readbacks += 1
                        for g in back.values():
                            out[(op, up.name)]["reads"] += _cdiv(len(g) * te * bits["O"], w_up)
                    else:
                        groups = defaultdict(set)
                        for k in changed:
                            held[k] = ident(t, k)
                            groups[inst_up[k]].add(held[k])
                            if lo >= 0:
                                out[(op, lo_name)]["writes"] += _cdiv(te * bits[op], w_lo)
                        for g in groups.values():
                            out[(op, up.name)]["reads"] += _cdiv(len(g) * te * bits[op], w_up)
                if op == "O":
                    done[held[lo_inst[0]][0]] += 1
            if op == "O":
                write_up(lo_inst, {k: done[held[k][0]] == total[held[k][0]] and spatial_complete for k in lo_inst})
            if lo >= 0 and held_bits is not None:
                pb = bits[op] if op != "O" else (bits["O"] if any_partial[0] else bits["Of"])
                held_bits[lo_name] = held_bits.get(lo_name, 0) + te * pb
            if lo >= 0:
                out[(op, lo_name)]["fills"] = fills
                if op == "O":
                    out[(op, lo_name)]["readbacks"] = readbacks
    return out


def real_macs(layer, arch, mapping):
    """(PE, cycle) pairs of the padded nest whose loop indices all lie inside the layer. A padded
    dim's index is the spatial index (innermost, array dims in order) plus the spatial extent times
    the temporal index (temporal loops innermost first)."""
    sp = (mapping.spatial if mapping.spatial is not None else arch.spatial).fit(layer)
    comps = [(d, f) for sl in sp.dims.values() for d, f in sl]
    loops = list(mapping.temporal.loops)
    n = 0
    for pe in itertools.product(*[range(f) for _, f in comps]):
        for t in itertools.product(*[range(f) for _, f in loops]):
            idx, scale = defaultdict(int), defaultdict(lambda: 1)
            for (d, f), i in zip(comps + loops, pe + t):
                idx[d] += i * scale[d]
                scale[d] *= f
            n += all(idx[d] < getattr(layer, d) for d in idx)
    return n


def macs_padded(layer, arch, mapping):
    sp = (mapping.spatial if mapping.spatial is not None else arch.spatial).fit(layer)
    return math.prod(f for _, f in mapping.temporal.loops) * math.prod(f for sl in sp.dims.values() for _, f in sl)
