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

import hashlib
import math
from dataclasses import replace
from pathlib import Path
from typing import Any, Iterator

from sweep.config.validation import (NOT_FINITE, Bad, check_seed, check_table, is_finite, is_int,
                                     resolve_path)
from sweep.engine.serving_tasks import (SERVING_TASK_VERSION, ServingDesign, ServingDesigns, ServingSpec,
                                        count_serving_tasks, serving_tasks)
from sweep.kinds.base import CampaignKind

__all__ = ["ServingKind", "parse_designs", "parse_serving", "SERVING_KEYS", "ARCH_KEYS", "GRID_KEYS", "SCHEDULER_KEYS",
           "TABLE_POINT_S", "RECOST_POINT_S", "SIM_S", "REQUEST_SIM_S", "GOODPUT_SIMS"]

#: The keys of ``[architectures]`` for kind ``serving``.
ARCH_KEYS = ("kind", "presets", "files", "template", "grid")
#: The keys of ``[serving]``.
SERVING_KEYS = ("network", "mapper", "params", "trace", "columns", "drop_long_prompts", "requests", "prompt",
                "output", "cv", "load_seed", "rates", "slo_ttft", "slo_tpot", "attainment", "goodput",
                "weight_bits", "act_bits", "kv_bits", "fusion", "tp", "ep", "interconnect", "launch_us", "host_ms",
                "scheduler", "grids", "mappings")
#: The values of ``[serving] mappings``: each design's cost table mapped on it, or re-costed from
#: its chip's reference designs (`sweep.serving.shared_mappings`).
MAPPINGS = ("own", "shared")
#: The keys of ``[serving.grids]`` (`costmodel.serving.default_grids`), each with its least value.
GRID_KEYS = {"tokens": 1, "seqs": 1, "contexts": 1, "chunk_q": 2, "chunk_p": 0}
#: The keys of ``[serving.scheduler]``: vLLM's names (`costmodel.serving.SchedulerConfig`; the
#: host's time is ``[serving] host_ms``).
SCHEDULER_KEYS = ("max_num_seqs", "max_num_batched_tokens", "block_size", "chunked_prefill", "max_model_len",
                  "gpu_memory_utilization", "long_prefill_token_threshold", "num_blocks", "graphs")
#: CPU-seconds of mapping per cost-table grid point with salsa's defaults: campaigns/
#: llm_serving_requests.toml with --executor local on 2 cores (Intel Xeon, 2026-12-01), Llama-3-8B,
#: the default grids of 2,048 tokens x 128 or 256 sequences x 8,192 contexts (359 / 361 points), 2
#: mapping processes: a100 20.8-21.6 s a table, its llm_ws designs 5.6-10.5 s. The estimate takes
#: a100's (the slowest), so llm_ws designs come out up to 2x long.
TABLE_POINT_S = 0.12
#: CPU-seconds per grid point of a cost table re-costed from its chip's reference mappings
#: (`sweep.serving.shared_mappings`): llm_ws 256 x 256 designs of six DRAMs and clocks, Llama-3-8B,
#: 361 points, 0.55-0.64 s a table (2026-12-02).
RECOST_POINT_S = 0.0017
#: Seconds of one simulation besides its requests' (reading the trace, building the load) and per
#: request served (the same run: 13 simulations of 2,000 requests about 2 s a task, the event loop
#: itself 0.03-0.09 s of it).
SIM_S, REQUEST_SIM_S = 0.15, 2e-5
#: Simulations a goodput search takes, about (the same run: 7 to 10).
GOODPUT_SIMS = 10
_BITS = ("weight_bits", "act_bits", "kv_bits")


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


def _number(v: Any, key: str, bad: Bad, lo: float = 0.0, strict: bool = True, unit: str = "") -> bool:
    """``v`` is a finite number > ``lo`` (>= when not ``strict``); else a finding at ``key``."""
    if is_finite(v) and (v > lo if strict else v >= lo):
        return True
    bad(key, v, NOT_FINITE if isinstance(v, float) and not math.isfinite(v) else
        f"expected a number {'>' if strict else '>='} {lo:g}{unit}")
    return False


def _grids(value: Any, bad: Bad) -> dict[str, list[int]] | None:
    """``[serving.grids]``: every key of `GRID_KEYS`, each a non-empty list of distinct integers
    at least the key's least value (sorted here)."""
    if not isinstance(value, dict):
        bad("serving.grids", value, f"expected a table with the keys {list(GRID_KEYS)}")
        return None
    check_table(value, "serving.grids", GRID_KEYS, bad)
    out = {}
    for k, lo in GRID_KEYS.items():
        v = value.get(k)
        if not isinstance(v, list) or not v or not all(is_int(x, lo) for x in v) or len(set(v)) != len(v):
            bad(f"serving.grids.{k}", v, f"required: a non-empty list of distinct integers >= {lo}")
            continue
        out[k] = sorted(v)
    return out if len(out) == len(GRID_KEYS) else None


