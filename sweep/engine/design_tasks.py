"""Architecture-search campaigns: designs batched into tasks, and how a task maps them.

A task holds ``run.designs_per_task`` designs of a `sweep.config.designspace.DesignSpace`. For
each design it builds the accelerator (`costmodel.loopnest.template.ArchTemplate.design`), maps
every unique layer of every network once (a layer shape shared by two networks is mapped once)
with the campaign's mapper, objective and seed, running all the mapper's work units in-process
and reducing them (exactly what `sweep map` does, so `sweep map --network N --arch DESIGN.toml`
reproduces a design's totals), and totals each network by `sweep.engine.totals.network_totals` (as `sweep map --network` does).

Tables of a task (every row carries ``task_id`` and ``status``):

* ``rows``: one per (design, network, unique layer): ``design_id``, ``network``, ``layer_index``,
  ``layer``, ``repeat``, ``mapper``, ``objective``, ``seed``, ``energy_pj``, ``latency_cycles``,
  ``edp``, ``value``, ``evaluations``, ``wall_s``, ``engine``, ``loops`` (JSON), ``error``, and the
  design's parameter values (one column per grid parameter, named as in the grid; ``dataflow``
  holds the dataflow's name); with a ``dataflow`` axis, or a mapper searching the unrolling
  (``spatial = "search"``), also ``spatial``: the spatial unrolling the layer's best mapping ran, JSON ``{"D1": [["C", 14]], ...}`` fitted to the layer (the mapper's
  choice under a hint dataflow, ``extra["spatial"]`` of the loop-order mappers);
* ``totals``: one per (design, network): ``design_id``, ``network``, ``area_mm2``, ``energy_pj``,
  ``latency_cycles``, ``edp`` (= energy x latency of the network), ``latency_s`` and ``edp_js`` (the
  same at the design's clock: seconds, J x s), ``layers``, ``macs``,
  ``evaluations``, ``wall_s``, ``seed``, ``mapper``, ``objective``, ``error`` and the parameters;
  a transformer step whose weights, KV cache and live activations exceed the usable share of the
  design's DRAM (``[architectures] gpu_memory_utilization``, `costmodel.capacity`; a key of the
  task id of steps' searches) is checked before mapping: a totals row with status ``infeasible``,
  ``error`` "does not fit: needs ..." and NaN figures (never an answer), and one ``rows`` row
  saying the same (`step_row`: ``layer_index`` -1; it also marks the task stored when no layer of
  its designs fits);
* ``archs``: one per design: ``design_id`` and ``arch``, the design's accelerator as canonical JSON
  of `Accelerator.to_dict` (what `sweep report` writes to ``DIR/designs/*.toml``).

Determinism: every column but ``wall_s`` is a function of the campaign and the design.
"""

from __future__ import annotations

import json
import time
import traceback
from collections import OrderedDict
from dataclasses import dataclass, replace
from typing import Any, Iterator, Sequence

import numpy as np
import pyarrow as pa

from costmodel.capacity import GPU_MEMORY_UTILIZATION
from costmodel.loopnest.reference import MODEL_VERSION
from costmodel.loopnest.template import DATAFLOW
from mappers import get_mapper
from sweep.common.ids import canonical_json, stable_hash
from sweep.engine.problem import Problem
from sweep.study import runs_study

__all__ = ["DesignTask", "design_tasks", "count_design_tasks", "evaluate_design", "design_name", "mapped_layer",
           "mapper_view", "pruned_tables", "make_task"]


def design_name(design_id: str) -> str:
    """The accelerator name of a design (also its TOML's ``name``)."""
    return f"design_{design_id}"


