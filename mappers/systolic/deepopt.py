"""DeepOpt: layer-specific optimal scheduling (LOS) and fixed scheduling (FS) on a J x K systolic
array, and the network performance metric (PM) used for hardware allocation.

Source: S. D. Manasi and S. S. Sapatnekar, "DeepOpt: Optimized Scheduling of CNN Workloads for
ASIC-based Systolic Deep Learning Accelerators", ASP-DAC 2021 (sections 4.1-4.2, Tables 3-5).

* The cost of each (hardware point, layer, branch) comes from `costmodel.systolic.evaluate`.
* PMs (section 4.1): E, D, E*D, E^2*D, E*D^2 with E the energy (pJ) and D the delay (cycles).
* LOS: for every layer the branch minimising the layer's PM; the network PM is, as DeepOpt
  computes it, the sum over layers of those per-layer minima (``network_pm="sum"``).
* FS: one branch for all layers; network PM = sum over layers of that branch's layer PM.
* ``network_pm="product"``: PM of the network totals, (sum E)^a * (sum D)^b. It is not separable
  per layer; it is solved exactly by a Pareto front of (sum E, sum D) built layer by layer (any
  optimum of a function increasing in both sums lies on that front).
* Footnote 1 of the paper: ZiXYZo is only considered for delay-based PMs where the filter SRAM
  holds its working set (``SystolicResult.delay_ok``); for PM E every branch is allowed.

Latency ties (issue 38; version 2). Under the delay PM D many branches of a layer tie (on the
area16mm2 grid 2.6 M of the 11.2 M (point, layer) pairs, 0.67 M of them with different energies): LOS
takes, of the branches of least delay, the one of least energy (DeepOpt's code takes the first
branch of equal PM). The PM values are unchanged (a tie is a tie); the LOS energy of the D rows and
the branches of their ``layers`` table may be lower. The product PM already does so (the Pareto
front keeps, of equal delays, the least energy). The other PMs (E, ED, E2D, ED2) are untouched. The
hardware points are not reordered: which point of equal D is the optimum is the report's choice
(smaller area first), the allocation, not the schedule.

Costs are per image: a layer of batch B (DeepOpt's FC layers, batch 16) contributes 1/B of its
cost (`evaluate_per_image`). Repeated layers (``Network.repeats``) count as that many executions: sum PMs add r times the
layer's PM, and the product PM lets each execution pick its own branch.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Any, Mapping, Sequence

import numpy as np

from costmodel.systolic.points import HW_COLUMNS, SystolicPoints
from costmodel.systolic import BRANCHES, SystolicParams, SystolicResult, evaluate
from costmodel.workload import Network
from mappers.base import AllocationDetail, Columns, Mapper, Param, SearchResult, WorkUnit, best_of, concat_columns

__all__ = ["PMS", "pm_value", "los", "fixed_scheduling", "product_pm", "pareto_front", "AllocationProblem", "evaluate_per_image",
           "DeepOptMapper", "DEEPOPT"]

#: PM name -> (exponent of E, exponent of D).
PMS: dict[str, tuple[int, int]] = {"E": (1, 0), "D": (0, 1), "ED": (1, 1), "E2D": (2, 1), "ED2": (1, 2)}


def pm_value(energy_pj, cycles, pm: str):
    """PM of energy E (pJ) and delay D (cycles): E^a * D^b with (a, b) = `PMS[pm]`.

    Raises:
        KeyError: unknown PM name.
    """
    a, b = PMS[pm]
    e = np.asarray(energy_pj, dtype=np.float64)
    d = np.asarray(cycles, dtype=np.float64)
    out = np.ones(np.broadcast(e, d).shape)
    if a:
        out = out * e**a
    if b:
        out = out * d**b
    return out


def evaluate_per_image(layers, J, K, fsram_kib, isram_kib, psram_kib,
                       params: SystolicParams = SystolicParams()) -> SystolicResult:
    """`costmodel.systolic.evaluate`, with each layer's energy and cycles per image.

    A layer with batch B (DeepOpt's FC layers run at batch 16) costs 1/B of one execution per
    image, as the authors' code counts it; DeepOpt's PMs are per image ("the Delay represents the
    per image inference time", section 4.1). Shapes (P, L, 5); energy pJ, delay cycles.
    """
    res = evaluate(layers, J, K, fsram_kib, isram_kib, psram_kib, params)
    b = np.array([l.B for l in layers], dtype=np.float64)[None, :, None]
    if np.all(b == 1):
        return res
    return SystolicResult(energy_pj=res.energy_pj / b, cycles=res.cycles / b, delay_ok=res.delay_ok)


def _masked_layer_pm(res: SystolicResult, pm: str) -> np.ndarray:
    """Layer PMs of shape (P, L, 5), +inf where footnote 1 excludes the branch."""
    val = pm_value(res.energy_pj, res.cycles, pm)
    if PMS[pm][1]:  # delay-based PM
        val = np.where(res.delay_ok, val, np.inf)
    return val


def infeasible_reasons(res: SystolicResult, layers, pts: SystolicPoints, pm: str,
                       value: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Status and reason of each point's network PM ``value`` (P,): "ok" and "" where it is finite,
    else "infeasible" and why, naming the first layer that no LOS branch can run on the point:
    the array has fewer rows J than the filter's width S (section 3.1: a filter row is mapped on
    J rows), no branch's blocks fit the SRAMs (`costmodel.systolic` feasibility: one R x S x C_uv x
    F_uv filter block, the R-row ifmap window), or, for a delay PM, only ZiXYZo fits and its delay
    is undefined (footnote 1: the filter SRAM cannot hold R x S x C x F_uv filters)."""
    status = np.where(np.isfinite(value), "ok", "infeasible").astype(object)
    why = np.full(len(value), "", dtype=object)
    bad = np.flatnonzero(~np.isfinite(value))
    if not bad.size:
        return status, why
    fits = np.isfinite(res.energy_pj[bad])                    # (n, L, 5)
    runs = fits & res.delay_ok[bad] if PMS[pm][1] else fits
    first = np.argmax(~runs.any(axis=2), axis=1)              # the first layer with no branch
    J = np.asarray(pts.J)[bad]
    for n, (i, li) in enumerate(zip(bad, first)):   # the point's own sizes are in its row (J, *_kib)
        lay = layers[li]
        head = f"layer {lay.name} ({lay.FY}x{lay.FX} filter, C = {lay.C}) fits no LOS branch"
        if J[n] < lay.FX:
            why[i] = (f"{head}: the array has fewer rows J than the filter width S = {lay.FX} "
                      f"(J >= {lay.FX} needed)")
        elif fits[n, li].any():
            why[i] = (f"{head} with a known delay: only ZiXYZo fits and the filter SRAM cannot hold all "
                      "R x S x C x F_uv filters (footnote 1); use PM E or a larger filter SRAM")
        else:
            why[i] = (f"{head}: no branch's blocks fit the SRAMs (the filter SRAM must hold one R x S x C_uv x "
                      "F_uv block, the ifmap SRAM the R-row window); larger SRAMs needed")
    return status, why


def los(res: SystolicResult, repeats, pm: str):
    """Layer-specific optimal scheduling with DeepOpt's network PM (sum of per-layer minima); under
    the delay PM D, of a layer's branches of least delay the one of least energy (module docstring).

    Args:
        res: costs of shape (P, L, 5).
        repeats: executions per layer, shape (L,).
        pm: one of `PMS`.

    Returns:
        (network PM (P,), best branch index (P, L) int8, network energy pJ (P,), network
        cycles (P,)): energy and cycles are the sums over layers of the chosen branches.
    """
    reps = np.asarray(repeats, dtype=np.float64)
    layer_pm = _masked_layer_pm(res, pm)
    best = np.argmin(layer_pm, axis=2)
    if PMS[pm] == (0, 1):  # delay: of the branches of least delay the least energy (module docstring)
        low = layer_pm.min(axis=2, keepdims=True)
        tied = np.argmin(np.where(layer_pm == low, res.energy_pj, np.inf), axis=2)
        best = np.where(np.isfinite(low[..., 0]), tied, best)  # a layer no branch runs: as before
    take = best[..., None]
    value = (np.take_along_axis(layer_pm, take, 2)[..., 0] * reps).sum(axis=1)
    energy = (np.take_along_axis(res.energy_pj, take, 2)[..., 0] * reps).sum(axis=1)
    cycles = (np.take_along_axis(res.cycles, take, 2)[..., 0] * reps).sum(axis=1)
    return value, best.astype(np.int8), energy, cycles


def fixed_scheduling(res: SystolicResult, repeats, pm: str) -> np.ndarray:
    """Network PM of fixed scheduling (one branch for every layer), shape (P, 5).

    Sum over layers of the layer PM of that branch (same aggregation as `los`, so the FS
    penalty of Table 3 is FS / LOS - 1). Footnote 1 is not applied: FS evaluates what it is given.
    """
    reps = np.asarray(repeats, dtype=np.float64)
    return (pm_value(res.energy_pj, res.cycles, pm) * reps[None, :, None]).sum(axis=1)


def pareto_front(points: np.ndarray) -> np.ndarray:
    """Indices of the Pareto-minimal rows of ``points`` (n, 2), sorted by the first column."""
    order = np.lexsort((points[:, 1], points[:, 0]))
    d = points[order, 1]
    running = np.minimum.accumulate(d)
    keep = np.ones(len(order), dtype=bool)
    keep[1:] = d[1:] < running[:-1]
    return order[keep]


def product_pm(energy_pj: np.ndarray, cycles: np.ndarray, ok: np.ndarray, repeats, pm: str):
    """Exact minimum of (sum E)^a * (sum D)^b over per-execution branch choices, one point.

    Builds the Pareto front of (sum E, sum D) layer by layer (each execution of a repeated layer
    is a stage), then takes the front point with the smallest PM. Exact because the PM increases
    in both sums.

    Args:
        energy_pj, cycles: shape (L, 5); ok: (L, 5) bool, branches allowed; repeats: (L,).

    Returns:
        (PM value, network energy pJ, network cycles, choice (sum(repeats),) int8: the branch of
        each execution in layer order).
    """
    front = np.zeros((1, 2))
    back: list[tuple[np.ndarray, np.ndarray]] = []
    for l, r in enumerate(np.asarray(repeats, dtype=int)):
        allowed = np.flatnonzero(ok[l] & np.isfinite(energy_pj[l]) & np.isfinite(cycles[l]))
        opts = np.stack([energy_pj[l, allowed], cycles[l, allowed]], axis=1)
        for _ in range(r):
            cand = (front[:, None, :] + opts[None, :, :]).reshape(-1, 2)
            keep = pareto_front(cand)
            back.append((keep // len(allowed), allowed[keep % len(allowed)]))
            front = cand[keep]
    vals = pm_value(front[:, 0], front[:, 1], pm)
    i = int(np.argmin(vals))
    e, d = front[i]
    choice = np.empty(len(back), dtype=np.int8)
    for s in range(len(back) - 1, -1, -1):
        parent, branch = back[s]
        choice[s] = branch[i]
        i = int(parent[i])
    return float(vals.min()), float(e), float(d), choice


@dataclass(frozen=True)
class AllocationProblem:
    """Hardware allocation: every network of ``networks`` on J x K systolic hardware points.

    ``points`` holds P hardware points, numbered ``point_offset`` .. ``point_offset + P - 1`` in
    the whole grid (a problem may carry only the chunk of the grid its work units need).
    ``chunk_points`` is the most points one work unit evaluates (the systolic model is
    vectorised over points x layers, so a chunk of a few thousand points is about a second).
    """

    networks: tuple[Network, ...]
    points: SystolicPoints
    pms: tuple[str, ...] = tuple(PMS)
    systolic: SystolicParams = field(default_factory=SystolicParams)
    point_offset: int = 0
    chunk_points: int = 4096


#: The column types of the ``layers`` detail table, fixed so that a network with no feasible point in a
#: chunk (no detail rows) gives typed empty columns, not NumPy's float64 default (which made the
#: ``point`` column double in that chunk and int64 in the others: the store could not merge them).
_DETAIL_DTYPES = {"network": str, "pm": str, "network_pm": str, "point": np.int64, "layer_index": np.int64,
                  "layer": str, "repeat": np.int64, "branch": str, "energy_pj": np.float64, "cycles": np.float64}


class DeepOptMapper(Mapper[AllocationProblem]):
    """DeepOpt LOS/FS scheduling over hardware points (see `mappers.base.Mapper`).

    Work units are contiguous chunks of the problem's hardware points (``spec`` = global
    ``start`` / ``stop`` point indices). A unit's result keeps every point in two tables
    (`SearchResult.tables`), concatenated over the networks in their order:

    * ``rows``: one row per (network, PM, hardware point) with the network PM under LOS
      (``pm_value``), the LOS energy (pJ) and cycles, and the FS network PM of every branch
      (``fs_<branch>``).
    * ``layers``: for the best point of the chunk per (network, PM), the chosen branch of every
      layer, so the optimum's schedule is stored once the chunks are reduced.

    Its scalar figures (``value``, ``energy_pj``, ``latency_cycles``) are those of the chunk's
    best point for the first network and the first PM (``extra['point']`` its global index), so
    `reduce` (`mappers.base.best_of`, tables concatenated) finds the best point of the grid.
    """

    name = "deepopt"
    version = "2"  # 2: D ties broken by energy (module docstring); a task holds every PM, so the version moves
    latency_ties = 1  # D (delay): LOS branch ties broken by energy
    kind = "systolic"
    params = (
        Param("network_pm", "str", "sum",
              "network PM: 'sum' = sum over layers of per-layer PMs (DeepOpt); "
              "'product' = PM of the network totals, (sum E)^a (sum D)^b, solved exactly",
              choices=("sum", "product")),
    )

    def units(self, problem: AllocationProblem, params: Mapping[str, Any]) -> list[WorkUnit]:
        """One unit per chunk of ``problem.chunk_points`` points (at least one unit)."""
        n, step, off = len(problem.points), int(problem.chunk_points), int(problem.point_offset)
        starts = list(range(0, n, step)) or [0]
        return [WorkUnit(kind="points", shard=i, shards=len(starts),
                         spec={"start": off + s, "stop": off + min(n, s + step)}) for i, s in enumerate(starts)]

    def run(self, problem: AllocationProblem, unit: WorkUnit, params: Mapping[str, Any]) -> SearchResult:
        """Evaluate the unit's points for every network and PM (module doc, class doc)."""
        t0 = time.perf_counter()
        lo = int(unit.spec.get("start", problem.point_offset)) - problem.point_offset
        hi = int(unit.spec.get("stop", problem.point_offset + len(problem.points))) - problem.point_offset
        pts = problem.points.take(slice(lo, hi))
        idx = np.arange(problem.point_offset + lo, problem.point_offset + hi, dtype=np.int64)
        parts = [self._network(net, pts, idx, problem, str(params.get("network_pm", "sum")))
                 for net in problem.networks]
        tables = {name: concat_columns([p[name] for p in parts]) for name in ("rows", "layers")}
        rows = parts[0]["rows"] if parts else {"pm_value": np.array([])}
        first = np.flatnonzero(np.asarray(rows["pm"]) == problem.pms[0]) if parts else np.array([], int)
        vals = np.asarray(rows["pm_value"], dtype=np.float64)[first]
        if vals.size and np.isfinite(vals).any():
            k = first[int(np.argmin(np.where(np.isfinite(vals), vals, np.inf)))]
            value, energy, cycles = float(rows["pm_value"][k]), float(rows["energy_pj"][k]), float(rows["cycles"][k])
            extra = {"point": int(rows["point"][k])}
        else:
            value = energy = cycles = float("inf")
            extra = {}
        mode = str(params.get("network_pm", "sum"))
        return SearchResult(mapper=self.name, engine=mode, objective=problem.pms[0], value=value, energy_pj=energy,
                            latency_cycles=cycles, evaluations=len(pts) * len(problem.networks),
                            wall_s=time.perf_counter() - t0, extra=extra, tables=tables,
                            detail=AllocationDetail(network_pm=mode))

    def reduce(self, results: Sequence[SearchResult]) -> SearchResult:
        """The best unit (`mappers.base.best_of`) with every unit's tables concatenated."""
        best = best_of(results)
        names = results[0].tables.keys()
        return replace(best, tables={n: concat_columns([r.tables[n] for r in results]) for n in names})

    def _network(self, net: Network, pts: SystolicPoints, idx: np.ndarray, problem: AllocationProblem,
                 mode: str) -> dict[str, Columns]:
        """The ``rows`` and ``layers`` tables of one network on the points ``pts`` (global ids ``idx``)."""
        layers = [l for l, _ in net]
        reps = np.array([r for _, r in net], dtype=np.int64)
        res = evaluate_per_image(layers, *pts.columns(), problem.systolic)
        P = len(pts)
        rows: dict[str, list] = {k: [] for k in (
            "network", "pm", "network_pm", "point", "J", "K", "fsram_kib", "isram_kib", "psram_kib",
            "area_mm2", "pm_value", "status", "error", "energy_pj", "cycles", *[f"fs_{b}" for b in BRANCHES])}
        detail: dict[str, list] = {k: [] for k in (
            "network", "pm", "network_pm", "point", "layer_index", "layer", "repeat", "branch",
            "energy_pj", "cycles")}
        for pm in problem.pms:
            if mode == "sum":
                value, best, energy, cycles = los(res, reps, pm)
            else:
                value, energy, cycles, best = self._product(res, reps, pm)
            fs = fixed_scheduling(res, reps, pm)
            rows["network"] += [net.name] * P
            rows["pm"] += [pm] * P
            rows["network_pm"] += [mode] * P
            rows["point"].append(idx)
            for k in (*HW_COLUMNS, "area_mm2"):
                rows[k].append(getattr(pts, k))
            rows["pm_value"].append(value)
            st, why = infeasible_reasons(res, layers, pts, pm, value)
            rows["status"].append(st)
            rows["error"].append(why)
            rows["energy_pj"].append(energy)
            rows["cycles"].append(cycles)
            for b, name in enumerate(BRANCHES):
                rows[f"fs_{name}"].append(fs[:, b])
            self._detail(detail, res, net, reps, pm, mode, idx, value, best)
        out_rows = {k: (np.concatenate(v) if v and isinstance(v[0], np.ndarray) else np.asarray(v))
                    for k, v in rows.items()}
        return {"rows": out_rows, "layers": {k: np.asarray(v, dtype=_DETAIL_DTYPES[k]) for k, v in detail.items()}}

    @staticmethod
    def _product(res: SystolicResult, reps: np.ndarray, pm: str):
        P = res.energy_pj.shape[0]
        value = np.empty(P)
        energy = np.empty(P)
        cycles = np.empty(P)
        best = np.empty((P, int(reps.sum())), dtype=np.int8)
        ok = res.delay_ok if PMS[pm][1] else np.ones_like(res.delay_ok)
        for p in range(P):
            value[p], energy[p], cycles[p], best[p] = product_pm(
                res.energy_pj[p], res.cycles[p], ok[p], reps, pm)
        return value, energy, cycles, best

    @staticmethod
    def _detail(detail, res, net, reps, pm, mode, idx, value, best) -> None:
        if not np.isfinite(value).any():
            return
        p = int(np.nanargmin(np.where(np.isfinite(value), value, np.inf)))
        execs = [(li, ri) for li, r in enumerate(reps) for ri in range(r)] if mode == "product" \
            else [(li, None) for li in range(len(reps))]
        for s, (li, ri) in enumerate(execs):
            b = int(best[p, s])
            detail["network"].append(net.name)
            detail["pm"].append(pm)
            detail["network_pm"].append(mode)
            detail["point"].append(int(idx[p]))
            detail["layer_index"].append(li)
            detail["layer"].append(net.layers[li].name)
            detail["repeat"].append(int(reps[li]) if ri is None else 1)
            detail["branch"].append(BRANCHES[b])
            detail["energy_pj"].append(float(res.energy_pj[p, li, b]))
            detail["cycles"].append(float(res.cycles[p, li, b]))


DEEPOPT = DeepOptMapper()
