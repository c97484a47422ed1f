"""LOMA's bottom-up memory allocation of one loop ordering (Symons, Mei, Verhelst, AICAS 2021).

Given the temporal loops innermost first, the memories are visited in the accelerator's order
(innermost first). At memory M each operand op it serves may take a *prefix* of its still
unallocated loops: the candidates are the prefixes, shortest first, up to the first whose tile no
longer fits M on its own (ZigZag stops at the first overflow). If M is op's top level, op must
take all remaining loops. Among the combinations of candidate prefixes of M's operands whose tiles
fit M *jointly* (sum of tile bits <= size_bits), the one with the least

    sum over op of  (product of op's loop factors left above the prefix) x (tile bits of the prefix)

is chosen; a top-level operand contributes 0. This is the number of bits to be moved into M from
the level above had every tile to be reloaded for each remaining iteration, the criterion of
ZigZag's ``MemoryAllocator.find_best_loop_combination`` (``zigzag/opt/loma/memory_allocator.py``:
"accesses = # unallocated iterations * size"). Ties go to the last combination in the order
where M's first operand varies slowest and each operand's prefixes go shortest to longest (ZigZag
compares with ``<=``), i.e. to longer prefixes of the later operands.

Tile bits are those of `costmodel.loopnest.reference` (footprint incl. the spatial loops inside one instance
of M; O at partial precision while an O-irrelevant loop is left above or an O-irrelevant spatial
loop is unreduced, else final). Unlike ZigZag, which fixes O's precision for all prefixes of one
memory, the precision here follows each prefix (the same rule the evaluator uses).

Look-ahead (beyond ZigZag): a combination is admitted only if the memories above M can still hold
the smallest tiles left to them: each operand taking no further loops below its top level and all
of them at its top (tiles only grow with the prefix, so this completion is the least any
allocation from here can place in each upper memory). Without it, a memory larger than the one
above it (the A100's 256 KiB of registers under 164 KiB of shared memory) takes tiles the upper
one cannot hold and the allocation of every ordering fails although valid mappings exist. An
allocation that succeeded without the look-ahead is unchanged by it (every combination it chose
had a completion); one that failed may now succeed.

``even=True`` admits only combinations in which all operands of M end at the same loop index (the
even-mapping constraint of ZigZag's ``is_valid_idx_combination_for_even_mapping_type``).
"""

from __future__ import annotations

import itertools
import math

from .reference import _Nest, evaluate, operand_bits
from .mapping import OPERANDS, RELEVANT, Mapping, MappingError, SpatialMapping, TemporalMapping

__all__ = ["allocate", "capacity_floor"]


def capacity_floor(layer, arch, spatial: SpatialMapping | None = None) -> str:
    """Why no mapping of ``layer`` with the unrolling ``spatial`` fits ``arch``, or "" if one does.

    The test mapping keeps every temporal loop at each operand's top memory level, so every lower
    level holds only the spatial tile of one of its instances: the smallest W and I tiles any
    mapping has (moving a loop down only grows a tile), and O at partial precision. A second test
    mapping moves the reduction loops innermost, below every O level, so O is at its final precision
    everywhere (its other smallest tile). If neither fits, the first's reason (a memory that
    overflows, `reference.evaluate`'s capacity rule, or a structural rule broken: a fan-out wider
    than the array dim) is returned with what to change; otherwise "" (a valid mapping exists: a
    search that found none stopped short).

    Args:
        layer: `Layer`. arch: `Accelerator`. spatial: the unrolling (None = ``arch.spatial``).
    """
    sp = (spatial if spatial is not None else arch.spatial).fit(layer)
    loops = tuple((d, f) for d, f in sp.temporal_bounds(layer).items() if f > 1)
    bounds = {op: (0,) * (len(arch.levels(op)) - 1) + (len(loops),) for op in OPERANDS}
    rep = evaluate(layer, arch, Mapping(sp, TemporalMapping(loops), bounds))
    if rep.valid:
        return ""
    # the other smallest O: the reduction loops innermost and below every O level, so O is held at its
    # final precision everywhere (W and I still at the top)
    red = tuple(x for x in loops if x[0] not in RELEVANT["O"])
    if red:
        order = red + tuple(x for x in loops if x[0] in RELEVANT["O"])
        b2 = dict(bounds, O=(len(red),) * (len(arch.levels("O")) - 1) + (len(order),))
        if evaluate(layer, arch, Mapping(sp, TemporalMapping(order), b2)).valid:
            return ""
    return (f"no mapping fits {arch.name}: even the smallest tiles (every temporal loop at "
            f"the top memory level, unrolling {sp.to_dict()}) break a rule: {rep.reason}. Give that memory "
            "more bits, unroll less, or lower the precisions")


