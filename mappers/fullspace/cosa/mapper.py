"""CoSA: one-shot scheduling by a mixed-integer program over prime factors, solved with HiGHS.

Source: Q. Huang, M. Kang, G. Dinh, T. Norell, A. Kalaiah, J. Demmel, J. Wawrzynek, Y. S. Shao,
"CoSA: Scheduling by Constrained Optimization for Spatial Accelerators", ISCA 2021 (section III,
equations (1)-(12)); objective weights as in the authors' code (utilisation -0.1, compute 10,
traffic 1).

The MIP - one binary per prime factor and placement (the paper's X), buffer capacity (2) with a
sound bound on the input halo, spatial resources (3)-(4), and the weighted objective (12) of
utilisation (5), compute (6) and traffic (7)-(11) with the quadratic term of (10) linearised
exactly - is built by `mappers.fullspace.cosa.model.build_model`; that
module's docstring gives the formulation. This module solves it with HiGHS (`solve_model`),
decodes an assignment into a `Mapping` (`decode`, `decode_loma`, `best_decode`) and runs the whole
as a mapper (`CosaMapper`).

**Version 2** (issue 13; each change has a param to switch it off). Measured with
``python scripts/bench_cosa.py --compare`` (ResNet-50's 24 unique layers on simba_like, latency;
geomean speed-up over random5 / over hybrid; cosa's latency over the loop-order `random` mapper's on
layer3.0.conv2, layer1.0.conv2, layer4.x.conv1): version 1 1.92x / 0.60x / 2.10; version 2 4.14x /
1.29x / 1.067, HiGHS mean 1.4 s, max 4.8 s. Each change off alone (the others on):

* port-width rows (``port_width``, cosa_model): off 2.45x / 0.77x / 1.25 - kept;
* DRAM ranks chained after the global buffer's, DRAM loops decoded by rank, no charge of every DRAM
  loop to every operand (``dram_ranks``, 3 ranks): off 3.41x / 1.07x / 1.067 - kept; 7 ranks: the
  same latencies, max solve 23.7 s;
* one MIP level per PE buffer, accumulation < input < weight (``split_levels``): off 4.08x /
  1.28x / 1.083 - kept (small gain); ordering the PE levels as in the preset (accumulation < weight
  < input) instead gave 2.94x / 0.92x;
* decoding both ways (``decode``): even only 4.10x / 1.28x / 1.096, LOMA only 4.13x / 1.29x /
  1.074 - kept;
* innermost-reuse tie-break (``reuse_eps``; not in the issue): off 4.03x / 1.26x / 1.067 - kept.

Energy objective: version 2's energy is 1.57x lower than version 1's in geomean over the same layers.
Not kept (tried): halving the capacity of the buffers that can hold two elements (to plan for
double buffering, which the latency model rewards; measured with 2 DRAM ranks): 3.40x / 1.06x /
1.11.

**Version 3** (issue 13; ``solves``). Our latency model stalls what CoSA's objective (12) cannot
see: the one-weight register of a MAC (simba_like ``weight_reg``) is single-buffered, so every refill
(64 distinct weights of a PE x 8 bit over the weight buffer's 64 bit/cycle port = 8 cycles) stalls
all but one cycle unless the register keeps its weight for many cycles (version 2: stall = the whole
compute time on layer2.0.downsample, half of it on layer3.x.conv1); and a buffer more than half full
cannot be double-buffered, so its refills overlap compute only in the last pass. Two MIP changes model
this (`build_model`): the refill-stall term z >= log(1 + t / T) in log-cycles, weight w x w_compute
(`mappers.fullspace.cosa.stall`: t refill cycles, T the register's period, both linear in the logs,
softplus by 29 tangents), and ``halve``: the capacity rows (2) of the named memories count half their
size. Neither is right for every layer (the stall term can push partial sums out of the global buffer
into DRAM, halving can squeeze reuse), so the mapper solves a few variants - one work unit each,
entry ``"w"`` or ``"w:mem+mem"`` of ``solves`` - decodes each both ways and keeps the best under the
problem's objective (`reduce`; ties to the earlier unit; from the CLI, e.g.
``--param 'solves=["0"]'`` for version 2's single solve). The default, `DEFAULT_SOLVES`, is version 2's
objective first (so version 3 is never worse than version 2, on any objective), then w = 1 with the
weight buffer halved, then w = 1 with all four buffers above the registers halved. Measured with
``python scripts/bench_cosa.py --compare`` (the figures of Version 2 above; longest solve = the longest single HiGHS solve):
version 3 4.54x / 1.42x / 1.000, longest solve 4.1 s, per layer about 4 s of wall time for 3 solves
(version 2: 4.14x / 1.29x / 1.067, 3.5 s). Single solves, each alone: w = 1: 3.99x / 1.25x / 1.256;
w = 0.3: 4.33x / 1.36x / 1.043; w = 3: 3.32x; w = 1 with the weight buffer halved: 4.13x / 1.29x /
1.071; w = 0 with it halved: 4.00x; w = 0 / 1 with all four halved: 3.38x / 3.92x. Sets: {0, 1:wb}
4.52x / 1.42x / 1.043 (2 solves); the default 4.54x / 1.42x / 1.000; adding 0.3 as a fourth solve
4.58x / 1.43x / 1.000 (longest solve 5.6 s; not kept: a third more time for 0.8 %). The stall weight
0.3 alone is the best single solve but loses layer2.x.conv2 and layer3.x.conv2 to w = 1. Remaining
gaps to the bound max(MACs / 1024, compulsory DRAM traffic x 8 bit / 64 bit per cycle) (13 of the 24
layers are within 1 % of it): layer2.0.conv2 1.50x, layer3.0.conv2 1.40x (stalls of the accumulation
buffer and DRAM), layer4.0.downsample 1.27x (hybrid is 21 % faster: a full, single-buffered weight
buffer fed from DRAM), layer4.0.conv1 1.24x, layer3.0.downsample 1.22x; the log-traffic objective
still weighs all operands alike (24-bit partial sums spilled to DRAM count as 8-bit inputs).

**Version 4: spatial hints** (issue 21; ``hint``). When the accelerator has a ``[spatial_hint]``
(`costmodel.loopnest.hint.SpatialHint`) the MIP obeys it (`mappers.fullspace.cosa.hint`): a prime
factor of dim d has no spatial placement on array dim a unless d is in ``hint.allowed(a)``; binaries
per (a, d) cap the distinct dims on a at ``hint.max_mixed(a)`` (only where more could reach a); and
``min_utilization`` is one row on the log of the spatial factors' product (a layer too small to
reach it solves as "infeasible"). Both decodings keep the MIP's unrolling, so every mapping returned
obeys the hint. ``hint=False`` ignores it (the paper's unconstrained set-up); an accelerator without
a hint solves exactly the model of version 3.
Measured with ``python scripts/bench_cosa.py --compare`` (ResNet-50's 24 unique layers on simba_like,
latency; every mapper under the preset's hint): geomean speed-up over random5 8.09x, over hybrid
2.11x (without hints - version 3 and the baselines' version 1 - 4.47x / 1.40x). cosa's own latency is
1.048x version 3's in geomean: conv1 4.49x slower (C = 3 on D3 and K = 64 on D4, D1, D2 are all the
hint lets it unroll: 192 of 1024 MACs busy), four 3 x 3 layers 4-14 % faster (the MIP's objective
misjudges some unrollings the hint forbids), layer3.x.conv2 3 % slower, the rest equal; random5
is 1.90x and hybrid 1.58x slower (fewer of their random primitives land on the array). Energy:
4.06x / 1.55x (without hints 3.13x / 1.32x). ``--nets`` (latency, over random5): ResNeXt-50 8.50x
(3.76x), DeepBench OCR 18.8x (3.91x), face 13.3x (3.94x); cosa itself is 1.27x slower on ResNeXt-50,
mostly its grouped 3 x 3 convolutions: simba_like's hint unrolls no G, so layer1.0.conv2 (K = C = 4
per group) keeps 16 MACs busy, 8.6x slower (with G also allowed on D1 and D2: 1.02x of the
unconstrained latency).

**Decoding.** `decode` cuts each memory's tile where the MIP put it (the even cut); `decode_loma`
keeps the decoded spatial unrolling and loop order and lets LOMA's bottom-up allocation
(`costmodel.loopnest.allocation.allocate`) choose the boundaries; with ``decode="best"`` both are
evaluated and the better under the problem's objective is kept (``extra["decode"]`` says which).

**Simba-like sizes.** `simba_like` (costmodel/presets/simba_like.toml) follows the paper's Table V:
4 x 4 PEs of 64 8-bit MACs, 64 B registers, 3 KB accumulation buffer (24-bit partial sums), 32 KB
weight buffer and 8 KB input buffer per PE, a 128 KB global buffer. The authors' released
``configs/arch/simba.yaml`` (ucb-bar/cosa) differs: per PE 8 accumulation buffers of 64 x 24 bit
(1.5 KB), 8 weight buffers of 16 KB (128 KB) and one 4 KB input buffer, and a 64 KB global buffer
(registers: 1 B per MAC, as Table V). We follow Table V, the architecture the paper reports.

**Padding.** A dimension whose bound has a prime factor p > ``pad_primes_over`` is padded to
bound / p * (p + 1) (p + 1 is even, so it splits). The MIP and the mapping are built on the padded
layer; the decoded mapping is then fitted to the real layer (outermost temporal factor of the dim
rounded down so the factors cover ceil(bound / spatial)); if that is impossible, the padded layer
is evaluated (``extra["padded_eval"]``) - padding costs up to (p + 1) / p more MACs, cycles and
traffic on that dimension. Default: no padding.

**Latency ties** (issue 38; ``latency_ties`` = 1). The MIP never sees our latency (its objective
(12) is CoSA's weighted surrogate, and HiGHS returns one solution per solve), so the rule applies where
decoded mappings costed by our model are compared: the decodes of one solve (`best_decode`: equal
latencies by energy, then DRAM bits, `mappers.fullspace.ties.beats`) and the solves (`reduce`: equal
latencies by energy, `mappers.base.best_of`; e.g. a compute-bound layer whose solves all reach the
compute bound). Energy and EDP results are those of version 4.

Outcomes: optimal, time_limit (the incumbent if any, else value inf), infeasible (value inf),
error (value inf); the solver never raises out of `CosaMapper.run`.
"""

