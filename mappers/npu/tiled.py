"""What Flexer and the static loop-order baseline share: a layer's viable tilings split into work
units, and a branch-and-bound scan that schedules each tiling and keeps the best schedule.

A subclass (`mappers.npu.flexer.FlexerMapper`, `mappers.npu.static.StaticNPUMapper`) only says
how the schedules of one tiling are built (`TiledNPUMapper.schedules`). The search, its bounds and
the result's figures are described in `mappers.npu.flexer`'s module docstring (Min, Kwon, Egger,
"Flexer: Out-of-Order Scheduling for Multi-NPUs", CGO 2023, Algorithm 1 lines 2-11).

Latency ties (issue 38; ``latency_ties`` = 1): under the ``latency`` metric, schedules of equal
latency are ranked by their transferred bytes (the DRAM traffic: the npu model has no energy), then
by tiling and schedule index as before, within a unit (`TiledNPUMapper.run`) and across units
(`TiledNPUMapper.reduce`). The bounds stay exact: a tiling is skipped and a schedule abandoned only
when its bound is strictly above the best latency, so every schedule that ties it is finished and
compared. The ``latency_bytes`` and ``bytes`` metrics are ranked as before.
"""

from __future__ import annotations

import functools
import math
import time
from dataclasses import dataclass
from typing import Any, ClassVar, Iterator, Mapping, Sequence

from costmodel.npu import NPUArch, Tiling, tilings
from costmodel.workload import Layer
from mappers.base import ExtraColumn, Mapper, Param, SearchResult, WorkUnit, best_of
from mappers.npu.graph import DFG, Cutoff, Engine, build_dfg, latency_lower_bound, metric_value, summarize

__all__ = ["TiledNPUMapper", "NPUProblem", "METRICS"]

#: How schedules are ranked: latency (cycles) x transferred bytes, latency alone, or bytes alone.
METRICS = ("latency_bytes", "latency", "bytes")


@dataclass(frozen=True)
class NPUProblem:
    """Schedule one layer on one Flexer multi-NPU (`costmodel.npu.NPUArch`).

    ``objective`` is the campaign's objective, one of `METRICS`; the mappers rank schedules by
    their ``metric`` parameter, which the engine sets to the objective.
    """

    layer: Layer
    arch: NPUArch
    objective: str = "latency_bytes"


@functools.lru_cache(maxsize=4096)
def _tiling_count(layer: Layer, arch: NPUArch, min_spatial: int, min_channels: int, max_ops: int) -> int:
    return len(tilings(layer, arch, min_spatial, min_channels, max_ops))


