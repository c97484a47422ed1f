"""The tasks of a serving campaign (``[architectures] kind = "serving"``, `sweep.kinds.serving`): one
`ServingTask` per (design, scheduler setting). A task resolves the deployment and maps its cost
table once (`sweep.serving.serve.setup`: every iteration part a scheduler can form, mapped on the
design), then serves the load once per offered rate (`sweep.serving.serve.serve`: vLLM V1's
scheduler replayed against the table, no mapping in the event loop) and, with ``goodput``, searches
the goodput at the first rate (DistServe's: the highest rate at which at least ``attainment`` of the
requests meet both the TTFT and the TPOT target), reusing the table.

Tables of a task (every row carries ``task_id``, ``status`` and ``error``; `RATE_COLUMNS`,
`ROW_COLUMNS`):

* ``rates``: one row per (design, setting, rate): the served load's figures, the summary of
  `costmodel.serving.metrics.summary` flattened (``ttft_p90_s``, ``tpot_p50_s``, ``e2e_p99_s``, ...,
  seconds; ``output_tokens_per_s``, ``requests_per_s``, ``slo_attainment`` (share of requests),
  ``meets_slo``, ``energy_per_request_j`` (J), ``preemptions``, ``kv_cache_utilization``,
  ``mean_batch`` (sequences per iteration, time-weighted));
* ``rows``: one row per (design, setting): ``goodput_rps`` (req/s), ``goodput_per_mm2`` (req/s per
  mm^2 of the system's silicon: chips x the design's ``area_mm2``), ``goodput_per_usd`` (req/s per
  US dollar of the chips, `costmodel.system.cost.chip_cost_usd`), the bracket of the search, and the
  design's figures (area, chips, cost, clock, PEs, DRAM, KV blocks, the cost table's size and time);
  the fixed-batch steps of the same table (`costmodel.serving.table.fixed_steps`: ``fixed_prefill_s``
  of a 2,048-token prompt alone, ``fixed_decode_s`` of a decode batch of 16 at 2,048 tokens of
  context, ``fixed_decode_tokens_per_s`` and ``fixed_tokens_per_s_per_mm2`` of that batch), the step
  answer a fixed-batch search gives, for the report to set beside the goodput; ``mapping_refs``: the
  designs whose mappings the table re-costs (``mappings = "shared"``; None: its own).

A design the deployment does not fit (weights and activations leave no KV block in its memory), or
whose parts have no valid mapping, is ``infeasible`` with the reason in ``error`` on every row of
its task (figures None); anything else that fails is ``error`` with the traceback. Determinism:
every column but ``sim_s``, ``table_build_s`` and ``wall_s`` is a function of the campaign and the
task (`task_id`: sha256 of the design's accelerator in full, the setting and the serving spec).

Under ``[serving] mappings = "shared"`` the designs of one *chip* (`chip_view`: the same array and
on-chip memories, any DRAM, clock or vector unit) run in one task, so that the chip's reference
mappings (`sweep.serving.shared_mappings`) are searched once and re-costed on every design of it.
`reference_designs` picks each chip's references among the campaign's designs: the one with the
slowest DRAM in bits per cycle (`dram_bits_per_cycle`) and the one with the fastest (one design when
they coincide; the first in the campaign's order on a tie); they are part of every task id of the
chip, so a grid that adds a slower or faster DRAM gives the chip's designs other tasks. A
`ServingGroup` holds `ServingTask`s of one chip and one setting (at most `GROUP_DESIGNS`), runs them
in order in one process and writes their rows under its own task id: the same rows as each task
alone, one fragment per group.
"""

from __future__ import annotations

import importlib
import itertools
import json
import math
import time
import traceback
from dataclasses import dataclass, field
from typing import Any, Iterator, Sequence

import pyarrow as pa

from sweep.common.ids import canonical_json, stable_hash