from __future__ import annotations

import math
import os
import sys
import time
from dataclasses import replace
from typing import Any, Mapping as _Mapping, Sequence

import numpy as np

from costmodel.loopnest.allocation import allocate
from costmodel.loopnest.reference import CostReport, evaluate
from costmodel.loopnest.mapping import (OPERANDS, SPATIAL_DIMS, Mapping, MappingError, SpatialMapping,
                                        TemporalMapping)
from mappers.base import (ExtraColumn, LayerMapper, LayerProblem, LoopNestDetail, Param, SearchResult, WorkUnit,
                          best_of, objective_value)
from mappers.fullspace.cosa.model import CosaModel, build_model
from mappers.fullspace.ties import beats

__all__ = ["CosaMapper", "COSA", "solve_model", "decode", "decode_loma", "best_decode", "DECODE_ORDER",
           "DEFAULT_SOLVES", "parse_solve"]

#: The default solves (work units) of version 3, in tie-break order: version 2's objective; with the
#: refill-stall term and room for a double-buffered weight buffer; with the stall term and every
#: bounded buffer above the registers halved (module docstring, Version 3).
DEFAULT_SOLVES = ("0", "1:weight_buffer", "1:acc_buffer+weight_buffer+input_buffer+global_buffer")

#: Order (innermost first) of the merged loops of one dim at a level without permutation ranks.
DECODE_ORDER = ("FX", "FY", "OX", "OY", "C", "K", "B", "G")