@dataclass(frozen=True)
class DesignTask:
    """A batch of designs (``designs``: (design_id, parameter values) pairs) to map on every
    network of the campaign; ``task_id`` = sha256 of the designs and what determines their rows."""

    task_id: str
    designs: tuple[tuple[str, dict], ...]
    template: Any                      # costmodel.loopnest.template.ArchTemplate
    networks: tuple                    # costmodel.workload.Network
    mapper: str
    params: dict
    objective: str
    seed: int
    param_names: tuple[str, ...]
    workload: Any = None               # the campaign's serving mix (`costmodel.llm.ServingMix`), or None
    system: Any = None                 # the campaign's [system] (`costmodel.system.serving.System`), or None
    skip_by_floor: bool = False        # a grid pruned by bound: units that cannot win are not run (`Problem.solve`)
    gpu_memory_utilization: float = GPU_MEMORY_UTILIZATION  # the share of each DRAM a step may fill (costmodel.capacity)

    def run(self) -> dict[str, pa.Table]:
        """The task's ``rows``, ``totals`` and ``archs`` tables (module docstring)."""
        rows: list[dict] = []
        totals: list[dict] = []
        archs: list[dict] = []
        for did, values in self.designs:
            r, t, a = evaluate_design(self.template, did, values, self.networks, self.mapper, self.params,
                                      self.objective, self.seed, self.system, self.skip_by_floor,
                                      self.gpu_memory_utilization)
            if self.workload is not None:
                t.append(mix_row(self.workload, t, a))
            rows += r
            totals += t
            archs += a
        return {"archs": _table(archs, self.task_id, self.param_names, params=False),
                "totals": _table(totals, self.task_id, self.param_names),
                "rows": _table(rows, self.task_id, self.param_names)}


def evaluate_design(template, design_id: str, values: dict, networks: Sequence, mapper_name: str,
                    params: dict, objective: str, seed: int, system=None,
                    skip_by_floor: bool = False,
                    gpu_memory_utilization: float | None = None) -> tuple[list[dict], list[dict], list[dict]]:
    """Map every unique layer of ``networks`` on one design; returns (layer rows, network totals,
    [the design's arch row]) as lists of dicts (module docstring). A failure (a layer no mapping
    fits, a mapper error) gives rows with status "error" and NaN totals for that network.
    ``skip_by_floor``: `mapped_layer`'s. ``gpu_memory_utilization``: the share of the design's DRAM
    a step may fill (`costmodel.capacity`; None: vLLM's 0.9), for the fits check and ``max_batch``."""
    from costmodel.capacity import step_footprint
    from costmodel.loopnest.physics import design_area_mm2
    from sweep.engine.totals import network_totals

    common = {"design_id": design_id, **values}
    # the unrolling each layer ran: with a dataflow axis, or when the mapper searches it (the
    # report rebuilds a design's mappings from `loops` and `spatial`: rooflines, energy breakdowns)
    with_spatial = DATAFLOW in values or params.get("spatial") == "search"
    try:
        acc = template.design(values, name=design_name(design_id))
        area = design_area_mm2(acc)
        arch_row = [{"design_id": design_id, "arch": canonical_json(acc.to_dict())}]
    except Exception as e:  # noqa: BLE001 - an unbuildable design is an error row, the campaign goes on
        err = f"{type(e).__name__}: {e}"
        extra = dict.fromkeys(step_total_columns(networks)) if any(n.workload for n in networks) else {}
        return ([], [dict(common, network=n.name, status="error", error=err, area_mm2=np.nan,
                          **_nan_totals(), mapper=mapper_name, objective=objective, seed=seed, **extra)
                     for n in networks], [])
    cache: dict[str, dict] = {}
    view = mapper_view(acc)
    rows, totals = [], []
    steps = any(n.workload for n in networks)  # transformer steps: the STEP_TOTALS columns
    share = GPU_MEMORY_UTILIZATION if gpu_memory_utilization is None else gpu_memory_utilization
    for net in networks:
        fp = step_footprint(net, acc, share) if net.workload else None
        if fp is not None and not fp.fits:  # checked before mapping: an infeasible total and one row saying why
            err = f"does not fit: {fp.reason()}"
            tot = dict(common, network=net.name, area_mm2=area, mapper=mapper_name, objective=objective, seed=seed,
                       status="infeasible", error=err, **_nan_totals())
            totals.append({**dict.fromkeys(step_total_columns(networks)), **tot, **_step_keys(net)} if steps else tot)
            rows.append(step_row(common, net.name, {"mapper": mapper_name, "objective": objective, "seed": seed},
                                 "infeasible", err, with_spatial))
            continue
        net_rows = []
        for li, (layer, rep) in enumerate(net.unique()):
            key = canonical_json(layer.hash_fields())
            if key not in cache:
                cache[key] = mapped_layer(mapper_name, layer, acc, objective, params, seed, with_spatial, view,
                                          skip_by_floor)
            res = cache[key]
            net_rows.append(dict(common, network=net.name, layer_index=li, layer=layer.name, repeat=rep,
                                 mapper=mapper_name, objective=objective, seed=seed, **res))
        rows += net_rows
        failed = sorted((r for r in net_rows if r["status"] != "ok"), key=lambda r: r["status"] != "error")
        tot = dict(common, network=net.name, area_mm2=area, mapper=mapper_name, objective=objective, seed=seed,
                   layers=len(net_rows), macs=int(net.macs),
                   evaluations=int(sum(r["evaluations"] or 0 for r in net_rows)),
                   wall_s=float(sum(r["wall_s"] for r in net_rows)))
        if failed:
            tot.update(status=failed[0]["status"], error=f"layer {failed[0]['layer']}: {failed[0]['error']}",
                       **_nan_totals())
        else:
            t = network_totals(net_rows)
            if steps:  # a transformer step: its vector operations join the totals, as in `sweep map`
                step_columns(t, net, acc, area, [r["latency_cycles"] for r in net_rows],
                             [r["energy_pj"] for r in net_rows], system, share)
            tot.update(status="ok", error="", **{k: v for k, v in t.items() if k != "dram_bits"})
            _in_seconds(tot, acc.clock_mhz)
        if steps:
            tot = {**dict.fromkeys(step_total_columns(networks)), **tot, **_step_keys(net)}
        totals.append(tot)
    return rows, totals, arch_row