def _scheduler(value: Any, bad: Bad) -> tuple[tuple[str, tuple], ...]:
    """``[serving.scheduler]``: each key of `SCHEDULER_KEYS` a value or a non-empty list of distinct
    values (an axis), sorted by key (a manifest's campaign has its keys sorted: same settings)."""
    if not isinstance(value, dict):
        bad("serving.scheduler", value, f"expected a table of {list(SCHEDULER_KEYS)}")
        return ()
    check_table(value, "serving.scheduler", SCHEDULER_KEYS, bad)
    axes = []
    for k in sorted(value):
        if k not in SCHEDULER_KEYS:
            continue
        v = value[k]
        vals = v if isinstance(v, list) else [v]
        if not vals or len({repr(x) for x in vals}) != len(vals) or any(isinstance(x, (list, dict)) for x in vals):
            bad(f"serving.scheduler.{k}", v, "expected a value or a non-empty list of distinct values")
            continue
        axes.append((k, tuple(vals)))
    return tuple(axes)


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
            kw = dict(s)
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


def _deployment(value: dict, base_dir: Path, bad: Bad) -> tuple[str, Any, dict[str, Any]] | None:
    """(the network as `Deployment` takes it, its `TransformerConfig`, setup's deployment keywords)
    of ``[serving]``: ``network`` and the optional ``weight_bits``, ``act_bits``, ``kv_bits``,
    ``fusion``, ``tp``, ``ep``, ``interconnect``, ``launch_us`` (us), ``host_ms`` (ms), checked as
    `sweep serve` checks its options; None if unusable."""
    from costmodel.serving import Deployment
    from costmodel.system.interconnect import INTERCONNECTS
    net = value.get("network")
    if not isinstance(net, str) or not net:
        bad("serving.network", net, "required: a zoo decoder (`sweep list networks`) or a Hugging Face config.json")
        return None
    target = net
    if net.lower().endswith(".json"):
        path = resolve_path(net, base_dir)
        if not path.is_file():
            bad("serving.network", net, f"no such file: {path}")
            return None
        target = str(path.resolve())
    kw: dict[str, Any] = {}
    ok = True
    for k in (*_BITS, "tp", "ep"):
        if k in value:
            if not is_int(value[k], 1):
                bad(f"serving.{k}", value[k], "expected a whole number >= 1")
                ok = False
            kw[k] = value[k]
    if "fusion" in value:
        kw["fusion"] = value["fusion"]
    if "interconnect" in value:
        if value["interconnect"] not in INTERCONNECTS:
            bad("serving.interconnect", value["interconnect"], f"expected one of {sorted(INTERCONNECTS)}")
            ok = False
        kw["interconnect"] = value["interconnect"]
    if "launch_us" in value:
        ok &= _number(value["launch_us"], "serving.launch_us", bad, strict=False, unit=" us")
        kw["launch_us"] = value["launch_us"]
    if "host_ms" in value:
        ok &= _number(value["host_ms"], "serving.host_ms", bad, strict=False, unit=" ms")
        kw["host_s"] = value["host_ms"] / 1e3 if is_finite(value["host_ms"]) else None
    if not ok:
        return None
    from costmodel.transformer.shard import resolve_split
    from costmodel.transformer.step import resolve_bits
    dep = None
    for check in (lambda: Deployment(target, **{k: kw[k] for k in (*_BITS, "fusion", "tp", "ep") if k in kw}),
                  lambda: resolve_bits(*(kw.get(k) for k in _BITS)),
                  lambda: dep is not None and resolve_split(dep.config, dep.ep, dep.tp, 1, dep.ep)):
        try:
            got = check()
        except KeyError as e:
            bad("serving.network", net, str(e).strip("'\""))
            return None
        except ValueError as e:
            msg = str(e)
            key = next((k for k in (*_BITS, "fusion", "tp", "ep") if msg.startswith(k)), "network")
            bad(f"serving.{key}", value.get(key, net), msg)
            ok = False
            continue
        dep = got if isinstance(got, Deployment) else dep
    return (target, dep.config, kw) if ok and dep is not None else None