def parse_solve(spec: str) -> tuple[float, tuple[str, ...]]:
    """Parse one entry of the ``solves`` param, ``"w"`` or ``"w:mem+mem"``, into (refill-stall
    weight w >= 0, relative to w_compute; names of the memories whose capacity is halved). Names
    the accelerator lacks are ignored by `build_model`. Raises ValueError for a malformed entry."""
    w, _, mems = str(spec).partition(":")
    try:
        wf = float(w)
    except ValueError:
        raise ValueError(f"cosa solve {spec!r}: expected 'w' or 'w:mem+mem' with w a number >= 0") from None
    if not math.isfinite(wf) or wf < 0:
        raise ValueError(f"cosa solve {spec!r}: the stall weight must be a finite number >= 0")
    return wf, tuple(m for m in mems.split("+") if m)


def _quiet_highs(highspy):
    """A new ``highspy.Highs()`` whose start-up banner ("Running HiGHS 1.x ...") is kept off stdout.

    HiGHS prints the banner from C when a process builds its first solver, before any option
    (``output_flag``, ``log_to_console``) can be set, so file descriptor 1 points at the null
    device while the object is built (C's buffers flushed before it is restored). Then output is
    switched off for everything the solver would print later. Raises what ``Highs()`` raises."""
    import ctypes
    if sys.stdout is not None:
        sys.stdout.flush()
    try:
        saved = os.dup(1)
    except OSError:  # no file descriptor 1 (a daemon): nothing to keep clean
        saved = -1
    if saved < 0:
        h = highspy.Highs()
    else:
        null = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(null, 1)
            h = highspy.Highs()
            ctypes.CDLL(None).fflush(None)
        finally:
            os.dup2(saved, 1)
            os.close(saved)
            os.close(null)
    h.setOptionValue("output_flag", False)
    h.setOptionValue("log_to_console", False)
    return h