__all__ = ["ServingDesign", "ServingDesigns", "ServingSpec", "ServingTask", "serving_tasks", "count_serving_tasks",
           "SERVE_MODULE", "design_figures", "flat_summary", "SERVING_TASK_VERSION", "RATE_COLUMNS", "ROW_COLUMNS",
           "PERCENTILE_KEYS", "chip_view", "dram_bits_per_cycle", "reference_designs", "ServingGroup",
           "serving_groups", "GROUP_DESIGNS"]

#: Bumped when a task's rows change meaning for the same inputs (part of every task id).
SERVING_TASK_VERSION = 4   # 2: the fixed-batch step columns, mapping_refs; 3: GPU presets' execution effects;
#: 4: the checkpoint's precision where no bits are given, and the fixed-batch steps fused by default

#: The module that serves a load (`setup`, `serve`, `Load`), named rather than imported: it sits
#: above `sweep.commands` (its setup checks the mapper against the accelerator and maps the cost
#: table through `sweep.commands.map_eval`, which asks `sweep.kinds`), so this engine module and
#: the kind that expands its tasks reach it at run time only, as a kind names its report module
#: (`sweep.kinds.base.CampaignKind.report_module`).
SERVE_MODULE = "sweep.serving.serve"

#: The latency figures of a summary and how they are flattened: ``ttft_s.p90`` -> ``ttft_p90_s``.
PERCENTILE_KEYS = ("ttft_s", "tpot_s", "e2e_s", "queue_s")
_STATS = ("mean", "p50", "p90", "p99")
#: The other summary figures a ``rates`` row keeps under their own names.
_SUMMARY_KEYS = ("output_tokens_per_s", "requests_per_s", "slo_attainment", "energy_j", "energy_per_request_j",
                 "energy_per_output_token_j", "kv_cache_utilization", "mean_batch", "preemptions", "requests",
                 "served", "refused", "truncated", "dropped", "iterations", "offered_rate", "span_s")

#: The figures of a ``rates`` row beyond the common columns (None on a row that did not finish).
RATE_COLUMNS = ("rate", *(f"{k[:-2]}_{s}_s" for k in PERCENTILE_KEYS for s in _STATS), *_SUMMARY_KEYS,
                "meets_slo", "sim_s")
#: The figures of a ``rows`` row beyond the common columns.
ROW_COLUMNS = ("goodput_rps", "goodput_per_mm2", "goodput_per_usd", "goodput_missed_rps", "goodput_simulations",
               "goodput_start_rps", "goodput_points", "area_mm2", "chips", "system_area_mm2", "chip_cost_usd",
               "cost_usd", "clock_mhz", "pe_count", "dram", "dram_units", "memory_gb", "weights_gb", "kv_blocks",
               "kv_cache_tokens", "scheduler", "fixed_prefill_s", "fixed_decode_s", "fixed_decode_tokens_per_s",
               "fixed_tokens_per_s_per_mm2", "table_grid_points", "table_build_s", "mapping_refs", "wall_s")


@dataclass(frozen=True)
class ServingDesign:
    """One accelerator of a serving campaign, as plain data (what a Ray worker receives).

    Attributes:
        label: its name in the rows: a preset's name, a file's accelerator name, or
            ``design_<design_id>`` for a design of the template grid.
        design_id: 16 hex digits: sha256 of the accelerator in full (``arch``).
        arch: the accelerator as canonical JSON of `costmodel.loopnest.arch.Accelerator.to_dict`.
        values: the template grid's parameter values ({} for a named accelerator).
        source: "preset", "file" or "template".
        note: the values of the grid's axes that vary (``array.D1=256 array.D2=512``; "" for a
            named accelerator), for people.
    """

    label: str
    design_id: str
    arch: str
    values: dict[str, Any] = field(default_factory=dict)
    source: str = "preset"
    note: str = ""

    @classmethod
    def of(cls, label: str, acc: Any, values: dict[str, Any] | None = None, source: str = "preset") -> "ServingDesign":
        """The design of accelerator ``acc`` under ``label``."""
        arch = canonical_json(acc.to_dict())
        return cls(label, stable_hash(arch, 16), arch, dict(values or {}), source)

    def accelerator(self) -> Any:
        """The `costmodel.loopnest.arch.Accelerator` (rebuilt from ``arch``)."""
        from costmodel.loopnest.arch import accelerator_from_dict
        return accelerator_from_dict(json.loads(self.arch))

    def describe(self) -> dict[str, Any]:
        return {"label": self.label, "design_id": self.design_id, "source": self.source, "values": self.values,
                "note": self.note, "arch": json.loads(self.arch)}