def _load(value: dict, base_dir: Path, bad: Bad) -> tuple[dict[str, Any], str | None] | None:
    """(`sweep.serving.serve.Load`'s fields but the rate, the trace's sha256) of ``[serving]``:
    ``trace`` (a bundled name, `costmodel.serving.requests.BUNDLED`, or a CSV / JSONL path),
    ``columns``, ``drop_long_prompts``, ``requests``, ``prompt`` / ``output`` (a synthetic load's
    lengths: not with a trace), ``cv``, ``load_seed``; None if unusable."""
    from costmodel.serving import TraceError, parse_lengths
    from costmodel.serving.requests import BUNDLED, trace_path
    trace, digest, ok = value.get("trace"), None, True
    if trace is not None:
        if not isinstance(trace, str) or not trace:
            bad("serving.trace", trace, f"expected a bundled trace {sorted(BUNDLED)} or a CSV / JSONL path")
            return None
        path = trace_path(trace) if trace in BUNDLED else resolve_path(trace, base_dir)
        if not path.is_file():
            bad("serving.trace", trace, f"no such trace file: {path}")
            return None
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        trace = trace if trace in BUNDLED else str(path.resolve())
    cols = value.get("columns", {})
    if not isinstance(cols, dict) or any(k not in ("arrival", "prompt", "output") or not isinstance(v, str)
                                         for k, v in cols.items()):
        bad("serving.columns", cols, "expected a table of arrival / prompt / output -> a column name (\"\": none)")
        ok = False
    for k in ("drop_long_prompts", "goodput"):
        if k in value and not isinstance(value[k], bool):
            bad(f"serving.{k}", value[k], "expected true or false")
            ok = False
    n = value.get("requests")
    if n is None and trace is None:
        bad("serving.requests", n, "required without a trace: the requests of each simulation")
        ok = False
    elif n is not None and not is_int(n, 1):
        bad("serving.requests", n, "expected a whole number >= 1")
        ok = False
    lengths = {}
    for k, default in (("prompt", "512"), ("output", "128")):
        if k in value and trace is not None:
            bad(f"serving.{k}", value[k], "a trace gives the lengths: leave it out, or leave out the trace")
            ok = False
        try:
            lengths[k] = str(value.get(k, default))
            parse_lengths(lengths[k], k)
        except TraceError as e:
            bad(f"serving.{k}", value.get(k), str(e))
            ok = False
    cv = value.get("cv", 1.0)
    ok &= _number(cv, "serving.cv", bad)
    seed = value.get("load_seed", 0)
    ok &= check_seed(seed, "serving.load_seed", bad)
    if not ok:
        return None
    return ({"trace": trace, "columns": {k: (v or None) for k, v in cols.items()}, "requests": n, **lengths,
             "cv": cv, "seed": seed, "drop_long": bool(value.get("drop_long_prompts", False))}, digest)


def _check_trace(spec: ServingSpec, cfg: Any, bad: Bad) -> int:
    """Read the trace once per distinct max_model_len of the settings (a prompt past it is refused
    unless ``drop_long_prompts``), as each task will; returns the requests one simulation serves."""
    from costmodel.serving import TraceError, read_trace
    load = spec.load
    if load["trace"] is None:
        return int(load["requests"])
    served = 0
    for ctx in sorted({int(s.get("max_model_len", cfg.max_context)) for s in spec.settings()}):
        try:
            reqs = read_trace(load["trace"], load["columns"], ctx, load["drop_long"])
        except TraceError as e:
            key = "serving.columns" if "column" in str(e) and load["columns"] else "serving.trace"
            bad(key, spec.load.get("trace") if key == "serving.trace" else load["columns"],
                f"{e}" + ("" if load["drop_long"] or "context" not in str(e) else
                          " (drop_long_prompts = true leaves such requests out)"))
            return 0
        served = max(served, int(load["requests"] or len(reqs)))
    return served


def _rates_slo(value: dict, bad: Bad) -> tuple[tuple, dict[str, Any]] | None:
    """(``rates``: distinct offered rates > 0, req/s; the SLO: ``slo_ttft`` / ``slo_tpot`` in s,
    ``attainment`` in (0, 1]) of ``[serving]``; None if unusable."""
    rates, ok = value.get("rates"), True
    if not isinstance(rates, list) or not rates:
        bad("serving.rates", rates, "required: a non-empty list of offered rates (req/s), e.g. [2, 4, 6, 8]")
        ok = False
    else:
        for i, r in enumerate(rates):
            ok &= _number(r, f"serving.rates[{i}]", bad, unit=" req/s")
        if ok and len(set(rates)) != len(rates):
            bad("serving.rates", rates, "duplicate rates")
            ok = False
    slo: dict[str, Any] = {"ttft_s": value.get("slo_ttft"), "tpot_s": value.get("slo_tpot"),
                           "attainment": value.get("attainment", 0.9)}
    for k, key in (("ttft_s", "slo_ttft"), ("tpot_s", "slo_tpot")):
        if slo[k] is not None:
            ok &= _number(slo[k], f"serving.{key}", bad, unit=" s")
    a = slo["attainment"]
    if not (is_finite(a) and 0 < a <= 1):
        bad("serving.attainment", a, "expected a share of the requests in (0, 1], e.g. 0.9")
        ok = False
    if value.get("goodput") is True and slo["ttft_s"] is None and slo["tpot_s"] is None:
        bad("serving.goodput", True, "the goodput needs an SLO: give slo_ttft, slo_tpot or both")
        ok = False
    return (tuple(rates), slo) if ok and isinstance(rates, list) else None