#: The version of how a transformer step is totalled beyond its layers' mappings (the vector unit,
#: the overlap rule, the memory capacity, `sweep.engine.totals.step_totals`): in the task ids of
#: architecture searches over steps only (CNN campaigns' ids unchanged). 2: capacity, fusion, overlap.
#: 3: one home per tensor (vector operations read and write DRAM unless a fused group keeps their
#: tensors on chip, `costmodel.vector` rule b). 4: a GPU preset's execution effects (`costmodel.gpu`:
#: its kernels, the host's and the device's launch parts, CUDA graphs) and static energy. 5: steps as
#: models are served: fused attention and element-wise fusion by default, and the checkpoint's
#: precision (config.json's torch_dtype / quantization_config) where no bits are given.
STEP_MODEL_VERSION = 5

#: The totals columns of a campaign with transformer steps (None for its other networks and for a
#: failed design): the step's parameters, the matmul / vector split (pJ, cycles) and the serving
#: figures (s, tokens/s, J, tokens/s/mm^2, the largest batch that fits the DRAM at the step's
#: context), as `sweep map --network` computes them
#: (`sweep.engine.totals.step_totals`).
STEP_TOTALS = ("phase", "batch", "seq", "context", "matmul_energy_pj", "vector_energy_pj",
               "matmul_latency_cycles", "vector_latency_cycles", "ttft_s", "time_per_token_s", "tokens_per_s",
               "energy_per_token_j", "tokens_per_s_per_mm2", "max_batch")


#: The totals columns of a campaign whose steps are split over chips (`costmodel.system`): the chips
#: of one copy of the model, the collectives on a micro-batch's path (s) and the system's silicon
#: (chips x the design's area, mm^2); absent from other campaigns (their totals unchanged).
SYSTEM_TOTALS = ("chips", "collectives_s", "system_area_mm2")


def step_total_columns(networks) -> tuple[str, ...]:
    """`STEP_TOTALS` and `MIX_TOTALS`, with `SYSTEM_TOTALS` when a step of ``networks`` is split."""
    split = any((n.workload or {}).get(k) for n in networks for k in ("tp", "pp", "ep"))
    return STEP_TOTALS + MIX_TOTALS + (SYSTEM_TOTALS if split else ())


def _step_keys(net) -> dict:
    """A step's ``phase``, ``batch``, ``seq``, ``context`` (on every totals row of it, finished or
    not); {} for a network that is not a step."""
    return {k: net.workload.get(k) for k in ("phase", "batch", "seq", "context")} if net.workload else {}