def solve_model(model: CosaModel, time_limit_s: float = 60.0, mip_gap: float = 1e-4):
    """Solve with HiGHS (threads=1, no output: `_quiet_highs`).

    Returns:
        (status, choice or None, mip_objective, mip_gap, solver_s, col_values or None); status one
        of "optimal", "time_limit", "infeasible", "error". Never raises for solver outcomes.
    """
    import highspy
    from scipy.sparse import coo_matrix
    t0 = time.perf_counter()
    try:
        h = _quiet_highs(highspy)
        h.setOptionValue("threads", 1)
        h.setOptionValue("time_limit", float(time_limit_s))
        h.setOptionValue("mip_rel_gap", float(mip_gap))
        h.setOptionValue("random_seed", 0)
        lp = highspy.HighsLp()
        n, m = model.num_col, model.num_row
        lp.num_col_, lp.num_row_ = n, m
        lp.col_cost_ = np.asarray(model.c, dtype=float)
        lp.col_lower_ = np.asarray(model.lb, dtype=float)
        lp.col_upper_ = np.asarray(model.ub, dtype=float)
        lp.row_lower_ = np.asarray(model.rlo, dtype=float)
        lp.row_upper_ = np.asarray(model.rhi, dtype=float)
        lp.offset_ = float(model.offset)
        A = coo_matrix((model.vals, (model.rows, model.cols)), shape=(m, n)).tocsc()
        A.sum_duplicates()
        lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
        lp.a_matrix_.start_ = A.indptr.astype(np.int32)
        lp.a_matrix_.index_ = A.indices.astype(np.int32)
        lp.a_matrix_.value_ = A.data.astype(float)
        lp.a_matrix_.num_col_, lp.a_matrix_.num_row_ = n, m
        lp.integrality_ = [highspy.HighsVarType.kInteger if i else highspy.HighsVarType.kContinuous
                           for i in model.integer]
        h.passModel(lp)
        h.run()
        st = h.getModelStatus()
        info = h.getInfo()
        S = highspy.HighsModelStatus
        has_sol = info.primal_solution_status == 2  # kSolutionStatusFeasible
        if st == S.kOptimal:
            status = "optimal"
        elif st == S.kTimeLimit:
            status = "time_limit"
        elif st in (S.kInfeasible, S.kUnboundedOrInfeasible):
            status = "infeasible"
        else:
            status = "error"
        secs = time.perf_counter() - t0
        if not has_sol or status in ("infeasible", "error"):
            return status, None, math.inf, math.inf, secs, None
        x = np.asarray(h.getSolution().col_value)
        choice = [int(np.argmax([x[j] for j in cols])) for cols in model.xcol]
        return status, choice, float(info.objective_function_value), float(info.mip_gap), secs, x
    except Exception:  # noqa: BLE001 - solver failures become rows
        return "error", None, math.inf, math.inf, time.perf_counter() - t0, None