def _mapper(value: dict, bad: Bad) -> tuple[str, dict[str, Any]] | None:
    """(``mapper``, its ``params`` as given) of ``[serving]``: a loop-nest mapper (default salsa)
    and parameters it declares (`mappers.base.check_params`)."""
    from mappers import MAPPER_NAMES, get_mapper, mapper_kind
    from mappers.base import check_params
    m = value.get("mapper", "salsa")
    known = [n for n in MAPPER_NAMES if mapper_kind(n) == "loopnest"]
    if m not in known:
        bad("serving.mapper", m, f"expected a loop-nest mapper: {known}")
        return None
    params = value.get("params", {})
    if not isinstance(params, dict):
        bad("serving.params", params, f"expected a table of {m}'s parameters (`sweep list mappers {m}`)")
        return None
    _, problems = check_params(get_mapper(m).params, params)
    for k, v, msg in problems:
        bad(f"serving.params.{k}", v, msg)
    return (m, dict(params)) if not problems else None


def parse_serving(value: Any, base_dir: Path, objective: str, bad: Bad) -> tuple[ServingSpec, Any, int] | None:
    """(the resolved ``[serving]`` table, the model's `TransformerConfig`, the requests of one
    simulation); findings go to ``bad``; None if unusable."""
    if not isinstance(value, dict):
        bad("serving", value, "required for kind 'serving': a table with network, rates and the load")
        return None
    check_table(value, "serving", SERVING_KEYS, bad)
    dep = _deployment(value, base_dir, bad)
    mapper = _mapper(value, bad)
    load = _load(value, base_dir, bad)
    rates_slo = _rates_slo(value, bad)
    scheduler = _scheduler(value.get("scheduler", {}), bad)
    grids = _grids(value["grids"], bad) if "grids" in value else None
    mappings = value.get("mappings", "own")
    if mappings not in MAPPINGS:
        bad("serving.mappings", mappings, f"expected one of {list(MAPPINGS)}: \"own\" maps every design's cost "
            "table on it, \"shared\" maps each chip's reference designs and re-costs their mappings on the others")
        return None
    if dep is None or mapper is None or load is None or rates_slo is None or ("grids" in value and grids is None):
        return None
    (target, cfg, kw), (m, params), (ld, digest), (rates, slo) = dep, mapper, load, rates_slo
    spec = ServingSpec(network=target, network_ref=str(value["network"]), model={"name": cfg.name,
                       "shape": cfg.shape()}, mapper=m, params=params, objective=objective, deployment=kw, load=ld,
                       trace_digest=digest, trace_ref=value.get("trace"), rates=rates, slo=slo,
                       goodput=bool(value.get("goodput", False)), scheduler=scheduler, grids=grids,
                       mappings=mappings)
    return spec, cfg, _check_trace(spec, cfg, bad)


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
        from sweep.engine.serving_groups import reference_designs
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
        dep = ", ".join(f"{k} {v}" for k, v in sp.deployment.items()) or "one chip, the accelerator's precisions"
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
                 + (f", params {sp.params}" if sp.params else "") + ")" + (", grids given" if sp.grids else ""),
                 f"  designs: {', '.join(shown)}{more}"]
        if ds.space is not None:
            lines.append(f"  template {ds.space.template_ref}: {ds.space.total:,} grid point(s), {len(ds.space):,} "
                         "valid design(s); dropped: " + (", ".join(f"{k}: {v:,}" for k, v in ds.space.dropped.items())
                                                         or "none"))
        lines += [f"  scheduler settings (vLLM V1; unset keys: vLLM v0.11.0's defaults for each chip): "
                  f"{words(sp.setting_label(s) for s in sp.settings())}",
                  f"  load: {sp.requests_served:,} requests of {src} per simulation, Poisson arrivals "
                  f"(cv {sp.load['cv']})"
                  f" at {words(f'{r:g}' for r in sp.rates)} req/s, load seed {sp.load['seed']}",
                  f"  SLO: {slo} for >= {sp.slo['attainment']:.0%} of the requests"
                  + (f"; goodput searched from {sp.rates[0]:g} req/s" if sp.goodput else ""),
                  f"  {self.estimate(c).line(cpus(c))}"]
        return "\n".join(lines)


def _area(d: ServingDesign) -> float | None:
    from costmodel.loopnest.physics import design_area_mm2
    try:
        return float(design_area_mm2(d.accelerator()))
    except (ValueError, TypeError, KeyError):
        return None