def step_columns(t: dict, net, acc, area: float, unique_latency: list | None = None,
                 unique_energy: list | None = None, system=None, gpu_memory_utilization: float | None = None) -> None:
    """``t`` (`network_totals` of ``net``'s layers on ``acc``) in place: the step's totals with its
    vector operations and the serving figures (`STEP_TOTALS`; ``max_batch`` in
    ``gpu_memory_utilization`` of the DRAM, `sweep.engine.totals.step_memory`); nothing for a
    network that is not a transformer step."""
    from sweep.engine.totals import step_totals

    if not (net.vector_ops or net.workload):
        return
    _, llm = step_totals(t, net, acc, None, unique_latency, unique_energy, system, gpu_memory_utilization)
    w = net.workload
    t.update({k: w.get(k) for k in ("phase", "batch", "seq", "context")})
    for k in ("ttft_s", "time_per_token_s", "tokens_per_s", "energy_per_token_j"):
        t[k] = (llm or {}).get(k)
    sys_ = (llm or {}).get("system")
    if sys_:  # a split step: the system's figures, its silicon chips x the design's
        t.update(chips=sys_["chips"], collectives_s=sys_["collectives_s"], system_area_mm2=sys_["chips"] * area)
        area = sys_["chips"] * area
    t["tokens_per_s_per_mm2"] = t["tokens_per_s"] / area if t.get("tokens_per_s") and area else None
    t["max_batch"] = (llm or {}).get("max_batch")  # the largest batch that fits the design's DRAM


def mix_row(mix, totals: list[dict], arch_row: list[dict]) -> dict:
    """The totals row of a serving mix on one design (``network`` = the mix's name, ``phase`` =
    "mix"): `costmodel.llm.ServingMix.figures` from the design's step totals ``totals`` (energy pJ
    and latency cycles per batch of requests, request latency s, requests/s, J per request, output
    tokens/s, J per output token, TTFT s, mean time per output token s), at the design's clock."""
    from costmodel.loopnest.arch import accelerator_from_dict

    by_name = {t["network"]: t for t in totals}
    first = totals[0]
    names = mix.step_names()
    steps = [by_name.get(n, {}) for n in names]
    bad = sorted((s.get("status") or "error" for s in steps if s.get("status") != "ok"), key=lambda x: x != "error")
    ok = bool(arch_row) and not bad
    bad = bad or ["error"]  # no design row: the design did not build
    clock = accelerator_from_dict(json.loads(arch_row[0]["arch"])).clock_mhz if arch_row else 1.0
    fig = mix.figures(steps[0], steps[1:], clock) if ok else mix.figures({}, [], clock)
    row = {**{k: first.get(k) for k in first}, **dict.fromkeys(STEP_TOTALS)}
    row.update(network=mix.name, phase="mix", batch=mix.batch, seq=mix.prompt, context=mix.prompt + mix.output,
               status="ok" if ok else bad[0], error="" if ok else f"a step of the mix has status {bad[0]}",
               layers=sum(s.get("layers") or 0 for s in steps), macs=0,
               evaluations=sum(s.get("evaluations") or 0 for s in steps),
               wall_s=sum(s.get("wall_s") or 0.0 for s in steps))
    row.update({k: fig[k] for k in ("energy_pj", "latency_cycles", "ttft_s", "time_per_token_s", "tokens_per_s",
                                    "energy_per_token_j")})
    row["edp"] = None if fig["energy_pj"] is None else fig["energy_pj"] * fig["latency_cycles"]
    _in_seconds(row, clock)
    row["tokens_per_s_per_mm2"] = (fig["tokens_per_s"] / row["area_mm2"]
                                   if fig["tokens_per_s"] and row.get("area_mm2") else None)
    for k in MIX_TOTALS:
        row[k] = fig[k]
    return row


#: The totals columns of a serving mix's row (None on the steps' rows).
MIX_TOTALS = ("request_latency_s", "requests_per_s", "energy_per_request_j")


def _nan_totals() -> dict:
    return {"energy_pj": np.nan, "latency_cycles": np.nan, "edp": np.nan, "latency_s": np.nan, "edp_js": np.nan,
            "layers": 0, "macs": 0, "evaluations": 0, "wall_s": 0.0}


def _in_seconds(tot: dict, clock_mhz: float) -> None:
    """``latency_s`` (the totals' latency_cycles at the design's clock) and ``edp_js`` (energy in J x
    latency_s) into ``tot``: what designs of different clocks are compared by (issue 43, item 1)."""
    lat, energy = tot.get("latency_cycles"), tot.get("energy_pj")
    tot["latency_s"] = np.nan if lat is None or clock_mhz <= 0 else float(lat) / (clock_mhz * 1e6)
    tot["edp_js"] = np.nan if energy is None else float(energy) * 1e-12 * tot["latency_s"]