def allocate(layer, arch, spatial: SpatialMapping | None, loops, even: bool = False,
             lookahead: bool = True) -> Mapping:
    """The LOMA allocation of one ordering.

    Args:
        layer: `Layer`. arch: `Accelerator`.
        spatial: the unrolling (None = ``arch.spatial``).
        loops: temporal loops innermost first, (dim, factor) pairs.
        even: restrict to even mappings.
        lookahead: admit only combinations the memories above can complete (module docstring);
            False: ZigZag's allocation (kept for the tests that show what the look-ahead changes).

    Returns:
        `Mapping` with per-operand boundaries.

    Raises:
        MappingError: if no allocation fits (a memory cannot even hold the tiles of the loops
            already below it, or a top level cannot hold everything).
    """
    arch = arch.for_layer(layer)  # a fused tile keeps operands on chip
    loops = tuple((d, f) for d, f in loops)
    sp = (spatial if spatial is not None else arch.spatial).fit(layer)
    nest = _Nest(layer, arch, sp, loops)
    bits = operand_bits(layer, arch)
    n = len(loops)
    # suffix products: rem[e] = product of factors of loops[e:]
    rem = [1] * (n + 1)
    for i in range(n - 1, -1, -1):
        rem[i] = rem[i + 1] * loops[i][1]
    start = {op: 0 for op in OPERANDS}
    bounds: dict[str, list[int]] = {op: [] for op in OPERANDS}
    tops = {op: arch.levels(op)[-1].name for op in OPERANDS}

    def tile_bits(op, e, mem):
        te = nest.tile(op, e, mem.private_to)
        if op == "O":
            partial = nest.o_partial_above(e) or nest.unreduced(mem.private_to)
            return te * (bits["O"] if partial else bits["O_final"])
        return te * bits[op]

    mems = list(arch.memories)

    def fits_above(i: int, ends: dict[str, int]) -> bool:
        """Whether the memories above memory i can hold the least tiles left to them (module docstring)."""
        for up in mems[i + 1:]:
            if up.size_bits is None or not set(up.operands) & set(ends):
                continue  # unbounded, or none of memory i's operands: its least tiles were checked below
            need = sum(tile_bits(op, n if tops[op] == up.name else ends.get(op, start[op]), up) for op in up.operands)
            if need > up.size_bits:
                return False
        return True

    for i, mem in enumerate(mems):
        ops = list(mem.operands)
        cands = []   # per op: list of (end index, bits, cost)
        for op in ops:
            s = start[op]
            top = tops[op] == mem.name
            c = []
            for e in range(s, n + 1):
                tb = tile_bits(op, e, mem)
                if mem.size_bits is not None and tb > mem.size_bits:
                    break
                c.append((e, tb, 0 if top else rem[e] * tb))
            if not c:
                raise MappingError(f"allocation: {mem.name} cannot hold the {op} tile of the loops below it "
                                   f"({tile_bits(op, s, mem)} bits > {mem.size_bits})")
            if top:
                if c[-1][0] != n:
                    raise MappingError(f"allocation: top level {mem.name} of {op} cannot hold all loops")
                c = [c[-1]]
            cands.append(c)
        best = None
        best_cost = math.inf
        for combo in itertools.product(*cands):
            if mem.size_bits is not None and sum(x[1] for x in combo) > mem.size_bits:
                continue
            if even and len({x[0] for x in combo}) > 1:
                continue
            cost = sum(x[2] for x in combo)
            if cost <= best_cost and (not lookahead or fits_above(i, {op: x[0] for op, x in zip(ops, combo)})):
                best_cost, best = cost, combo
        if best is None:
            raise MappingError(f"allocation: no combination of {ops} tiles fits {mem.name} "
                               f"({mem.size_bits} bits){' with an even mapping' if even else ''}")
        for op, x in zip(ops, best):
            bounds[op].append(x[0])
            start[op] = x[0]
    return Mapping(spatial, TemporalMapping(loops), {op: tuple(bounds[op]) for op in OPERANDS})