@dataclass(frozen=True)
class ServingDesigns:
    """The accelerators of a serving campaign, in order: the presets, the files, then the valid
    designs of the template grid (``space``: their `sweep.config.designspace.DesignSpace`)."""

    designs: tuple[ServingDesign, ...]
    spec: dict[str, Any]
    space: Any = None

    def __len__(self) -> int:
        return len(self.designs)

    def describe(self) -> dict[str, Any]:
        """JSON-able, part of the config hash: named accelerators in full, the template grid as its
        space (template and axes)."""
        return {"spec": self.spec, "archs": [d.describe() for d in self.designs if d.source != "template"],
                "template": None if self.space is None else self.space.describe()}


@dataclass(frozen=True)
class ServingSpec:
    """The ``[serving]`` table resolved (`sweep.kinds.serving`): what every task of the campaign
    serves, as plain data.

    Attributes:
        network: the decoder: a zoo name, or the absolute path of a Hugging Face config.json.
        network_ref: ``network`` as the campaign writes it.
        model: the model's name and shape (`TransformerConfig.shape`): part of the hash, so a
            changed config.json is another campaign.
        mapper, params, objective: how the cost table's layers are mapped (as `sweep map`).
        deployment: `sweep.serving.serve.setup`'s keywords: ``weight_bits``, ``act_bits``,
            ``kv_bits`` (bits), ``fusion``, ``tp``, ``pp``, ``ep`` (chips), ``interconnect``, ``launch_us``
            (us), ``host_s`` (s); absent keys take setup's defaults.
        load: `sweep.serving.serve.Load`'s fields but the rate: ``trace`` (a bundled name or an
            absolute path), ``requests``, ``prompt``, ``output``, ``cv``, ``seed``, ``drop_long``.
        trace_digest: sha256 of the trace file (None: no trace).
        trace_ref: the trace as the campaign writes it (a bundled name or a path).
        rates: the offered rates (req/s), in the campaign's order; the goodput search starts at
            the first.
        slo: ``ttft_s`` and ``tpot_s`` (s; None: no target) and ``attainment`` (a share).
        goodput: search the goodput per (design, setting).
        scheduler: (key, values) per `costmodel.serving.SchedulerConfig` field the campaign sets,
            sorted by key; a task's setting is one point of their product (`settings`).
        grids: the cost table's grid points (`costmodel.serving.default_grids`' keys; None: the
            defaults of each setting).
        requests_served: the requests of one simulation (``load["requests"]``, or the whole trace:
            for the estimate; not part of the hash).
        mappings: "own" (each design's cost table mapped on it) or "shared" (re-costed from its
            chip's reference mappings, `sweep.serving.shared_mappings`).
        systems: (key, values) of the split's axes (``tp``, ``pp``, ``ep`` given as lists: a systems
            search); their values join each setting (`settings`) and leave ``deployment``.
    """

    network: str
    network_ref: str
    model: dict[str, Any]
    mapper: str
    params: dict[str, Any]
    objective: str
    deployment: dict[str, Any]
    load: dict[str, Any]
    trace_digest: str | None
    rates: tuple[float, ...]
    slo: dict[str, Any]
    goodput: bool
    scheduler: tuple[tuple[str, tuple], ...] = ()
    grids: dict[str, list[int]] | None = None
    trace_ref: str | None = None
    requests_served: int = 0
    mappings: str = "own"
    systems: tuple[tuple[str, tuple], ...] = ()

    def settings(self) -> list[dict[str, Any]]:
        """Every setting: the product of the ``systems`` axes (``tp``, ``ep``) then the ``scheduler``
        axes, the last key fastest ([{}]: one split, vLLM's defaults for each chip)."""
        axes = (*self.systems, *self.scheduler)
        keys = [k for k, _ in axes]
        return [dict(zip(keys, combo)) for combo in itertools.product(*(v for _, v in axes))]

    def split(self, setting: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        """(the deployment's keywords with the setting's ``tp`` / ``ep``, the setting's scheduler keys)."""
        sys_keys = {k for k, _ in self.systems}
        return ({**self.deployment, **{k: v for k, v in setting.items() if k in sys_keys}},
                {k: v for k, v in setting.items() if k not in sys_keys})

    def describe(self) -> dict[str, Any]:
        """JSON-able, part of the config hash and of every task id (the trace by its digest, a
        config.json by its shape, not by where they are)."""
        load = dict(self.load)
        if self.trace_digest is not None:
            load["trace"] = {"ref": self.trace_ref, "sha256": self.trace_digest}
        return {"network": self.network_ref, "model": self.model, "mapper": self.mapper, "params": self.params,
                "objective": self.objective, "deployment": self.deployment, "load": load, "rates": list(self.rates),
                "slo": self.slo, "goodput": self.goodput,
                "scheduler": {k: list(v) for k, v in self.scheduler}, "grids": self.grids,
                **({"mappings": self.mappings} if self.mappings != "own" else {}),
                **({"systems": {k: list(v) for k, v in self.systems}} if self.systems else {})}

    def setting_label(self, setting: dict[str, Any]) -> str:
        """A setting as text: its keys whose axis has several values (``max_num_seqs=128``), else
        every key it sets, else "defaults"."""
        varying = {k for k, v in (*self.systems, *self.scheduler) if len(v) > 1}
        return " ".join(f"{k}={v}" for k, v in setting.items() if k in varying or not varying) or "defaults"


@dataclass(frozen=True)
class ServingTask:
    """One (design, scheduler setting) of a serving campaign (module docstring)."""

    task_id: str
    design: ServingDesign
    setting: dict[str, Any]
    spec: ServingSpec
    seed: int
    refs: tuple[ServingDesign, ...] = ()   # its chip's reference designs under mappings = "shared"

    @property
    def mapper(self) -> str:
        return self.spec.mapper

    def common(self) -> dict[str, Any]:
        """The columns every row of the task starts with: the design, the setting (the campaign's
        scheduler keys as given, and ``setting`` as text), the model and the mapping."""
        d = self.design
        keys = {k: self.setting.get(k) for k, _ in (*self.spec.systems, *self.spec.scheduler)}
        return {"design": d.label, "design_id": d.design_id, "source": d.source, "design_params": d.note, **d.values,
                "setting": self.spec.setting_label(self.setting), **keys, "network": self.spec.model.get("name"),
                "mapper": self.spec.mapper, "objective": self.spec.objective, "seed": self.seed}

    def run(self) -> dict[str, pa.Table]:
        """The task's ``rates`` and ``rows`` tables (module docstring; under shared mappings
        ``mapping_refs`` names the references whose mappings its table re-costs)."""
        t0 = time.perf_counter()
        row: dict[str, Any] = {}
        try:
            acc = self.design.accelerator()
            row.update(design_figures(acc, self.spec, self.setting))
            rates, served = self._serve(acc, row)
            row.update(served)
            status, error, trace = "ok", "", ""
        except Exception as e:  # noqa: BLE001 - every row of the task says why
            status, error, trace = _failure(e)
            rates = [{"rate": float(r)} for r in self.spec.rates]
        row["wall_s"] = time.perf_counter() - t0
        head = {"status": status, "error": error, **self.common()}
        out_rates = [{**head, **dict.fromkeys(RATE_COLUMNS), **r} for r in rates]
        out_row = {**head, **dict.fromkeys(ROW_COLUMNS), **row, "traceback": trace}
        return {"rates": _table(out_rates, self.task_id), "rows": _table([out_row], self.task_id)}

    def _serve(self, acc: Any, fig: dict[str, Any]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        """(a ``rates`` row per rate, the ``rows`` figures of the served design; ``fig``: its
        `design_figures`), or raise."""
        srv = importlib.import_module(SERVE_MODULE)
        from costmodel.serving import SLO
        sp = self.spec
        deployment, scheduler = sp.split(self.setting)
        st = srv.setup(sp.network, acc, mapper=sp.mapper, objective=sp.objective, seed=self.seed,
                       params=dict(sp.params) or None, scheduler=scheduler, grids=sp.grids,
                       workers=1 if self.refs else _workers(sp.grids), **deployment,
                       mapping_refs=tuple(r.accelerator() for r in self.refs) or None)
        slo = SLO(sp.slo.get("ttft_s"), sp.slo.get("tpot_s"), sp.slo.get("attainment", 0.9))
        load = dict(sp.load)
        rates, gp = [], None
        for i, r in enumerate(sp.rates):
            run = srv.serve(st, srv.Load(rate=float(r), **load), slo, search_goodput=sp.goodput and i == 0)
            if i == 0:
                gp = run["goodput"]
            rates.append({"rate": float(r), **flat_summary(run["summary"], slo.attainment), "sim_s": run["sim_s"]})
        return rates, self._served_row(st, fig, gp)

    def _served_row(self, st: Any, fig: dict[str, Any], gp: dict[str, Any] | None) -> dict[str, Any]:
        """The ``rows`` figures of a served design: its goodput, per mm^2 and per US dollar of the
        system (``fig``: `design_figures`), its KV cache and its cost table."""
        sys_area, sys_cost = fig["system_area_mm2"], fig["cost_usd"]
        g = None if gp is None else float(gp["goodput_rps"])
        from costmodel.serving import fixed_steps
        kv, meta = st.kv, st.table.meta
        fx = fixed_steps(st.table, st.cfg.max_num_batched_tokens)
        return {"goodput_rps": g,
                "goodput_per_mm2": None if g is None or not sys_area else g / sys_area,
                "goodput_per_usd": None if g is None or not sys_cost else g / sys_cost,
                "goodput_missed_rps": None if gp is None or gp["bracket"][1] is None else float(gp["bracket"][1]),
                "goodput_simulations": None if gp is None else int(gp["simulations"]),
                "goodput_start_rps": float(self.spec.rates[0]) if gp is not None else None,
                "goodput_points": None if gp is None else canonical_json(gp["points"]),
                "memory_gb": None if kv.get("capacity_bytes") is None else kv["capacity_bytes"] / 1e9,
                "weights_gb": kv["weights_bytes"] / 1e9, "kv_blocks": int(st.num_blocks),
                "kv_cache_tokens": int(st.num_blocks * st.cfg.block_size),
                "scheduler": canonical_json(st.cfg.to_dict()),
                "fixed_prefill_s": fx["prefill_s"], "fixed_decode_s": fx["decode_s"],
                "fixed_decode_tokens_per_s": fx["decode_tokens_per_s"],
                "fixed_tokens_per_s_per_mm2": fx["decode_tokens_per_s"] / sys_area if sys_area else None,
                "table_grid_points": int(meta.get("grid_points", 0)), "table_build_s": float(meta.get("build_s", 0.0)),
                "mapping_refs": " ".join(r.label for r in self.refs) or None}


def design_figures(acc: Any, spec: ServingSpec, setting: dict[str, Any] | None = None) -> dict[str, Any]:
    """A design's own figures, served or not: ``area_mm2`` (one chip), ``chips`` (tp x pp x ep of the
    deployment, the setting's where it has a systems axis), ``system_area_mm2`` (chips x area),
    ``chip_cost_usd`` and ``cost_usd`` (the system's, `_area_cost`), ``clock_mhz``, ``pe_count``,
    ``dram`` (its kind) and ``dram_units``."""
    area, cost, dram_units = _area_cost(acc)
    dep = spec.split(setting or {})[0]
    chips = int((dep.get("tp") or 1) * (dep.get("pp") or 1) * (dep.get("ep") or 1))
    dram = getattr(acc, "dram", None)
    return {"area_mm2": area, "chips": chips, "system_area_mm2": None if area is None else chips * area,
            "chip_cost_usd": cost, "cost_usd": None if cost is None else chips * cost,
            "clock_mhz": float(acc.clock_mhz), "pe_count": int(acc.pe_count), "dram": dram[0] if dram else None,
            "dram_units": dram_units}


def flat_summary(summary: dict[str, Any], attainment: float) -> dict[str, Any]:
    """A served load's summary (`costmodel.serving.metrics.summary`) as flat columns: each latency's
    mean and percentiles as ``<name>_<stat>_s`` (seconds), the other figures under their own names,
    and ``meets_slo`` (the attainment is at least ``attainment``; None without an SLO)."""
    out: dict[str, Any] = {}
    for k in PERCENTILE_KEYS:
        for s in _STATS:
            out[f"{k[:-2]}_{s}_s"] = summary[k][s]
    for k in _SUMMARY_KEYS:
        out[k] = summary.get(k)
    att = summary.get("slo_attainment")
    out["meets_slo"] = None if att is None else bool(att >= attainment)
    return out


def _failure(e: BaseException) -> tuple[str, str, str]:
    """(status, reason, traceback) of a task that raised: "infeasible" when the deployment does not
    fit the design or a part has no valid mapping (`CampaignError` / `ExecutionError` from setup:
    the reason is its message), "error" otherwise."""
    from sweep.common.errors import CampaignError, ExecutionError
    if isinstance(e, CampaignError):
        return "infeasible", "; ".join(p.message for p in e.problems), ""
    if isinstance(e, ExecutionError):
        return "infeasible", str(e), ""
    return "error", f"{type(e).__name__}: {e}", traceback.format_exc()[-4000:]


def _area_cost(acc: Any) -> tuple[float | None, float | None, int | None]:
    """(chip area mm^2, chip cost USD, DRAM units) of ``acc``: `costmodel.loopnest.physics.design_area_mm2`,
    and `costmodel.system.cost.chip_cost_usd` at 20 nm (the die from its area, the package, the DRAM
    at its kind's price per GB, as `sweep.reports.systems.design_costs`; a DRAM that is a plain
    level is not costed); None where the model gives none."""
    from costmodel.loopnest.physics import design_area_mm2
    from costmodel.system.cost import chip_cost_usd
    from costmodel.tech.dram import dram_capacity_bytes
    try:
        area = float(design_area_mm2(acc))
    except (ValueError, TypeError, KeyError):
        return None, None, None
    dram = getattr(acc, "dram", None)
    kind, units = (str(dram[0]), int(dram[1])) if dram else (None, None)
    try:
        size = dram_capacity_bytes(kind, units, getattr(acc, "dram_gib_per_unit", None)) \
            if kind is not None and units is not None else 0
        cost: float | None = float(chip_cost_usd(area, kind, size))
    except ValueError:
        cost = None
    return (area if math.isfinite(area) and area > 0 else None), cost, units


#: A cost table of fewer grid points than this is mapped in the task's process: a pool's start and
#: its workers' separate layer caches cost more than they save (20 points of llama3_2_1b on a100:
#: 2.6 s in-process, 4.1 s on 2 workers).
SMALL_TABLE = 64


def _workers(grids: dict[str, list[int]] | None) -> int | None:
    """Processes mapping a cost table: one inside a Ray worker (Ray runs a task per CPU already) or
    for a small table (`SMALL_TABLE`), else setup's default (the CPUs, at most 4). The table is the
    same for any number (`sweep.serving.table_build.build_cost_table`)."""
    import sys
    if grids is not None and (len(grids["tokens"]) + len(grids["seqs"]) + len(grids["contexts"])
                              + len(grids["chunk_q"]) * len(grids["chunk_p"])) < SMALL_TABLE:
        return 1
    ray = sys.modules.get("ray")
    try:
        if ray is not None and ray.is_initialized() and ray.get_runtime_context().get_task_id() is not None:
            return 1
    except Exception:  # noqa: BLE001 - not in a task
        pass
    return None


def _table(rows: list[dict[str, Any]], task_id: str) -> pa.Table:
    """Rows (dicts with the same keys) as an Arrow table with ``task_id`` first."""
    keys = list(dict.fromkeys(k for r in rows for k in r))
    cols: dict[str, Any] = {"task_id": pa.array([task_id] * len(rows), pa.string())}
    for k in keys:
        vals = [_plain(r.get(k)) for r in rows]
        cols[k] = pa.array(vals) if any(v is not None for v in vals) else pa.nulls(len(rows), pa.null())
    return pa.table(cols)


def _plain(v: Any) -> Any:
    """A value as Arrow takes it: NumPy scalars as Python ones, non-finite floats as None."""
    v = v.item() if hasattr(v, "item") else v
    return None if isinstance(v, float) and not math.isfinite(v) else v


def task_id(design: ServingDesign, setting: dict[str, Any], spec: ServingSpec, seed: int,
            refs: tuple[ServingDesign, ...] = ()) -> str:
    """24 hex digits: sha256 of everything that determines the task's rows (module docstring; the
    references' accelerators under shared mappings)."""
    from costmodel.loopnest.reference import MODEL_VERSION
    from mappers import get_mapper
    doc = {"kind": "serving", "version": SERVING_TASK_VERSION, "loopnest_model": MODEL_VERSION,
           "mapper_version": get_mapper(spec.mapper).version, "design": design.describe(), "setting": setting,
           "spec": spec.describe(), "seed": seed}
    if refs:
        doc["mapping_refs"] = [r.arch for r in refs]
    return stable_hash(doc, 24)


def serving_tasks(designs, spec: ServingSpec, seed: int) -> Iterator[Any]:
    """The tasks of a serving campaign: each design (in the campaign's order) x each setting
    (`ServingSpec.settings`), the setting fastest; under ``mappings = "shared"`` these grouped by
    chip and setting (`serving_groups`)."""
    if spec.mappings != "shared":
        for d in designs:
            for s in spec.settings():
                yield ServingTask(task_id(d, s, spec, seed), d, s, spec, seed)
        return
    refs = reference_designs(list(designs))
    yield from serving_groups([ServingTask(task_id(d, s, spec, seed, refs[d.design_id]), d, s, spec, seed,
                                           refs[d.design_id]) for d in designs for s in spec.settings()])


def count_serving_tasks(designs, spec: ServingSpec) -> int:
    """How many tasks `serving_tasks` yields, without building them (under shared mappings: its
    groups, counted from the designs' chips)."""
    if spec.mappings != "shared":
        return len(designs) * len(spec.settings())
    sizes: dict[tuple, int] = {}
    for refs in reference_designs(list(designs)).values():
        key = tuple(r.design_id for r in refs)
        sizes[key] = sizes.get(key, 0) + 1
    return sum(-(-n // GROUP_DESIGNS) for n in sizes.values()) * len(spec.settings())


# -- shared mappings: the designs of one chip in one task ---------------------------------------

#: The most designs of one chip in one task (a chip with more is split; each part maps the
#: references unless its process already holds them).
GROUP_DESIGNS = 256

#: What a mapper reads of the outermost memory that a shared mapping re-costs (left out of `chip_view`).
_DRAM_FIGURES = ("read_pj", "write_pj", "word_bits", "read_bw", "write_bw")
#: What the accelerator description holds that no mapper reads, or that a shared mapping re-costs.
_NOT_CHIP = ("name", "description", "clock_mhz", "dram", "dram_gib_per_unit", "vector", "tech", "launch_overhead_us")


def chip_view(arch: dict[str, Any]) -> str:
    """The chip of an accelerator (``arch``: `Accelerator.to_dict`): canonical JSON of everything a
    mapper reads but the clock and the outermost memory's energies, word width and bandwidths (and
    what no mapper reads: the name, DRAM kind and capacity, vector unit, technology, launch cost).
    Designs of one chip differ only in what `sweep.serving.shared_mappings` re-costs."""
    d = {k: v for k, v in arch.items() if k not in _NOT_CHIP}
    mems = [dict(m) for m in arch.get("memory", [])]
    if mems:
        top = mems[-1]
        mems[-1] = {k: v for k, v in top.items() if k not in _DRAM_FIGURES}
    d["memory"] = mems
    return canonical_json(d)


def dram_bits_per_cycle(arch: dict[str, Any]) -> float:
    """The outermost memory's read bandwidth (bits per cycle of the accelerator's clock)."""
    mems = arch.get("memory", [])
    return float(mems[-1].get("read_bw", 0.0)) if mems else 0.0


def reference_designs(designs: Sequence[Any]) -> dict[str, tuple[Any, ...]]:
    """design_id -> the references of its chip (module docstring), as `ServingDesign`s: (slowest
    DRAM, fastest DRAM), or one design when they are the same."""
    chips: dict[str, list[Any]] = {}
    for d in designs:
        chips.setdefault(chip_view(json.loads(d.arch)), []).append(d)
    out: dict[str, tuple[Any, ...]] = {}
    for members in chips.values():
        bw = [dram_bits_per_cycle(json.loads(d.arch)) for d in members]
        lo = members[min(range(len(members)), key=lambda i: (bw[i], i))]
        hi = members[min(range(len(members)), key=lambda i: (-bw[i], i))]
        refs = (lo,) if lo.design_id == hi.design_id else (lo, hi)
        for d in members:
            out[d.design_id] = refs
    return out


@dataclass(frozen=True)
class ServingGroup:
    """`ServingTask`s of one chip and one scheduler setting run in one process (module docstring);
    ``task_id`` = sha256 of the members' task ids."""

    task_id: str
    members: tuple[Any, ...]          # sweep.engine.serving_tasks.ServingTask, each with its refs

    @property
    def mapper(self) -> str:
        return self.members[0].mapper

    @property
    def design(self) -> Any:
        """The first member's design (what the kind warms the kernel up on)."""
        return self.members[0].design

    @property
    def spec(self) -> Any:
        return self.members[0].spec

    def run(self) -> dict[str, pa.Table]:
        """Every member's ``rates`` and ``rows``, in order, under this group's task id."""
        parts: dict[str, list[pa.Table]] = {}
        for m in self.members:
            for name, t in m.run().items():
                parts.setdefault(name, []).append(t.set_column(0, "task_id", pa.array([self.task_id] * len(t),
                                                                                      pa.string())))
        return {name: pa.concat_tables(ts, promote_options="permissive") for name, ts in parts.items()}


def serving_groups(tasks: Sequence[Any], size: int | None = None) -> Iterator[ServingGroup]:
    """``tasks`` (`ServingTask`s with their refs) grouped by (chip references, setting), in the
    order each group's first task comes, each group cut into runs of at most ``size`` (None:
    `GROUP_DESIGNS`)."""
    size = GROUP_DESIGNS if size is None else size
    groups: dict[str, list[Any]] = {}
    for t in tasks:
        key = canonical_json({"refs": [r.design_id for r in t.refs], "setting": t.setting})
        groups.setdefault(key, []).append(t)
    for members in groups.values():
        for k in range(0, len(members), size):
            part = tuple(members[k:k + size])
            yield ServingGroup(stable_hash([m.task_id for m in part], 24), part)