def step_row(common: dict, network: str, run: dict, status: str, error: str, with_spatial: bool) -> dict:
    """The one ``rows`` row of a step no layer of which was mapped on a design (``layer_index`` -1,
    ``layer`` "", NaN figures): it does not fit the design's DRAM (``"infeasible"``) or the design was
    pruned by bound (``"pruned"``); ``error`` says why. It also marks the design's task as stored."""
    fig = {"status": status, "error": error, "energy_pj": np.nan, "latency_cycles": np.nan, "edp": np.nan,
           "value": np.nan, "evaluations": 0, "wall_s": 0.0, "engine": None, "loops": None}
    return dict(common, network=network, layer_index=-1, layer="", repeat=0, **run, **fig,
                **({"spatial": ""} if with_spatial else {}))


def pruned_tables(campaign, task_id: str, designs: Sequence[tuple[str, dict]],
                  reasons: Sequence[dict[str, str]]) -> dict[str, pa.Table]:
    """The tables of designs a pruned grid leaves unmapped (`sweep.search.grid`): per design its
    ``archs`` row, and per step (and the serving mix) a ``totals`` and a ``rows`` row with status
    ``"pruned"``, NaN figures and ``error`` the bound that beat it (``reasons``: per design,
    dimension -> message; a step's own dimension, else the first)."""
    from costmodel.loopnest.physics import design_area_mm2

    space, spec = campaign.architectures, campaign.mappers[0]
    nets = list(campaign.networks)
    mix = campaign.workload
    with_spatial = DATAFLOW in space.names or spec.params.get("spatial") == "search"
    rows, totals, archs = [], [], []
    for (did, values), why in zip(designs, reasons):
        acc = space.template.design(values, name=design_name(did))
        area = design_area_mm2(acc)
        archs.append({"design_id": did, "arch": canonical_json(acc.to_dict())})
        common = {"design_id": did, **values}
        first = next(iter(why.values()), "pruned")
        run = {"mapper": spec.name, "objective": campaign.objectives[0], "seed": campaign.seeds[0]}
        for net in nets:
            err = why.get(f"step:{net.name}", first)
            rows.append(step_row(common, net.name, run, "pruned", err, with_spatial))
            tot = dict(common, network=net.name, area_mm2=area, **run, status="pruned", error=err, **_nan_totals())
            totals.append({**dict.fromkeys(step_total_columns(nets)), **tot, **_step_keys(net)})
        if mix is not None:
            row = dict(totals[-1], network=mix.name, phase="mix", batch=mix.batch, seq=mix.prompt,
                       context=mix.prompt + mix.output, error=why.get("phase:mix", first))
            totals.append(row)
    names = space.names
    return {"archs": _table(archs, task_id, names, params=False), "totals": _table(totals, task_id, names),
            "rows": _table(rows, task_id, names)}


#: Layer mappings kept in this process for the next designs (`mapped_layer`): key -> row figures.
_MAPPINGS: "OrderedDict[str, dict]" = OrderedDict()
#: How many `_MAPPINGS` entries a process keeps (least recently used dropped): a design of the
#: bundled LLM search has 31 unique layers; a few thousand entries are a few MB.
MAPPINGS_KEPT = 4096


def mapper_view(acc) -> str:
    """What a loop-nest mapper sees of accelerator ``acc``: its repr (the array, the memories with
    their sizes, energies and bandwidths in bits per cycle, the precisions, the MAC and
    accumulator energies, the clock, the default unrolling) without its name, and its spatial
    hint. Two designs of one view get the same mapping of every layer from a seeded mapper
    (`mapped_layer`); what the repr leaves out (the vector unit, the DRAM kind's name and capacity,
    the cost per launch, the technology) is not read by the mappers, only by a step's totals."""
    hint = acc.spatial_hint.to_dict() if acc.spatial_hint is not None else None
    return canonical_json({"arch": repr(replace(acc, name="")), "hint": hint})


