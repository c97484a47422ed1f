"""Kind ``serving``: requests served by a decoder on accelerators, swept over designs, vLLM V1
scheduler settings and offered rates (`sweep.engine.serving_tasks`); `sweep.reports.serving.campaign`
reports the goodput per design and setting and the latencies per rate.

Campaign form (``campaigns/llm_serving_requests.toml``)::

    [architectures]
    kind = "serving"
    presets = ["a100"]                 # loop-nest accelerators: presets and/or files = [...]
    template = "llm_ws"                # and/or a template with a grid (`sweep.config.designspace`)
    grid = { "array.D1" = [256, 512] } # (each design an accelerator of the template)

    [serving]
    network = "llama3_8b"              # a zoo decoder or a config.json (relative to the campaign)
    mapper = "salsa"                   # the cost table's layers (params = {...}: the mapper's)
    trace = "azure_conv_2023"          # bundled name or a CSV / JSONL path; without it a synthetic
    drop_long_prompts = true           # load of prompt / output lengths ("512", "lognormal:M:S")
    requests = 2000                    # per simulation
    rates = [2, 4, 6, 8]               # offered req/s: Poisson arrivals (cv = 1) of the trace's lengths
    slo_ttft = 2.0                     # s
    slo_tpot = 0.1                     # s
    attainment = 0.9                   # share of requests meeting both (DistServe's attainment)
    goodput = true                     # search the goodput per (design, setting), from the first rate
    mappings = "own"                   # or "shared": a chip's designs re-cost its reference mappings
    # weight_bits, act_bits, kv_bits, fusion, tp, ep, interconnect, launch_us, host_ms, load_seed, columns

    [serving.scheduler]                # `costmodel.serving.SchedulerConfig` fields, a value or a list each
    max_num_seqs = [128, 256]

    [serving.grids]                    # optional: the cost table's grid points (all five keys)
    tokens = [1, 8, 64, 512, 2048]     # seqs, contexts, chunk_q, chunk_p likewise

The objective (``objectives``, one: latency by default) is what each layer's mapping minimises and
``seeds`` (one) the mapper's seed, as in `sweep serve` (``--seed``); the load's arrivals are seeded
by ``load_seed`` (default 0, `sweep serve --load-seed`). Such a campaign names no ``networks`` and
no ``[[mappers]]``: its ``[serving]`` table says what is mapped and how. Every value is checked
before anything runs, naming its key (exit 2); what only a design can tell (its memory holds the
weights and a KV block, a part has a valid mapping) is a row with status ``infeasible`` and the reason.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any, Iterator

from sweep.config.validation import Bad, check_table, resolve_path
from sweep.engine.serving_tasks import (SERVING_TASK_VERSION, ServingDesign, ServingDesigns, ServingSpec,
                                        count_serving_tasks, serving_tasks)
from sweep.kinds.base import CampaignKind
from sweep.kinds.serving_config import GRID_KEYS, MAPPINGS, SCHEDULER_KEYS, SERVING_KEYS, parse_serving

__all__ = ["ServingKind", "parse_designs", "parse_serving", "SERVING_KEYS", "ARCH_KEYS", "GRID_KEYS", "SCHEDULER_KEYS",
           "MAPPINGS", "TABLE_POINT_S", "RECOST_POINT_S", "SIM_S", "REQUEST_SIM_S", "GOODPUT_SIMS"]

#: The keys of ``[architectures]`` for kind ``serving``.
ARCH_KEYS = ("kind", "presets", "files", "template", "grid")
#: CPU-seconds of mapping per cost-table grid point with salsa's defaults: campaigns/
#: llm_serving_requests.toml with --executor local on 2 cores (Intel Xeon, 2026-12-01), Llama-3-8B,
#: the default grids of 2,048 tokens x 128 or 256 sequences x 8,192 contexts (359 / 361 points), 2
#: mapping processes: a100 20.8-21.6 s a table, its llm_ws designs 5.6-10.5 s. The estimate takes
#: a100's (the slowest), so llm_ws designs come out up to 2x long.
TABLE_POINT_S = 0.12
#: CPU-seconds per grid point of a cost table re-costed from its chip's reference mappings
#: (`sweep.serving.shared_mappings`): campaigns/llm_serving_archsearch.toml on 2 cores (2026-12-02),
#: Llama-3-8B, 361 points, 0.08 s a table (median over 1,053 designs).
RECOST_POINT_S = 0.00022
#: Seconds of one simulation besides its requests' and per request served (the same run: 3 rates
#: and the goodput search of 2,000 requests each, 0.48 s a design, median; the trace parsed once per
#: process).
SIM_S, REQUEST_SIM_S = 0.005, 1.5e-5
#: Simulations a goodput search takes, about (the same run: 7 to 10).
GOODPUT_SIMS = 10


def _named(value: dict, base_dir: Path, bad: Bad) -> list[ServingDesign]:
    """The ``presets`` and ``files`` of ``[architectures]`` as designs."""
    from costmodel.loopnest.arch import list_accelerators, load_accelerator
    out: list[ServingDesign] = []
    for key, source in (("presets", "preset"), ("files", "file")):
        items = value.get(key, [])
        if not isinstance(items, list) or not all(isinstance(p, str) for p in items):
            bad(f"architectures.{key}", items, "expected a list of " + ("preset names" if source == "preset" else
                                                                      "accelerator TOML paths"))
            continue
        for i, name in enumerate(items):
            if source == "preset" and name not in list_accelerators():
                bad(f"architectures.presets[{i}]", name, f"unknown loop-nest accelerator; known: {list_accelerators()}")
                continue
            try:
                acc = load_accelerator(name if source == "preset" else resolve_path(name, base_dir))
            except (OSError, ValueError, TypeError, KeyError) as e:
                bad(f"architectures.{key}[{i}]", name, str(e))
                continue
            out.append(ServingDesign.of(name if source == "preset" else acc.name, acc, source=source))
    return out


def parse_designs(value: Any, base_dir: Path, bad: Bad) -> ServingDesigns | None:
    """``[architectures]`` of kind ``serving``: ``presets`` and / or ``files`` (loop-nest
    accelerators) and / or a ``template`` with a ``grid`` (`sweep.config.designspace`, without
    dataflows: the mapper keeps each design's own unrolling); None if unusable."""
    from sweep.config.designspace import parse_design_space
    from sweep.engine.design_tasks import design_name
    if not isinstance(value, dict):
        bad("architectures", value, "required: a table with presets, files and / or a template with a grid")
        return None
    check_table(value, "architectures", ARCH_KEYS, bad)
    if not any(k in value for k in ("presets", "files", "template")):
        bad("architectures", value, "kind 'serving' needs presets = [...], files = [...] and / or a template "
            "with a grid")
        return None
    designs = _named(value, base_dir, bad)
    space = None
    if "template" in value or "grid" in value:
        space = parse_design_space({k: value[k] for k in ("kind", "template", "grid") if k in value}, base_dir, bad)
        if space is not None:
            told = _telling_axes(space)
            for i in range(len(space)):
                vals = space.point(i)
                did = space.design_id(vals)
                acc = space.template.design(vals, name=design_name(did))
                d = ServingDesign.of(design_name(did), acc, vals, "template")
                note = " ".join(f"{n}={vals[n]}" for n in told)
                designs.append(ServingDesign(d.label, did, d.arch, d.values, d.source, note))
    labels = [d.label for d in designs]
    if len(set(labels)) != len(labels):
        bad("architectures", value, f"accelerator names must be unique, got {labels}")
    return ServingDesigns(tuple(designs), {k: value[k] for k in value}, space)


def _telling_axes(space: Any) -> list[str]:
    """The grid axes that tell the valid designs apart, for their notes: those with several values,
    less any whose value follows from an earlier one's over the valid designs (a word width the
    constraints tie to an array dimension)."""
    cols = {n: space.values[:, j] for j, n in enumerate(space.names)}
    keep: list[str] = []
    for n in space.names:
        if len(set(cols[n])) < 2:
            continue
        if not any(len(set(zip(cols[m], cols[n]))) == len(set(cols[m])) for m in keep):
            keep.append(n)
    return keep


def _check_settings(spec: ServingSpec, designs: ServingDesigns | None, cfg: Any, bad: Bad) -> None:
    """Each scheduler setting as `sweep.serving.serve.setup` completes it on each design (vLLM's
    defaults for the chip's memory, max_model_len the model's context) is a valid
    `costmodel.serving.SchedulerConfig`; a bad value is named by its key (the first design it fails on)."""
    from costmodel.serving import SchedulerConfig, vllm_defaults
    seen: set[str] = set()
    for d in (designs.designs if designs is not None else ()):
        acc = d.accelerator()
        cap = _capacity_bytes(acc)
        for s in spec.settings():
            kw = spec.split(s)[1]
            if kw.get("max_model_len", 0) > cfg.max_context and cfg.max_positions and "max_model_len" not in seen:
                seen.add("max_model_len")
                bad("serving.scheduler.max_model_len", kw["max_model_len"],
                    f"past {cfg.name}'s learned positions ({cfg.max_context})")
            kw.setdefault("max_model_len", cfg.max_context)
            if kw.get("chunked_prefill") is False:
                kw.setdefault("max_num_batched_tokens", kw["max_model_len"])
            for k, v in vllm_defaults(None if cap is None else cap / 2**30, acc.name).items():
                kw.setdefault(k, v)
            try:
                SchedulerConfig(**kw)
            except (ValueError, TypeError) as e:
                key = str(e).split(" =")[0]
                msg = f"{e} (on {d.label})"
                if key not in s:   # a default the setting leaves: name the key the campaign sets
                    msg = (f"{e}: {key} is not set, so {d.label} runs vLLM v0.11.0's default; set it in "
                           "[serving.scheduler] too")
                    key = next(iter(s), "scheduler")
                if key not in seen:
                    seen.add(key)
                    bad(f"serving.scheduler.{key}", s.get(key), msg)


def _capacity_bytes(acc: Any) -> int | None:
    """The DRAM capacity of ``acc`` (bytes; None when its DRAM is not of a kind), as
    `costmodel.capacity` reads it."""
    dram = getattr(acc, "dram", None)
    if dram is None:
        return None
    from costmodel.tech.dram import dram_capacity_bytes
    return dram_capacity_bytes(dram[0], dram[1], getattr(acc, "dram_gib_per_unit", None))


def _check_mapper(spec: ServingSpec, designs: ServingDesigns, bad: Bad) -> None:
    """A mapper that searches each layer's spatial unrolling needs a ``[spatial_hint]`` on every
    design (as `sweep.kinds.loopnest.LoopnestKind.check`)."""
    from costmodel.serving import Deployment, dense_part
    from mappers import get_mapper
    from mappers.base import LayerProblem
    mapper = get_mapper(spec.mapper)
    if not mapper.searches_spatial:
        return
    layer = dense_part(Deployment(spec.network), 1).layers[0]
    for d in designs.designs:
        acc = d.accelerator()
        if acc.spatial_hint is None and mapper.spatial_mode(LayerProblem(layer, acc, None), spec.params) == "search":
            bad("serving.params.spatial", spec.params.get("spatial"),
                f"accelerator {d.label!r} has no [spatial_hint] to search; add one or use \"fixed\"")
            return


class ServingKind(CampaignKind):
    """Accelerators (presets, files, a template grid) serving one decoder's requests: a task per
    (design, scheduler setting) maps the cost table once and serves every rate (module docstring);
    tables ``rates`` (per rate) and ``rows`` (per design and setting: the goodput)."""

    name = "serving"
    arch_kind = "serving"
    mapper_kind = "loopnest"
    objectives = ("latency", "energy", "edp")
    report_module = "sweep.reports.serving.campaign"
    html_module = "sweep.reports.html.serving"
    tables = ("rates", "rows")
    arch_help = "loop-nest accelerators serving a decoder's requests ([serving]: trace, rates, SLO, scheduler)"
    #: Top-level tables of its campaigns besides `sweep.config.campaign.TOP_KEYS`.
    top_keys = ("serving",)
    #: Its campaigns name no ``networks`` and no ``[[mappers]]`` (``[serving]`` says both).
    common_tables = False

    def parse_sections(self, data: dict[str, Any], base_dir: Path, objectives: list, seeds: list,
                       bad: Bad) -> tuple[Any, Any]:
        """The designs and the ``[serving]`` spec (returned as the kind's own section, the campaign's
        ``search`` slot); one objective and one seed (the mapper's)."""
        for k, why in (("networks", "give the decoder as [serving] network"),
                       ("mappers", "give the cost table's mapper as [serving] mapper (and params)"),
                       ("workload", "[serving] gives the load"), ("system", "[serving] tp, ep and interconnect "
                       "give the split"), ("search", "a serving campaign serves every design"),
                       ("systolic", "not used by kind serving")):
            if k in data:
                bad(k, data[k], f"not used by kind 'serving': {why}")
        if len(objectives) != 1:
            bad("objectives", objectives, "a serving campaign maps its cost tables for one objective: give one")
        if len(seeds) != 1:
            bad("seeds", seeds, "a serving campaign maps with one seed (the mapper's; [serving] load_seed seeds "
                "the arrivals): give one")
        designs = parse_designs(data.get("architectures"), base_dir, bad)
        parsed = parse_serving(data.get("serving"), base_dir, str(objectives[0]) if objectives else "latency", bad)
        if parsed is None or designs is None:
            return designs, None
        spec, cfg, served = parsed
        _check_settings(spec, designs, cfg, bad)
        _check_mapper(spec, designs, bad)
        return designs, replace(spec, requests_served=served)

    def config_extras(self, campaign: Any) -> dict[str, Any]:
        from costmodel.loopnest.reference import MODEL_VERSION
        return {"serving": campaign.search.describe(), "loopnest_model": MODEL_VERSION,
                "serving_tasks": SERVING_TASK_VERSION}

    def expand(self, campaign: Any) -> Iterator[Any]:
        """Each design in order, each scheduler setting (`sweep.engine.serving_tasks.serving_tasks`)."""
        return serving_tasks(campaign.architectures.designs, campaign.search, campaign.seeds[0])

    def count(self, campaign: Any) -> int:
        return count_serving_tasks(campaign.architectures.designs, campaign.search)

    def warm_up(self, task: Any) -> None:
        """The loop-nest kernel, on the first design's first dense matmul."""
        from costmodel.serving import Deployment, dense_part
        from sweep.kinds.layers import compile_kernel
        try:
            layer = dense_part(Deployment(task.spec.network), 1).layers[0]
        except Exception:  # noqa: BLE001 - a warm-up only
            return
        compile_kernel(layer, task.design.accelerator(), None)

    def describe_archs(self, campaign: Any) -> str:
        sp = campaign.search
        return (f"{len(campaign.architectures):,} design(s) x {len(sp.settings())} scheduler setting(s) x "
                f"{len(sp.rates)} rate(s) serving {sp.model['name']}")

    def describe_run(self, campaign: Any) -> str:
        return self.describe_archs(campaign)

    def estimate(self, campaign: Any) -> Any:
        """Every task: its cost table's grid points x `TABLE_POINT_S` (the setting's grids: vLLM's
        defaults for the chip where the setting leaves them; under shared mappings x `RECOST_POINT_S`,
        plus `TABLE_POINT_S` per point once per reference and setting), and its simulations (a rate
        each, about `GOODPUT_SIMS` more for the goodput) x the requests x `REQUEST_SIM_S`."""
        from costmodel.serving import default_grids, vllm_defaults
        from sweep.engine.serving_tasks import reference_designs
        from sweep.kinds.estimate import Estimate
        sp = campaign.search
        est = Estimate(note="cost tables at a100's mapping time per grid point (TABLE_POINT_S)")
        sims = (len(sp.rates) + (GOODPUT_SIMS if sp.goodput else 0)) * (SIM_S + sp.requests_served * REQUEST_SIM_S)
        ctx = int(sp.model["shape"].get("max_context") or 8192)
        designs = campaign.architectures.designs
        refs = reference_designs(designs) if sp.mappings == "shared" else {}
        mapped: set[tuple] = set()
        groups: dict[tuple, float] = {}
        for d in designs:
            cap = _capacity_bytes(d.accelerator())
            base = vllm_defaults(None if cap is None else cap / 2**30, d.label)
            for i, s in enumerate(sp.settings()):
                g = sp.grids or default_grids(int(s.get("max_num_batched_tokens", base["max_num_batched_tokens"])),
                                              int(s.get("max_num_seqs", base["max_num_seqs"])),
                                              int(s.get("max_model_len", ctx)))
                points = len(g["tokens"]) + len(g["seqs"]) + len(g["contexts"]) + len(g["chunk_q"]) * len(g["chunk_p"])
                if d.design_id not in refs:
                    est.add(points * TABLE_POINT_S + sims)
                    continue
                new = {(r.design_id, i) for r in refs[d.design_id]} - mapped
                mapped |= new
                key = (tuple(r.design_id for r in refs[d.design_id]), i)
                groups[key] = groups.get(key, 0.0) + points * (RECOST_POINT_S + len(new) * TABLE_POINT_S) + sims
        for seconds in groups.values():      # a task per chip and setting (`serving_groups`)
            est.add(seconds)
        return est

    def describe_valid(self, campaign: Any, path: Path) -> str:
        """The counts; the model, its deployment and the mapping; the designs (area); the settings;
        the load and the SLO; the estimated run time."""
        from sweep.common.fmt import words
        from sweep.kinds.estimate import cpus
        c, sp, ds = campaign, campaign.search, campaign.architectures
        dep = ", ".join([*(f"{k} {v}" for k, v in sp.deployment.items()),
                         *(f"{k} {' / '.join(map(str, v))} (an axis)" for k, v in sp.systems)]) \
            or "one chip, the accelerator's precisions"
        shown = [f"{d.label} ({d.source}" + (f" {ds.space.template_ref} {d.note}".rstrip() if d.source == "template"
                                             else "") + (f", {_area(d):.1f} mm^2)" if _area(d) else ")")
                 for d in ds.designs[:12]]
        more = f" and {len(ds) - 12:,} more" if len(ds) > 12 else ""
        slo = " and ".join(f"{n} <= {sp.slo[k]:g} s" for k, n in (("ttft_s", "TTFT"), ("tpot_s", "TPOT"))
                           if sp.slo[k] is not None) or "none"
        src = sp.load["trace"] or f"synthetic lengths prompt {sp.load['prompt']}, output {sp.load['output']}"
        lines = [f"{path}: valid serving campaign. {self.describe_archs(c)}: "
                 f"{self.count(c):,} task(s) -> {c.output}",
                 f"  deployment: {dep}; cost tables mapped by {sp.mapper} (objective {sp.objective}, seed {c.seeds[0]}"
                 + (f", params {sp.params}" if sp.params else "") + ")" + (", grids given" if sp.grids else "")
                 + _shared_text(sp, ds),
                 f"  designs: {', '.join(shown)}{more}"]
        if ds.space is not None:
            lines.append(f"  template {ds.space.template_ref}: {ds.space.total:,} grid point(s), {len(ds.space):,} "
                         "valid design(s); dropped: " + (", ".join(f"{k}: {v:,}" for k, v in ds.space.dropped.items())
                                                         or "none"))
        lines += [f"  {'settings (the split, then ' if sp.systems else 'scheduler settings ('}vLLM V1; unset keys: "
                  "vLLM v0.11.0's defaults for each chip): "
                  f"{words(sp.setting_label(s) for s in sp.settings())}",
                  f"  load: {sp.requests_served:,} requests of {src} per simulation, Poisson arrivals "
                  f"(cv {sp.load['cv']})"
                  f" at {words(f'{r:g}' for r in sp.rates)} req/s, load seed {sp.load['seed']}",
                  f"  SLO: {slo} for >= {sp.slo['attainment']:.0%} of the requests"
                  + (f"; goodput searched from {sp.rates[0]:g} req/s" if sp.goodput else ""),
                  f"  {self.estimate(c).line(cpus(c))}"]
        return "\n".join(lines)


def _shared_text(sp: ServingSpec, ds: ServingDesigns) -> str:
    """Under shared mappings: how many chips and reference designs map (the rest re-cost)."""
    if sp.mappings != "shared":
        return ""
    from sweep.engine.serving_tasks import reference_designs
    refs = reference_designs(list(ds.designs))
    chips = {tuple(r.design_id for r in v) for v in refs.values()}
    n_ref = len({i for c in chips for i in c})
    return (f"; mappings shared: {len(chips):,} chip(s), {n_ref:,} reference design(s) mapped, the other "
            f"{len(ds) - n_ref:,} re-cost their chip's mappings")


def _area(d: ServingDesign) -> float | None:
    from costmodel.loopnest.physics import design_area_mm2
    try:
        return float(design_area_mm2(d.accelerator()))
    except (ValueError, TypeError, KeyError):
        return None