def decode(model: CosaModel, choice: Sequence[int]) -> Mapping:
    """The even-cut `Mapping` of an assignment (``choice[f]`` indexes ``model.placements[f]``):
    spatial per array dim (factors of one dim merged), temporal loops innermost first by MIP level
    (ranked levels - global buffer, DRAM - in rank order, the factors of one dim at one rank
    merged; levels without ranks in `DECODE_ORDER`), boundaries per operand = number of loops at
    levels <= the level of each of its memories (each memory's tile is cut exactly where the MIP put
    it). Raises `MappingError` only for an inconsistent model."""
    arch = model.arch
    pls = [model.placements[f][k] for f, k in enumerate(choice)]
    sp: dict[str, dict[str, int]] = {a: {} for a in arch.array}
    slots: dict[tuple[int, int], dict[str, int]] = {}
    for (d, p), pl in zip(model.factors, pls):
        if pl.kind == "s":
            sp[pl.where][d] = sp[pl.where].get(d, 1) * p
        else:
            s = slots.setdefault((pl.where, pl.rank), {})
            s[d] = s.get(d, 1) * p
    spatial = SpatialMapping({a: tuple((d, f) for d, f in sorted(v.items(), key=lambda x: SPATIAL_DIMS.index(x[0])))
                              for a, v in sp.items() if v})
    loops: list[tuple[str, int]] = []
    count_at_level: dict[int, int] = {}
    for g in range(len(model.groups)):
        ranks = sorted(r for (gg, r) in slots if gg == g)
        for r in ranks:
            s = slots[g, r]
            for d in DECODE_ORDER:
                if s.get(d, 1) > 1:
                    loops.append((d, s[d]))
        count_at_level[g] = len(loops)
    gidx = {mi: g for g, ms in enumerate(model.groups) for mi in ms}
    bnd = {}
    for op in OPERANDS:
        bnd[op] = tuple(count_at_level[gidx[arch.memories.index(m)]] for m in arch.levels(op))
        bnd[op] = bnd[op][:-1] + (len(loops),)
    return Mapping(spatial, TemporalMapping(tuple(loops)), bnd)


def decode_loma(model: CosaModel, choice: Sequence[int]) -> Mapping:
    """The assignment's spatial unrolling and loop order (those of `decode`) with the memory
    boundaries chosen by LOMA's bottom-up allocation (`costmodel.loopnest.allocation.allocate`,
    uneven) instead of the MIP's levels. Raises `MappingError` if no allocation fits."""
    even = decode(model, choice)
    return allocate(model.layer, model.arch, even.spatial, even.temporal.loops)


def best_decode(model: CosaModel, choice: Sequence[int], objective: str, ways=("even", "loma")):
    """Decode ``choice`` each of ``ways`` ("even": `decode`, "loma": `decode_loma`), fit to the real
    layer if padded, evaluate (`costmodel.loopnest.reference.evaluate`) and keep the best under
    ``objective`` ("energy", "latency", "edp"); under latency, equal latencies by energy, then DRAM
    bits (`mappers.fullspace.ties.beats`); remaining ties go to the earlier way.

    Returns:
        (way, mapping, layer evaluated, CostReport); mapping None (report None) if no way decodes.
    """
    best: tuple[str | None, Mapping | None, Any, CostReport | None] = (None, None, model.real_layer, None)
    bval = math.inf
    for way in ways:
        try:
            m = decode(model, choice) if way == "even" else decode_loma(model, choice)
        except MappingError:
            continue
        layer = model.real_layer
        if model.padded:
            fitted = _fit_padded(m, model)
            if fitted is None:
                layer = model.layer
            else:
                m = fitted
        rep = evaluate(layer, model.arch, m)
        val = objective_value(rep, objective)
        if best[1] is None or beats(val, rep, bval, best[3], objective, model.arch):
            best, bval = (way, m, layer, rep), val
    return best


