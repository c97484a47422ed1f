"""The figures an architecture search over transformer steps answers with, bounded from below for
every design of the grid without mapping anything, and the test that a design cannot change the
answer (`costmodel.bounds`, `sweep.search.grid`).

The answer of such a search (`sweep.reports.llm.llm_designs`, `sweep.reports.archsearch`) is read
off, per *dimension*, the designs' area against one figure:

* one dimension per phase: the geometric mean over the phase's steps of the time to first token
  (prefill) or the time per output token (decode), and the serving mix's request latency (the
  Pareto front of area against each, its least figure, its least figure x area = the most tokens
  or requests per s per mm^2);
* one dimension per step (network): its latency in seconds (the per-network fronts and rankings).

A design's figure on a dimension is undefined when a step of it does not fit the design's DRAM
(`costmodel.capacity`; checked here as the run checks it). Its lower bound on a dimension is the
same function of the steps' lower bounds (`costmodel.bounds.step_bounds`): a geometric mean and the
mix's weighted sum are increasing in every step's latency, so they bound the figure from below.

**Pruning rule.** A design can be left unmapped when on *every* dimension where it has a figure
some mapped design has area <= its area and a figure <= its bound there, one of the two strictly:
then on no dimension can it be on the front of area against that figure, be the least figure
(ties go to the smaller design, `sweep.reports.llm.llm_designs`) or the least figure x area. A
design that could only tie a mapped one (same area, figure equal to its bound) is mapped. What
this does not cover, said where it is printed: rankings by energy or EDP (no energy bound is used:
on prefill the SRAMs' share makes it loose) and statistics over all designs (the parameter
effects) are over the mapped designs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = ["DesignBounds", "design_bounds", "phase_dims", "dominated", "priority_order", "figures_of"]


@dataclass(frozen=True)
class DesignBounds:
    """Bounds of every valid design of a campaign's `DesignSpace`.

    Attributes:
        dims: the dimension names: ``phase:<prefill|decode|mix>`` then ``step:<network name>``.
        lower: (n, len(dims)) lower bounds in seconds; NaN where the design has no figure (a step
            of it does not fit its DRAM).
        area: (n,) area, mm^2.
        views: (n,) `sweep.engine.design_tasks.mapper_view` of each design, as a small integer
            (designs of one view share every layer mapping).
    """

    dims: tuple[str, ...]
    lower: np.ndarray
    area: np.ndarray
    views: np.ndarray


def phase_dims(networks, workload) -> tuple[list[str], list[str]]:
    """(phases with a figure, step names): ``prefill`` / ``decode`` if a step of the phase is among
    ``networks`` (the campaign's, the mix's steps included), ``mix`` with a ``[workload]``."""
    phases = [p for p in ("prefill", "decode") if any((n.workload or {}).get("phase") == p for n in networks)]
    if workload is not None:
        phases.append("mix")
    return phases, [n.name for n in networks]


def figures_of(step_s: dict[str, float], networks, workload, clock_mhz: float,
               step_energy: dict[str, float] | None = None) -> list[float]:
    """The figures of one design on each dimension (`DesignBounds.dims` order) from its steps'
    latencies in seconds (``step_s``: network name -> s, NaN / missing = no figure): the phases'
    geometric means, the mix's request latency (`costmodel.llm.ServingMix.figures` of the steps),
    then each step's. The same function gives the bounds (of bound latencies) and the mapped
    figures (of mapped latencies), which is what makes the bound a bound."""
    phases, steps = phase_dims(networks, workload)
    out = []
    for p in phases:
        if p == "mix":
            names = workload.step_names()
            lat = [step_s.get(n, math.nan) for n in names]
            if not all(math.isfinite(x) for x in lat):
                out.append(math.nan)
                continue
            cyc = [{"latency_cycles": x * clock_mhz * 1e6, "energy_pj": 0.0} for x in lat]
            out.append(workload.figures(cyc[0], cyc[1:], clock_mhz)["request_latency_s"])
            continue
        lat = [step_s.get(n.name, math.nan) for n in networks if (n.workload or {}).get("phase") == p]
        ok = all(math.isfinite(x) and x > 0 for x in lat)
        out.append(float(np.exp(np.mean(np.log(lat)))) if ok and lat else math.nan)
    out += [step_s.get(s, math.nan) for s in steps]
    return out


def design_bounds(campaign, progress=None) -> DesignBounds:
    """`DesignBounds` of every valid design of ``campaign`` (an architecture search over
    transformer steps): each design built (`ArchTemplate.design`), each step's DRAM footprint
    checked (`costmodel.capacity.step_footprint`) and bounded (`costmodel.bounds.step_bounds`).
    ``progress(done, total)`` is called every 1,000 designs."""
    from costmodel.bounds import step_bounds
    from costmodel.capacity import step_footprint
    from sweep.engine.design_tasks import design_name, mapper_view

    space, nets, mix = campaign.architectures, list(campaign.networks), campaign.workload
    best_u = _utilization(campaign)
    phases, steps = phase_dims(nets, mix)
    dims = tuple(f"phase:{p}" for p in phases) + tuple(f"step:{s}" for s in steps)
    n = len(space)
    lower = np.full((n, len(dims)), math.nan)
    views = np.zeros(n, dtype=np.int64)
    seen: dict[str, int] = {}
    memo: dict = {}
    layers: dict = {}                        # each layer's bound per what of the design it reads
    fits: dict = {}                          # each step's footprint against a capacity
    unique = {net.name: list(net.unique()) for net in nets}
    for i in range(n):
        values = space.point(i)
        acc = space.template.design(values, name=design_name(space.design_id(values)), memo=memo)
        views[i] = seen.setdefault(mapper_view(acc), len(seen))
        u = best_u(acc)
        step_s = {}
        cap = (tuple(sorted(acc.precisions.items())), acc.dram, acc.dram_gib_per_unit)
        for net in nets:
            ok = fits.get((net.name, cap))
            if ok is None:   # against the share of the DRAM the run checks (`evaluate_design`)
                fp = step_footprint(net, acc, space.gpu_memory_utilization) if net.workload else None
                ok = fits[(net.name, cap)] = fp is None or fp.fits
            if ok:
                step_s[net.name] = step_bounds(net, acc, u, layers, unique[net.name])["latency_s"]
        lower[i] = figures_of(step_s, nets, mix, acc.clock_mhz)
        if progress is not None and (i + 1) % 1000 == 0:
            progress(i + 1, n)
    return DesignBounds(dims, lower, np.asarray(space.area_mm2, dtype=float), views)


def _utilization(campaign):
    """``of(acc)(layer)``: the highest PE utilisation of any unrolling the campaign's mapper may run
    for ``layer`` on ``acc`` (`costmodel.bounds.layer_bound`): with ``spatial = "search"`` the best of
    the layer's spatial candidates (`mappers.spatial.spatial_candidates` ranked by utilisation: the
    mapper runs some of them, none better than the first), kept per (layer, the array, the hint and
    the memories below the DRAM: what the candidates depend on); 1 otherwise (every PE busy: a
    weaker bound, still a bound)."""
    from mappers.spatial import NoSpatialCandidate, spatial_candidates, spatial_mode
    from sweep.common.ids import canonical_json
    from sweep.engine.problem import Problem

    spec = campaign.mappers[0]
    cache: dict = {}

    def of(acc):
        """``u(layer)`` on ``acc``: what the candidates depend on keyed once per design."""
        if acc.spatial_hint is None:
            return lambda layer: 1.0
        arch_key = (repr(acc.array), repr(acc.memories[:-1]), canonical_json(acc.spatial_hint.to_dict()))

        def u(layer) -> float:
            key = (layer, arch_key)
            hit = cache.get(key)
            if hit is None:
                inst = Problem.layer(spec.name, layer, acc, objective=campaign.objectives[0],
                                     params=spec.params).instance
                hit = 1.0
                if spatial_mode(inst, spec.params) == "search":
                    try:
                        hit = max(c.utilization for c in spatial_candidates(inst.layer, inst.arch, keep=1))
                    except NoSpatialCandidate:
                        hit = 1.0
                cache[key] = hit
            return hit
        return u
    return of


def dominated(lower: np.ndarray, area: np.ndarray, mapped_fig: np.ndarray, mapped_area: np.ndarray) -> np.ndarray:
    """(len(lower),) True where a design (``lower``: (n, d) bounds, NaN = no figure; ``area``: (n,))
    is beaten on every dimension where it has a figure: some mapped design (``mapped_fig``: (m, d)
    figures, NaN = none; ``mapped_area``: (m,)) has area <= its area and a figure <= its bound there,
    one of the two strictly (module docstring). A design with no figure anywhere is never dominated (it is mapped: its
    rows say why it has none)."""
    n, d = lower.shape
    beaten = np.ones(n, dtype=bool)
    has_any = np.zeros(n, dtype=bool)
    for j in range(d):
        has = np.isfinite(lower[:, j])
        has_any |= has
        ok = np.isfinite(mapped_fig[:, j]) if len(mapped_fig) else np.zeros(0, dtype=bool)
        if not ok.any():
            beaten &= ~has
            continue
        a, f = mapped_area[ok], mapped_fig[ok, j]
        order = np.argsort(a, kind="stable")
        a, best = a[order], np.minimum.accumulate(f[order])  # least figure at area <= a[k]

        def least(side: str) -> np.ndarray:  # least figure of the mapped designs of area <= (right) / < (left) mine
            k = np.searchsorted(a, area, side=side) - 1
            return np.where(k >= 0, best[np.maximum(k, 0)], np.inf)
        # strictly better on one of the two, no worse on the other: a tie keeps the design
        beaten &= ~has | (least("left") <= lower[:, j]) | (least("right") < lower[:, j])
    return beaten & has_any


def priority_order(b: DesignBounds) -> np.ndarray:
    """The designs in the order a pruned grid maps them: by the least over dimensions of the
    non-dominated layer of (area, bound) the design lies in (layer 0: no design is both smaller and
    bounded lower), so that the designs most likely to make the fronts are mapped first and prune
    the most; each view's designs together (at its best member's place), then by index.
    Deterministic: a function of the bounds only."""
    n, d = b.lower.shape
    layer = np.full(n, np.iinfo(np.int64).max, dtype=np.int64)
    for j in range(d):
        f = b.lower[:, j]
        idx = np.flatnonzero(np.isfinite(f))
        lay = np.full(len(idx), -1, dtype=np.int64)
        rest = np.arange(len(idx))
        k = 0
        while len(rest):
            o = rest[np.lexsort((f[idx[rest]], b.area[idx[rest]]))]
            fo = f[idx[o]]
            prev = np.concatenate(([np.inf], np.minimum.accumulate(fo)[:-1]))
            front = fo < prev
            lay[o[front]] = k
            rest = o[~front]
            k += 1
        layer[idx] = np.minimum(layer[idx], lay)
    best = {}
    for i in range(n):
        v = int(b.views[i])
        best[v] = min(best.get(v, (layer[i], i)), (layer[i], i))
    key = np.array([best[int(v)] for v in b.views], dtype=np.int64)
    return np.lexsort((np.arange(n), key[:, 1], key[:, 0]))
