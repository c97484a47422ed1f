"""The ``[serving]`` table of a serving campaign (`sweep.kinds.serving`), read and checked: the
decoder and its deployment, the cost table's mapper, the load (a trace or synthetic lengths), the
rates and the SLO, the scheduler's axes, the grids and how mappings are shared, resolved into a
`sweep.engine.serving_tasks.ServingSpec`. Every finding names its key (`sweep.config.validation`)."""

from __future__ import annotations

import hashlib
import itertools
import math
from pathlib import Path
from typing import Any

from sweep.config.validation import (NOT_FINITE, Bad, check_seed, check_table, is_finite, is_int,
                                     resolve_path)
from sweep.engine.serving_tasks import ServingSpec

__all__ = ["parse_serving", "SERVING_KEYS", "GRID_KEYS", "SCHEDULER_KEYS", "MAPPINGS", "SYSTEM_AXES"]

#: The keys of ``[serving]``.
SERVING_KEYS = ("network", "mapper", "params", "trace", "columns", "drop_long_prompts", "requests", "prompt",
                "output", "cv", "load_seed", "rates", "slo_ttft", "slo_tpot", "attainment", "goodput",
                "weight_bits", "act_bits", "kv_bits", "fusion", "tp", "pp", "ep", "interconnect", "launch_us", "host_ms",
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

_BITS = ("weight_bits", "act_bits", "kv_bits")
#: The ``[serving]`` keys that may be lists, axes of a systems search: chips per copy of the model.
SYSTEM_AXES = ("tp", "pp", "ep")


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


def _deployment(value: dict, base_dir: Path, bad: Bad) -> tuple[str, Any, dict[str, Any], tuple] | None:
    """(the network as `Deployment` takes it, its `TransformerConfig`, setup's deployment keywords,
    the systems axes: (key, values) of ``tp`` / ``ep`` given as lists) of ``[serving]``: ``network``
    and the optional ``weight_bits``, ``act_bits``, ``kv_bits``, ``fusion``, ``tp``, ``ep``,
    ``interconnect``, ``launch_us`` (us), ``host_ms`` (ms), checked as `sweep serve` checks its
    options (every split of the axes); None if unusable."""
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
    axes: dict[str, tuple[int, ...]] = {}
    ok = True
    for k in (*_BITS, "tp", "pp", "ep"):
        if k in value:
            v = value[k]
            if k in SYSTEM_AXES and isinstance(v, list):    # an axis of the systems search
                if not v or not all(is_int(x, 1) for x in v) or len(set(v)) != len(v):
                    bad(f"serving.{k}", v, "expected a whole number >= 1 or a non-empty list of distinct ones")
                    ok = False
                else:
                    axes[k] = tuple(v)
                continue
            if not is_int(v, 1):
                bad(f"serving.{k}", v, "expected a whole number >= 1")
                ok = False
            kw[k] = v
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
    for split in itertools.product(*([(k, x) for x in vs] for k, vs in axes.items())):
        one = {**kw, **dict(split)}
        dep = None
        for check in (lambda: Deployment(target, **{k: one[k] for k in (*_BITS, "fusion", "tp", "pp", "ep") if k in one}),
                      lambda: resolve_bits(*(one.get(k) for k in _BITS)),
                      lambda: dep is not None and resolve_split(dep.config, dep.ep, dep.tp, dep.pp, dep.ep)):
            try:
                got = check()
            except KeyError as e:
                bad("serving.network", net, str(e).strip("'\""))
                return None
            except ValueError as e:
                msg = str(e)
                key = next((k for k in (*_BITS, "fusion", "tp", "pp", "ep") if msg.startswith(k)), "network")
                bad(f"serving.{key}", value.get(key, net), msg + (f" (at {dict(split)})" if split else ""))
                ok = False
                continue
            dep = got if isinstance(got, Deployment) else dep
        if not ok:
            break
    return (target, dep.config, kw, tuple(axes.items())) if ok and dep is not None else None


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
    (target, cfg, kw, systems), (m, params), (ld, digest), (rates, slo) = dep, mapper, load, rates_slo
    spec = ServingSpec(network=target, network_ref=str(value["network"]), model={"name": cfg.name,
                       "shape": cfg.shape()}, mapper=m, params=params, objective=objective, deployment=kw, load=ld,
                       trace_digest=digest, trace_ref=value.get("trace"), rates=rates, slo=slo,
                       goodput=bool(value.get("goodput", False)), scheduler=scheduler, grids=grids,
                       mappings=mappings, systems=systems)
    return spec, cfg, _check_trace(spec, cfg, bad)