def _fit_padded(mapping: Mapping, model: CosaModel) -> Mapping | None:
    """Fit a mapping of the padded layer to the real one (None if the factors cannot cover it)."""
    real = model.real_layer
    assert mapping.spatial is not None  # decode and decode_loma give every mapping its unrolling
    sp = mapping.spatial.fit(real)
    need = sp.temporal_bounds(real)
    loops = list(mapping.temporal.loops)
    for d in model.padded:
        idx = [i for i, (dd, _) in enumerate(loops) if dd == d]
        inner = math.prod(loops[i][1] for i in idx[:-1])
        if not idx:
            continue
        if need[d] % inner:
            return None
        loops[idx[-1]] = (d, need[d] // inner)
    m = Mapping(sp, TemporalMapping(tuple(loops)), mapping.boundaries)
    try:
        m.check(real, model.arch)
    except MappingError:
        return None
    return m


class CosaMapper(LayerMapper):
    """CoSA's MIP scheduler (HiGHS), a few MIP variants per problem (module docstring, Version 3).

    One work unit per entry of ``solves`` (kind "mip", ``budget["solve"]`` the entry): `run` builds
    that MIP (`build_model`), solves it (`solve_model`), decodes and evaluates the mapping both ways
    and keeps the better (`best_decode`; ``evaluations`` = decodes evaluated); `reduce` keeps the
    best unit.
    """

    name = "cosa"
    version = "4"
    latency_ties = 1  # decodes and solves: latency ties broken by energy (module docstring, Latency ties)
    kind = "loopnest"
    columns = (ExtraColumn("solver_status", "str", "HiGHS model status of the solve", key="status"),
               ExtraColumn("solver_s", "float", "HiGHS wall time, s (measured, not deterministic)"),
               ExtraColumn("mip_gap", "float", "relative MIP gap at the end of the solve"),
               ExtraColumn("mip_objective", "float", "the MIP's objective value (CoSA Eq. 13)"))
    params = (
        Param("w_util", "float", -0.1, "weight of buffer utilisation (5) in the minimised objective (12)"),
        Param("w_compute", "float", 10.0, "weight of compute (6) in (12)"),
        Param("w_traffic", "float", 1.0, "weight of traffic (11) in (12)", low=0.0),
        Param("time_limit_s", "float", 60.0, "HiGHS time limit per solve, seconds", low=0.0),
        Param("mip_gap", "float", 1e-4, "HiGHS relative MIP gap", low=0.0, high=1.0),
        Param("pad_primes_over", "int", None, "pad loop bounds' prime factors above this (p -> p+1); "
              "absent = no padding", low=2),
        Param("decode", "str", "best", "even: the MIP's levels; loma: LOMA's allocation of the decoded "
              "order; best: both, keep the better under the objective", choices=("best", "even", "loma")),
        Param("port_width", "bool", True, "port-width rows (spatial factors inside the PE x precision <= "
              "the innermost buffer's bandwidth)"),
        Param("dram_ranks", "int", 3, "DRAM permutation ranks chained after the global buffer's (0: none, "
              "every DRAM loop charged to every operand, as the paper's code)", low=0),
        Param("split_levels", "bool", True, "one MIP level per PE buffer (False: one merged level)"),
        Param("reuse_eps", "float", 0.002, "weight of the innermost-reuse tie-break (0 = off)", low=0.0),
        Param("solves", "list[str]", list(DEFAULT_SOLVES), "one MIP solve (work unit) per entry 'w' or "
              "'w:mem+mem': refill-stall weight w (x w_compute; 0 = off) and the memories whose capacity row "
              "counts half their size; the best decoded result under the objective is kept (ties: earlier)"),
        Param("hint", "bool", True, "obey the accelerator's [spatial_hint] (allowed loop dims per array dim, "
              "max dims at once, min utilisation) in the MIP; False: any unrolling", omit_default=True),
    )

    def units(self, problem: LayerProblem, params: _Mapping[str, Any]) -> list[WorkUnit]:
        """One MIP solve per entry of ``params["solves"]`` (in order; each parsed by `parse_solve`,
        which raises ValueError for a malformed entry)."""
        for spec in params["solves"]:
            parse_solve(spec)
        return [WorkUnit(kind="mip", spec={"solve": spec}) for spec in params["solves"]]

    def reduce(self, results: Sequence[SearchResult]) -> SearchResult:
        """The best solve's result (under latency, equal latencies by energy; remaining ties: the
        earlier unit; `mappers.base.best_of`), with
        ``extra["solver_s_max"]`` / ``["solver_s_total"]`` the longest / summed HiGHS time of all
        solves and ``extra["solve_values"]`` every solve's objective value, in unit order."""
        best = best_of(results, bool(self.latency_ties))
        secs = [r.extra.get("solver_s", 0.0) for r in results]
        return replace(best, extra=dict(best.extra, solver_s_max=max(secs), solver_s_total=sum(secs),
                                        solve_values=[r.value for r in results]))

    def search_shortfall(self, problem: LayerProblem, result: SearchResult, params: _Mapping[str, Any]) -> str:
        """Why the MIP gave no valid mapping, by HiGHS's status (time limit, infeasible model,
        solver error) or the decode's reason."""
        ex = result.extra or {}
        status = ex.get("status")
        if status == "time_limit":
            return (f"HiGHS stopped at time_limit_s = {params.get('time_limit_s')} s before it found a feasible "
                    "schedule; raise time_limit_s")
        if status == "infeasible":
            return ("the CoSA MIP has no solution under this accelerator's constraints (spatial hint, "
                    "min_utilization, memory capacities as the MIP counts them); relax them, e.g. hint = false "
                    "or a lower min_utilization")
        if status == "error":
            return f"HiGHS failed: {ex.get('error', 'unknown error')}"
        return super().search_shortfall(problem, result, params)

    def run(self, problem: LayerProblem, unit: WorkUnit, params: _Mapping[str, Any]) -> SearchResult:
        """Solve and evaluate (``params`` resolved). ``problem.spatial`` and ``problem.even`` are
        ignored (CoSA chooses the unrolling, within ``problem.arch.spatial_hint`` unless
        ``params["hint"]`` is False; the boundaries are the MIP's even cut or LOMA's
        allocation, per ``params["decode"]``). Never raises for solver outcomes."""
        p = params
        t0 = time.perf_counter()
        inf = math.inf
        spec = unit.spec.get("solve", p["solves"][0])
        stall_w, halve = parse_solve(spec)
        extra: dict[str, Any] = {"solve": spec}
        try:
            model = build_model(problem.layer, problem.arch, p["w_util"], p["w_compute"], p["w_traffic"],
                                p["pad_primes_over"], port_width=p["port_width"], dram_ranks=p["dram_ranks"],
                                split_levels=p["split_levels"], reuse_eps=p["reuse_eps"],
                                stall_w=stall_w, halve=halve,
                                hint=problem.arch.spatial_hint if p.get("hint", True) else None)
            status, choice, obj, gap, secs, _ = solve_model(model, p["time_limit_s"], p["mip_gap"])
            extra.update(status=status, solver_s=secs, mip_gap=gap, mip_objective=obj,
                         n_cols=model.num_col, n_rows=model.num_row)
        except Exception as e:  # noqa: BLE001
            status, choice = "error", None
            extra.update(status="error", solver_s=0.0, mip_gap=inf, mip_objective=inf, error=repr(e))
        if choice is None:
            return SearchResult(self.name, "mip", problem.objective, inf, inf, inf, 0,
                                time.perf_counter() - t0, extra=extra)
        ways = ("even", "loma") if p["decode"] == "best" else (p["decode"],)
        way, mapping, layer, rep = best_decode(model, choice, problem.objective, ways)
        extra["padded"] = dict(model.padded)
        extra["decode"] = way
        if mapping is None:
            extra["reason"] = "no decode fits"
            return SearchResult(self.name, "mip", problem.objective, inf, inf, inf, 0,
                                time.perf_counter() - t0, extra=extra)
        if layer is model.layer and model.padded:
            extra["padded_eval"] = True
        extra["mapping"] = mapping.to_dict()
        if not rep.valid:
            extra["reason"] = rep.reason
            return SearchResult(self.name, "mip", problem.objective, inf, inf, inf, len(ways),
                                time.perf_counter() - t0, extra=extra,
                                detail=LoopNestDetail(tuple(mapping.temporal.loops)))
        return SearchResult(self.name, "mip", problem.objective, objective_value(rep, problem.objective),
                            float(rep.energy_pj), float(rep.latency_cycles), len(ways), time.perf_counter() - t0,
                            extra=extra, detail=LoopNestDetail(tuple(mapping.temporal.loops)))


COSA = CosaMapper()