def mapped_layer(mapper_name: str, layer, acc, objective: str, params: dict, seed: int, with_spatial: bool,
                 view: str | None = None, skip_by_floor: bool = False) -> dict:
    """The row figures of ``layer`` mapped on ``acc`` (`_map_layer`), reused when this process
    already mapped the same layer with the same mapper, parameters, objective and seed on a
    design of the same `mapper_view` (a design differing only in its vector unit, say): the
    figures are those of mapping it alone (the mappers are deterministic given the seed; checked
    on every DRAM kind, unit count and clock by tests/sweep/test_design_reuse.py). ``wall_s`` of a
    reused row is the time this lookup took (s). ``skip_by_floor``: units whose floor cannot beat
    the best found are not run (`Problem.solve`; same figures, fewer ``evaluations``)."""
    t0 = time.perf_counter()
    key = stable_hash({"view": view if view is not None else mapper_view(acc), "layer": layer.hash_fields(),
                       "mapper": mapper_name, "params": params, "objective": objective, "seed": seed,
                       "spatial": with_spatial, "skip": skip_by_floor}, 32)
    hit = _MAPPINGS.get(key)
    if hit is not None:
        _MAPPINGS.move_to_end(key)
        return {**hit, "wall_s": time.perf_counter() - t0}
    prob = Problem.layer(mapper_name, layer, acc, objective=objective, params=params, seed=seed)
    res = _map_layer(prob, with_spatial, skip_by_floor)
    _MAPPINGS[key] = res
    while len(_MAPPINGS) > MAPPINGS_KEPT:
        _MAPPINGS.popitem(last=False)
    return dict(res)


def _map_layer(prob: Problem, with_spatial: bool = False, skip_by_floor: bool = False) -> dict:
    """The layer problem solved in-process (`Problem.solve`, as ``sweep map``): the row's figures,
    with ``with_spatial`` also ``spatial`` (module docstring; "" on an error)."""
    t0 = time.perf_counter()
    try:
        sol = prob.solve(skip_by_floor=skip_by_floor)
    except Exception as e:  # noqa: BLE001 - a failing layer is an error row
        out = {"status": "error", "error": f"{type(e).__name__}: {e}\n{traceback.format_exc()[-1500:]}",
               "energy_pj": np.nan, "latency_cycles": np.nan, "edp": np.nan, "value": np.nan,
               "evaluations": 0, "wall_s": time.perf_counter() - t0, "engine": None, "loops": None}
        return out | ({"spatial": ""} if with_spatial else {})
    best = sol.best
    out = {"status": sol.status, "error": sol.reason, "energy_pj": best.energy_pj, "latency_cycles": best.latency_cycles,
           "edp": best.edp, "value": best.value, "evaluations": best.evaluations,
           "wall_s": sol.wall_s, "engine": best.engine,
           "loops": canonical_json(best.loops) if best.loops is not None else None}
    if with_spatial:
        sp = (best.extra or {}).get("spatial")
        lp = prob.instance
        out["spatial"] = sp if sp is not None else lp.arch.spatial.fit(lp.layer).to_json()
    return out


_INTS = ("layer_index", "repeat", "evaluations", "layers", "macs", "seed", "batch", "seq", "context", "max_batch",
         "chains", "launches")
_STRS = ("design_id", "network", "layer", "mapper", "objective", "error", "engine", "loops", "spatial", "phase", "arch")
#: The Arrow type of every column a task writes that can be empty (None) in one task and set in
#: another, so that every fragment of a dataset has one schema (a reader such as
#: ``pandas.read_parquet(DIR/totals)`` then reads them together): counts int64, names and JSON
#: strings, every other figure float64. A column not named here keeps its inferred type (a grid
#: parameter's values), strings where all are None.
COLUMN_TYPES: dict[str, pa.DataType] = {**dict.fromkeys(_INTS, pa.int64()), **dict.fromkeys(_STRS, pa.string())}


def _column(name: str, values: list) -> pa.Array:
    t = COLUMN_TYPES.get(name)
    if t is None:
        nums = [v for v in values if v is not None]
        if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in nums):
            t = pa.float64()
    if t is not None:
        return pa.array(values, type=t)
    a = pa.array(values)
    return a.cast(pa.string()) if pa.types.is_null(a.type) else a