class TiledNPUMapper(Mapper[NPUProblem]):
    """What flexer and static share: units over contiguous chunks of the tiling list, and a `run`
    that builds every schedule of its chunk (`schedules`, per subclass) and keeps the best by
    ``metric`` (under the ``latency`` metric equal latencies by fewer transferred bytes, module
    docstring; then the first of equal values, in tiling then schedule order)."""

    kind = "npu"
    latency_ties = 1  # the latency metric: ties broken by transferred bytes (module docstring)
    columns = (ExtraColumn("transferred_bytes", "float", "bytes moved on the DRAM channel by the best schedule"),)
    engine = "list"
    common_params = (
        Param("metric", "str", "latency_bytes", "ranking of schedules: latency x bytes, latency or bytes",
              choices=METRICS),
        Param("tilings_per_unit", "int", 512, "tilings per work unit (a contiguous chunk of the tiling list)",
              low=1),
        Param("keep_trace", "bool", False, "add the operation trace of the best schedule to extra['trace']"),
        Param("min_spatial", "int", 1, "smallest OY/OX tile size tried", low=1),
        Param("min_channels", "int", 8, "smallest C/K tile size tried", low=1),
        Param("max_ops", "int", 512, "skip tilings with more tCONVs than this", low=1),
        Param("prune", "bool", True, "skip tilings whose lower bound (flexer_graph.lower_bound) exceeds the "
              "best value found; the result is unchanged, only faster"),
    )
    params: ClassVar[tuple[Param, ...]] = common_params

    def make_problem(self, layer: Layer, arch: Any, spatial: Any = None,
                     objective: str = "latency_bytes") -> NPUProblem:
        """`NPUProblem` (layer, arch, objective). Raises TypeError unless ``arch`` is an `NPUArch`,
        ValueError if a spatial unrolling is given (an NPU has none to choose)."""
        if not isinstance(arch, NPUArch):
            raise TypeError(f"{self.name} needs an NPUArch (costmodel.npu), got {type(arch).__name__}")
        if spatial is not None:
            raise ValueError(f"{self.name} maps on an NPUArch, which takes no spatial unrolling (got {spatial!r})")
        return NPUProblem(layer, arch, objective)

    def tiling_list(self, problem: NPUProblem, params: Mapping[str, Any]) -> list[Tiling]:
        """The viable tilings of the problem."""
        return tilings(problem.layer, problem.arch, int(params["min_spatial"]), int(params["min_channels"]),
                       int(params["max_ops"]))

    def tiling_count(self, problem: NPUProblem, params: Mapping[str, Any]) -> int:
        """``len(tiling_list(problem, params))``, remembered per (layer, arch, min_spatial,
        min_channels, max_ops): flexer and static share a campaign's layers and parameters, and
        counting a campaign's tasks, estimating its run and listing its units ask each problem."""
        return _tiling_count(problem.layer, problem.arch, int(params["min_spatial"]), int(params["min_channels"]),
                             int(params["max_ops"]))

    def unit_count(self, problem: NPUProblem, params: Mapping[str, Any]) -> int:
        """``len(units(problem, params))`` from the tiling count."""
        return max(1, math.ceil(self.tiling_count(problem, params) / int(params["tilings_per_unit"])))

    def units(self, problem: NPUProblem, params: Mapping[str, Any]) -> list[WorkUnit]:
        """One unit per chunk of ``tilings_per_unit`` tilings (at least one unit)."""
        n = self.tiling_count(problem, params)
        per = int(params["tilings_per_unit"])
        chunks = max(1, math.ceil(n / per))
        return [WorkUnit(kind="tilings", shard=i, shards=chunks,
                         spec={"start": i * per, "stop": min(n, (i + 1) * per)}) for i in range(chunks)]

    def reduce(self, results: Sequence[SearchResult]) -> SearchResult:
        """Best unit (`mappers.base.best_of`: first of equal values, in unit order); under the
        ``latency`` metric equal latencies by fewer ``extra["transferred_bytes"]`` first."""
        if self.latency_ties and results and all(r.objective == "latency" for r in results):
            # a stable sort puts the least (latency, bytes) first; best_of keeps the first of equal values
            results = sorted(results, key=lambda r: (r.value, (r.extra or {}).get("transferred_bytes", math.inf)))
        return best_of(results)

    def schedules(self, g: DFG, params: Mapping[str, Any], cutoff: Cutoff | None = None
                  ) -> Iterator[tuple[str, Engine | None]]:
        """(dataflow label, finished engine or None if infeasible or cut off by ``cutoff``) for
        every schedule of ``g``."""
        raise NotImplementedError

    def run(self, problem: NPUProblem, unit: WorkUnit, params: Mapping[str, Any]) -> SearchResult:
        t0 = time.perf_counter()
        metric = params["metric"]
        layer = problem.layer
        reps = layer.B * layer.G
        tl = self.tiling_list(problem, params)[unit.spec.get("start", 0):unit.spec.get("stop", None)]
        # branch and bound: tilings in order of their lower bound; stop once the bound exceeds the
        # best value. Ties are broken by (tiling index, schedule index), so the result is the one
        # an exhaustive pass in list order finds.
        graphs = [build_dfg(layer, problem.arch, t) for t in tl]
        order = list(range(len(tl)))
        prune = params.get("prune", True)
        floors = [latency_lower_bound(g) for g in graphs] if prune else [0] * len(tl)
        lbs = [metric_value(metric, f * reps, sum(g.tile_final) * reps) if prune else 0.0  # = lower_bound
               for f, g in zip(floors, graphs)]
        order.sort(key=lambda i: (lbs[i], i))
        best, evals, done, cut = None, 0, 0, 0
        ties = bool(self.latency_ties) and metric == "latency"  # equal latencies: fewer bytes first
        best_key: tuple = ()
        for i in order:
            if best is not None and lbs[i] > best[0]["value"]:
                break
            done += 1
            cutoff = Cutoff(metric, reps, best[0]["value"] if best else math.inf,
                            floors[i]) if prune else None
            for j, (label, eng) in enumerate(self.schedules(graphs[i], params, cutoff)):
                evals += 1
                if eng is None:
                    cut += cutoff is not None and cutoff.value < math.inf
                    continue
                s = summarize(eng, metric, reps)
                key = (s["value"], s["transferred_bytes"] if ties else 0, i, j)
                if best is None or key < best_key:
                    best, best_key = (s, tl[i], label, eng, i, j), key
                    if cutoff is not None:
                        cutoff.value = s["value"]
        wall = time.perf_counter() - t0
        base = {"metric": metric, "tilings": len(tl), "tilings_scheduled": done, "schedules_cut": cut}
        if best is None:
            return SearchResult(mapper=self.name, engine=self.engine, objective=metric, value=float("inf"),
                                energy_pj=float("nan"), latency_cycles=float("inf"), evaluations=evals, wall_s=wall,
                                extra=base)
        s, tiling, label, eng = best[:4]
        extra = {"transferred_bytes": s["transferred_bytes"], "bytes_by_type": s["bytes_by_type"],
                 "reloads": s["reloads"], "peak_buffer_bytes": s["peak_buffer_bytes"],
                 "tiling": list(tiling.as_tuple()), "dataflow": label, **base}
        if params.get("keep_trace"):
            extra["trace"] = eng.trace()
        return SearchResult(mapper=self.name, engine=self.engine, objective=metric, value=float(s["value"]),
                            energy_pj=float("nan"), latency_cycles=float(s["latency"]), evaluations=evals,
                            wall_s=wall, extra=extra)