def _table(items: list[dict], task_id: str, param_names: Sequence[str], params: bool = True) -> pa.Table:
    """Rows (dicts) -> an Arrow table with ``task_id`` and ``status`` first; parameter columns last;
    each column of its declared type (`COLUMN_TYPES`; a figure float64)."""
    if not items:
        return pa.table({"task_id": pa.array([], pa.string()), "status": pa.array([], pa.string())})
    keys = [k for k in items[0] if k not in param_names and k != "status"]
    cols: dict[str, Any] = {"task_id": pa.array([task_id] * len(items), pa.string()),
                            "status": pa.array([it.get("status", "ok") for it in items], pa.string())}
    for k in keys:
        cols[k] = _column(k, [it.get(k) for it in items])
    if params:
        for k in param_names:
            cols[k] = pa.array([it[k] for it in items])
    return pa.table(cols)


def _task_id(campaign, designs: Sequence[tuple[str, dict]]) -> str:
    spec = campaign.mappers[0]
    doc = {"designs": [d for d, _ in designs], "template": repr(campaign.architectures.template.base),
           "mapper": spec.name, "version": get_mapper(spec.name).id_version(campaign.objectives[0]),
           "params": spec.params,
           "objective": campaign.objectives[0], "seed": campaign.seeds[0], "model": MODEL_VERSION,
           "networks": [[n.name, [canonical_json({"name": l.name, **l.hash_fields()}) for l in n.layers],
                         list(n.repeats)] for n in campaign.networks]}
    if campaign.workload is not None:  # a serving mix: its row is part of the task's output
        doc["workload"] = campaign.workload.to_dict()
    if _skips(campaign):  # the evaluations column counts the units run
        doc["skip_by_floor"] = True
    if getattr(campaign, "system", None) is not None:  # how split steps' chips are joined
        doc["system"] = campaign.system.to_dict()
    if any(n.workload for n in campaign.networks):  # transformer steps: what totals them beyond the layers
        base = campaign.architectures.template.base
        doc["step_model"] = STEP_MODEL_VERSION
        doc["vector"] = base.vector.to_dict() if base.vector is not None else None
        # the usable share of each DRAM: which steps fit, and max_batch (costmodel.capacity)
        doc["gpu_memory_utilization"] = campaign.architectures.gpu_memory_utilization
    return stable_hash(doc, 24)


def make_task(campaign, indices: Sequence[int]) -> DesignTask:
    """The task of the valid designs ``indices`` of the campaign's `DesignSpace`."""
    space = campaign.architectures
    designs = []
    for i in indices:
        vals = space.point(int(i))
        designs.append((space.design_id(vals), vals))
    spec = campaign.mappers[0]
    return DesignTask(_task_id(campaign, designs), tuple(designs), space.template, tuple(campaign.networks),
                      spec.name, dict(spec.params), campaign.objectives[0], campaign.seeds[0], space.names,
                      campaign.workload, campaign.system, _skips(campaign), space.gpu_memory_utilization)


def _skips(campaign) -> bool:
    """A grid pruned by bound also skips, within a layer, the spatial candidates whose bound
    cannot beat the best found (`Problem.solve`): the pruning is there to save time, and it
    changes no figure."""
    return getattr(getattr(campaign, "search", None), "prune", "none") == "bound"


def selected(campaign) -> np.ndarray:
    """The valid-design indices a grid or random search evaluates, in order: every design
    (``grid``), or ``trials`` of them drawn without replacement with ``search.seed`` (``random``)."""
    n = len(campaign.architectures)
    s = campaign.search
    if s.sampler == "random":
        return np.random.default_rng(s.seed).choice(n, size=s.trials, replace=False)
    return np.arange(n)


def design_tasks(campaign) -> Iterator[DesignTask]:
    """The tasks of a grid or random architecture search, ``run.designs_per_task`` designs each."""
    idx = selected(campaign)
    step = campaign.run.designs_per_task
    for start in range(0, len(idx), step):
        yield make_task(campaign, idx[start:start + step])


def count_design_tasks(campaign) -> int:
    """How many tasks `design_tasks` yields (for an Optuna search: one per design evaluated)."""
    s = campaign.search
    study = runs_study(s.sampler, "archsearch")
    n = s.trials if study else len(selected(campaign))
    step = 1 if study else campaign.run.designs_per_task
    return -(-n // step)
