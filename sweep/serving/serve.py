"""One served load, end to end: the deployment and its cost table, the KV cache's blocks, the
requests (a trace or a synthetic load), the event loop (`costmodel.serving.simulate`), the summary,
the goodput search, and the files: ``DIR/requests`` and ``DIR/iterations`` (Parquet datasets,
``pd.read_parquet(DIR/requests)``), ``DIR/summary.json``, ``DIR/cost_table.json``, ``DIR/plots``.
The directory is written whole or not at all (built beside it, then renamed).

Bad input raises `sweep.common.errors.CampaignError` naming the option (or the file, row and
column) and the value, before any mapping: exit 2 from the CLI, nothing written."""

from __future__ import annotations

import functools
import math
import os
import shutil
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable

import numpy as np

from costmodel.serving import (SLO, CostTable, Deployment, Requests, SchedulerConfig, TraceError, goodput,
                               kv_blocks, read_trace, request_figures, simulate, summary, synthetic, vllm_defaults)
from sweep.common.errors import CampaignError, Finding

__all__ = ["Load", "ServeSetup", "setup", "load_requests", "serve", "write_outputs", "HOST_S"]

#: The host's time per iteration by default (s): 0, the device's time alone, as Vidur's default
#: (``skip_cpu_overhead_modeling = True``, vidur/config/config.py): its own profile of the host's
#: work per iteration (vLLM V0 era, A100, Llama-2-7B, TP 1: schedule + sampler + input preparation +
#: output processing, medians) is 1.17 ms at 8 sequences and 6.2 ms at 128 (Vidur's
#: data/profiling/a100/cpu_overheads.csv at commit 6d98aa8); vLLM V1 was rebuilt to shrink it.
#: State one with `--host-ms`.
HOST_S = 0.0


def _bad(key: str, value: Any, msg: str, source: str = "sweep serve") -> CampaignError:
    return CampaignError(source, [Finding(key, value, msg)])


@dataclass(frozen=True)
class Load:
    """The requests to serve: a ``trace`` file (replayed; with ``rate``, its lengths at Poisson or
    Gamma arrivals of that rate), or a synthetic load (``rate``, ``requests`` or ``duration_s``,
    ``prompt``, ``output`` lengths, ``cv``), ``seed``."""

    trace: str | None = None
    columns: dict[str, str | None] = field(default_factory=dict)
    rate: float | None = None
    requests: int | None = None
    duration_s: float | None = None
    prompt: str = "512"
    output: str = "128"
    cv: float = 1.0
    seed: int = 0
    drop_long: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in ("trace", "columns", "rate", "requests", "duration_s", "prompt", "output",
                                              "cv", "seed", "drop_long")}


def load_requests(load: Load, max_context: int, rate: float | None = None) -> Requests:
    """The `Requests` of ``load`` (``rate`` overrides its rate: the goodput search).

    Raises:
        CampaignError: a bad trace (file, row, column) or load option (``--rate`` ...).
    """
    rate = load.rate if rate is None else rate
    try:
        trace = _trace(load.trace, tuple(sorted(load.columns.items())), max_context, load.drop_long) \
            if load.trace else None
        if trace is not None and rate is None:
            return trace.head(load.requests) if load.requests else trace
        if rate is None:
            raise TraceError("rate = None: a synthetic load needs --rate (requests/s), or give --trace")
        if trace is not None:
            n = load.requests if load.requests or load.duration_s else len(trace)
            prompt = "trace" if load.prompt in ("512", "trace") else load.prompt
            output = "trace" if load.output in ("128", "trace") else load.output
            return synthetic(rate, count=None if load.duration_s else n, duration_s=load.duration_s, prompt=prompt,
                             output=output, cv=load.cv, lengths_from=trace, seed=load.seed)
        return synthetic(rate, count=load.requests if not load.duration_s else None, duration_s=load.duration_s,
                         prompt=load.prompt, output=load.output, cv=load.cv, seed=load.seed)
    except TraceError as e:
        msg = str(e)
        key = "--trace" if load.trace and str(load.trace) in msg else next(
            (f"--{k}" for k in ("rate", "cv", "requests", "duration", "prompt", "output") if msg.startswith(k)), "--rate")
        val = {"--trace": load.trace, "--rate": rate, "--cv": load.cv, "--requests": load.requests,
               "--duration": load.duration_s, "--prompt": load.prompt, "--output": load.output}.get(key)
        raise _bad(key, val, msg) from None


def _trace(path: str, columns: tuple, max_context: int, drop_long: bool) -> Requests:
    """`read_trace`, the parsed file kept while it is unchanged (by its size and modification
    time): a goodput search and a campaign's rates read one trace many times (parsing the bundled
    one is 0.3 s, a simulation of 2,000 of its requests 0.02 s)."""
    from costmodel.serving.requests import trace_path
    f = trace_path(path)
    try:
        st = f.stat()
        stamp: tuple = (str(f.resolve()), st.st_size, st.st_mtime_ns)
    except OSError:
        stamp = (str(f), None, None)   # read_trace says what is wrong with it
    return _read_trace_kept(stamp, path, columns, max_context, drop_long)


@functools.lru_cache(maxsize=8)
def _read_trace_kept(stamp: tuple, path: str, columns: tuple, max_context: int, drop_long: bool) -> Requests:
    return read_trace(path, dict(columns), max_context, drop_long)


@dataclass
class ServeSetup:
    """A deployment ready to serve: the `Deployment`, the accelerator, the scheduler's settings,
    the KV blocks (``kv``: `costmodel.serving.scheduler.kv_blocks`' figures, ``num_blocks`` the
    system's), the `CostTable`, and how it was made."""

    dep: Deployment
    arch: Any
    cfg: SchedulerConfig
    kv: dict[str, Any]
    num_blocks: int
    table: CostTable
    options: dict[str, Any]


def setup(network: str, arch: str | Any, *, mapper: str = "salsa", objective: str = "latency", seed: int = 0,
          params: dict | None = None, weight_bits: int | None = None, act_bits: int | None = None,
          kv_bits: int | None = None, fusion: str = "fused", tp: int | None = None, pp: int | None = None,
          ep: int | None = None, interconnect: str | None = None, launch_us: float | None = None,
          host_s: float | None = None, scheduler: dict[str, Any] | None = None, table: CostTable | None = None,
          progress: Callable[[int, int, str], None] | None = None, grids: dict[str, list[int]] | None = None,
          workers: int | None = None, mapping_refs: tuple | None = None) -> ServeSetup:
    """Resolve and check everything, then map the cost table (unless ``table`` is given).

    ``scheduler``: `SchedulerConfig` fields (None or absent: vLLM v0.11.0's defaults for the
    chip's memory and name, `vllm_defaults`; max_model_len: the model's context). ``grids`` and
    ``workers``: the cost table's grid points and mapping processes, ``mapping_refs``: reference
    accelerators whose mappings the table re-costs (`sweep.serving.table_build.build_cost_table`).

    Raises:
        CampaignError: a bad option (named with its value); a deployment that leaves no room for the
            KV cache (the numbers).
    """
    from sweep.commands.map_eval import load_arch, _checked
    from costmodel.system.serving import System
    from costmodel.system.interconnect import INTERCONNECTS
    acc = load_arch(arch) if isinstance(arch, str) else arch
    if not hasattr(acc, "memories"):
        raise _bad("--arch", getattr(acc, "name", arch), "serving needs a loop-nest accelerator (a preset such as "
                   "a100, llm_ws, tpu_v4, or an accelerator TOML)")
    _checked(acc, mapper, objective)
    dep = _deployment(network, weight_bits, act_bits, kv_bits, fusion, tp, pp, ep)
    if interconnect is not None and interconnect not in INTERCONNECTS:
        raise _bad("--interconnect", interconnect, f"expected one of {sorted(INTERCONNECTS)}")
    if launch_us is not None and (not math.isfinite(launch_us) or launch_us < 0):
        raise _bad("--launch-us", launch_us, "expected microseconds >= 0")
    if host_s is not None and (not math.isfinite(host_s) or host_s < 0):
        raise _bad("--host-ms", host_s * 1e3, "expected milliseconds >= 0")
    from sweep.serving.table_build import build_cost_table, deployment_memory
    cfg = _scheduler_config(dep, acc, scheduler)
    mem = deployment_memory(dep, acc, cfg.max_num_batched_tokens)
    try:
        kv = kv_blocks(mem["capacity_bytes"], mem["weights_bytes"], mem["activations_bytes"], mem["token_bytes"], cfg)
    except ValueError as e:
        key = "--num-blocks" if str(e).startswith("num_blocks") else "--gpu-memory-utilization"
        raise _bad(key, cfg.num_blocks if key == "--num-blocks" else cfg.gpu_memory_utilization, str(e)) from None
    kv["memory"] = mem["memory"]
    num_blocks = kv["num_blocks"] * (dep.ep if not kv.get("given") else 1)
    system = System(tp=dep.tp, pp=dep.pp, ep=dep.ep, interconnect=INTERCONNECTS[interconnect or "nvlink3"])
    if table is None:
        try:
            table = build_cost_table(dep, acc, mapper, objective, seed, params, max_tokens=cfg.max_num_batched_tokens,
                                     max_seqs=cfg.max_num_seqs, max_context=cfg.max_model_len, system=system,
                                     launch_us=launch_us, host_s=HOST_S if host_s is None else host_s,
                                     progress=progress, grids=grids, workers=workers,
                                     refs=mapping_refs)
        except ValueError as e:
            from sweep.common.errors import ExecutionError
            raise ExecutionError(str(e)) from None
    else:
        made = (table.meta.get("deployment"), table.meta.get("arch"))
        if made != (dep.to_dict(), getattr(acc, "name", "")) or table.tokens[-1] < cfg.max_num_batched_tokens:
            raise _bad("--table", table.meta.get("arch"), f"this cost table was made for {made[0]} on {made[1]} up to "
                       f"{int(table.tokens[-1]):,} tokens per iteration, not for {dep.to_dict()} on "
                       f"{getattr(acc, 'name', '')} with max_num_batched_tokens {cfg.max_num_batched_tokens:,}")
        if host_s is not None:
            table = table.with_host(host_s)
        if launch_us is not None:
            table.launch_s = launch_us * 1e-6
            table.meta["launch_us"] = launch_us
    opts = {"network": network, "arch": getattr(acc, "name", str(arch)), "mapper": mapper, "objective": objective,
            "seed": seed, "params": dict(params or {}), "deployment": dep.to_dict(),
            "precision": dep.precision(), "interconnect": system.interconnect.name, "launch_us": table.meta.get("launch_us"),
            "host_s": table.host_s, "scheduler": cfg.to_dict()}
    return ServeSetup(dep, acc, cfg, kv, num_blocks, table, opts)


def _deployment(network, weight_bits, act_bits, kv_bits, fusion, tp, pp, ep) -> Deployment:
    """The `Deployment`, checked (CampaignError naming the option)."""
    try:
        dep = Deployment(network, weight_bits=weight_bits, act_bits=act_bits, kv_bits=kv_bits, fusion=fusion,
                         tp=tp or 1, pp=pp or 1, ep=ep or 1)
        from costmodel.transformer.shard import resolve_split
        resolve_split(dep.config, dep.ep, dep.tp, dep.pp, dep.ep)
        from costmodel.transformer.step import resolve_bits
        resolve_bits(weight_bits, act_bits, kv_bits)
    except KeyError as e:
        raise _bad("--network", network, str(e).strip("'\"")) from None
    except ValueError as e:
        msg = str(e)
        key = next((f"--{k.replace('_', '-')}" for k in ("weight_bits", "act_bits", "kv_bits", "fusion", "tp", "pp",
                                                          "ep") if msg.startswith(k)), "--network")
        val = {"--weight-bits": weight_bits, "--act-bits": act_bits, "--kv-bits": kv_bits, "--fusion": fusion,
               "--tp": tp, "--pp": pp, "--ep": ep}.get(key, network)
        raise _bad(key, val, msg) from None
    return dep


def _scheduler_config(dep: Deployment, acc, scheduler: dict[str, Any] | None) -> SchedulerConfig:
    """The `SchedulerConfig` of the settings given over vLLM's defaults for the chip (CampaignError
    naming the option)."""
    from sweep.serving.table_build import deployment_memory
    given = scheduler or {}
    cfg_kw = {k: v for k, v in given.items() if v is not None}
    unknown = set(cfg_kw) - set(SchedulerConfig.__dataclass_fields__)
    if unknown:
        k = sorted(unknown)[0]
        raise _bad(k, cfg_kw[k], f"no such scheduler setting; known: {sorted(SchedulerConfig.__dataclass_fields__)}")
    cap = deployment_memory(dep, acc, 1)["capacity_bytes"]
    defaults = vllm_defaults(None if cap is None else cap / 2**30, getattr(acc, "name", ""))
    ctx = dep.config.max_context
    if "max_model_len" in cfg_kw and cfg_kw["max_model_len"] > ctx and dep.config.max_positions:
        raise _bad("--max-model-len", cfg_kw["max_model_len"], f"past {dep.config.name}'s learned positions ({ctx})")
    cfg_kw.setdefault("max_model_len", ctx)
    if cfg_kw.get("chunked_prefill") is False:
        cfg_kw.setdefault("max_num_batched_tokens", cfg_kw["max_model_len"])   # vLLM: a prompt is never split
    for k, v in defaults.items():
        cfg_kw.setdefault(k, v)
    try:
        return SchedulerConfig(**cfg_kw)
    except ValueError as e:
        k = str(e).split(" =")[0]
        raise _bad(f"--{k.replace('_', '-')}", cfg_kw.get(k), str(e)) from None


@dataclass(frozen=True)
class Layout:
    """How the copies of the model share the requests (`costmodel.serving.disagg`): ``replicas``
    colocated copies, or a prefill pool of ``prefill`` instances (on ``prefill_setup``: its own
    accelerator and split; None: the same as the decode pool's) and a decode pool of ``decode``
    instances, the K/V cache sent over ``link`` (an interconnect's name)."""

    replicas: int = 1
    prefill: int = 0
    decode: int = 0
    prefill_setup: "ServeSetup | None" = None
    link: str = "nvlink3"

    @property
    def disaggregated(self) -> bool:
        return self.prefill > 0

    def chips(self, st: "ServeSetup") -> int:
        """Chips in all: replicas x the copy's, or each pool's instances x its copy's."""
        per = st.dep.tp * st.dep.pp * st.dep.ep
        if not self.disaggregated:
            return self.replicas * per
        pre = self.prefill_setup or st
        return self.prefill * pre.dep.tp * pre.dep.pp * pre.dep.ep + self.decode * per

    def to_dict(self, st: "ServeSetup") -> dict[str, Any]:
        d: dict[str, Any] = {"chips": self.chips(st)}
        if self.disaggregated:
            pre = self.prefill_setup or st
            d.update(prefill={"instances": self.prefill, "arch": pre.options["arch"], "tp": pre.dep.tp},
                     decode={"instances": self.decode, "arch": st.options["arch"], "tp": st.dep.tp}, link=self.link)
        else:
            d["replicas"] = self.replicas
        return d


def pipeline_engines(cfg: SchedulerConfig, num_blocks: int, pp: int) -> tuple[SchedulerConfig, int]:
    """(the scheduler settings, KV blocks) of each of a pipeline's ``pp`` virtual engines.

    vLLM V1 keeps up to pp batches in flight under pipeline parallelism (its batch queue), a batch
    per stage, so that every stage is busy; a request is in one batch at a time. Modelled as pp
    engines each serving its share of the requests (dealt round-robin) with its own batches, each
    iteration the whole pipeline's (every stage's blocks, the hops between them: the cost table under
    pp), each engine holding max_num_seqs / pp running sequences (vLLM bounds them over the batches
    in flight) and num_blocks / pp of the cache (vLLM shares one pool), with the whole token budget.
    Stated deviations: the static split of the requests and the cache, and no bubble when the
    batches in flight differ in size."""
    seqs = max(1, cfg.max_num_seqs // pp)
    return replace(cfg, max_num_seqs=seqs), max(1, num_blocks // pp)


def _runner(st: ServeSetup, layout: Layout | None, sink: Callable | None = None):
    """The function serving one set of requests under ``layout``."""
    from costmodel.serving.disagg import Link, Pool, serve_disaggregated, serve_replicas
    from costmodel.system.interconnect import INTERCONNECTS
    replicas = 1 if layout is None else layout.replicas
    if st.dep.pp > 1 and (layout is None or not layout.disaggregated):
        pool = Pool(st.table, *pipeline_engines(st.cfg, st.num_blocks, st.dep.pp), replicas * st.dep.pp)
        return lambda reqs: serve_replicas(reqs, pool)
    if layout is None or (layout.replicas == 1 and not layout.disaggregated):
        return lambda reqs: simulate(reqs, st.table, st.cfg, st.num_blocks, sink=sink)
    if not layout.disaggregated:
        pool = Pool(st.table, st.cfg, st.num_blocks, layout.replicas)
        return lambda reqs: serve_replicas(reqs, pool)
    pre = layout.prefill_setup or st
    p_pool = Pool(pre.table, pre.cfg, pre.num_blocks, layout.prefill)
    d_pool = Pool(st.table, st.cfg, st.num_blocks, layout.decode)
    link = Link.of(INTERCONNECTS[layout.link])
    per_chip = pre.kv["token_bytes"]          # each prefill chip sends its shard over its own link
    return lambda reqs: serve_disaggregated(reqs, p_pool, d_pool, link, per_chip)


def serve(st: ServeSetup, load: Load, slo: SLO | None = None, *, search_goodput: bool = False,
          rate: float | None = None, sink: Callable | None = None, layout: Layout | None = None) -> dict[str, Any]:
    """Serve ``load`` on ``st`` (one copy, or as ``layout`` says: colocated replicas, or prefill
    and decode pools) and summarise (`costmodel.serving.metrics.summary`); with ``search_goodput``
    and an SLO, also the goodput (`costmodel.serving.metrics.goodput`: the load's requests at other
    rates, same seed; ``goodput_rps``, ``goodput`` with the rates tried and the summary at each).

    Returns:
        ``{"summary": {...}, "result": SimResult, "requests": Requests, "goodput": {...} or None,
        "sim_s": seconds the event loop took}``.

    Raises:
        CampaignError: a bad load; an SLO without targets for the goodput.
    """
    slo = slo or SLO()
    reqs = load_requests(load, st.cfg.max_model_len, rate)
    run_once = _runner(st, layout, sink)
    t0 = time.perf_counter()
    res = run_once(reqs)
    sim_s = time.perf_counter() - t0
    summ = summary(res, slo)
    summ["dropped"] = len(reqs.dropped)
    summ["goodput_rps"] = None
    if layout is not None:
        summ["layout"] = layout.to_dict(st)
        if "transfer_s" in res.stats:
            summ["kv_transfer_s"] = res.stats["transfer_s"]
    gp = None
    if search_goodput:
        if not slo.given:
            raise _bad("--slo-ttft", None, "the goodput needs an SLO: give --slo-ttft, --slo-tpot or both")
        curve: list[dict[str, Any]] = []
        run_quiet = _runner(st, layout)

        def at(r: float):
            sim = run_quiet(load_requests(load, st.cfg.max_model_len, r))
            s = summary(sim, slo)
            curve.append({"rate": r, **{k: s[k] for k in ("ttft_s", "tpot_s", "e2e_s", "slo_attainment",
                                                           "output_tokens_per_s", "requests_per_s", "preemptions")}})
            return sim

        start = reqs.rate if math.isfinite(reqs.rate) else 1.0
        gp = goodput(at, slo, start)
        gp["curve"] = sorted(curve, key=lambda c: c["rate"])
        summ["goodput_rps"] = gp["goodput_rps"]
        chips = layout.chips(st) if layout is not None else st.dep.tp * st.dep.pp * st.dep.ep
        summ["goodput_rps_per_chip"] = gp["goodput_rps"] / chips
    return {"summary": summ, "result": res, "requests": reqs, "goodput": gp, "sim_s": sim_s}


def _request_table(res) -> "Any":
    import pyarrow as pa
    f = request_figures(res)
    r = res.requests
    return pa.table({
        "request": np.arange(len(r), dtype=np.int64), "arrival_s": r.arrival_s, "prompt_tokens": r.prompt,
        "output_tokens": res.output, "scheduled_s": res.scheduled_s, "first_token_s": res.first_token_s,
        "finish_s": res.finish_s, "ttft_s": f["ttft_s"], "tpot_s": f["tpot_s"], "e2e_s": f["e2e_s"],
        "queue_s": f["queue_s"], "preemptions": res.preemptions, "energy_j": res.energy_j,
        "status": np.where(res.refused, "refused", "ok"), "reason": res.reason})


class IterationWriter:
    """A sink for `costmodel.serving.simulate`: each chunk of iteration columns as one Parquet
    fragment of ``directory`` (bounded memory however long the trace)."""

    def __init__(self, directory: Path):
        self.dir = directory
        self.dir.mkdir(parents=True, exist_ok=True)
        self.n = 0

    def __call__(self, cols: dict[str, np.ndarray]) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq
        if not len(cols["start_s"]):
            return
        pq.write_table(pa.table({k: (v.astype(str) if v.dtype == object else v) for k, v in cols.items()}),
                       self.dir / f"part-{self.n:05d}.parquet")
        self.n += 1


def write_outputs(out: str | Path, st: ServeSetup, run: dict[str, Any], load: Load, slo: SLO,
                  iterations_dir: Path | None = None, plots: bool = True) -> Path:
    """Write a served load's files (module docstring) into ``out``, whole or not at all: built in
    a sibling temporary directory, then renamed over ``out`` (an earlier result there is replaced).

    Raises:
        CampaignError: ``out`` exists and is not a serving result directory (``--out``).
    """
    import pyarrow.parquet as pq
    out = Path(out)
    if out.exists() and not (out / "summary.json").is_file():
        if out.is_file() or any(out.iterdir()):
            raise _bad("--out", str(out), "exists and is not a `sweep serve` result directory (no summary.json): "
                       "choose another or remove it")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        (tmp / "requests").mkdir()
        pq.write_table(_request_table(run["result"]), tmp / "requests" / "part-00000.parquet")
        if iterations_dir is not None:
            shutil.move(str(iterations_dir), tmp / "iterations")
        else:
            IterationWriter(tmp / "iterations")(run["result"].iterations)
        doc = {"summary": run["summary"], "goodput": run["goodput"], "setup": st.options, "kv_cache": st.kv,
               "num_blocks": st.num_blocks, "load": load.to_dict(), "requests_source": run["requests"].source,
               "slo": slo.to_dict()}
        from sweep.common.ids import strict_json
        (tmp / "summary.json").write_text(strict_json(doc, default=_json_default, indent=1) + "\n")
        (tmp / "cost_table.json").write_text(st.table.dumps())
        if plots:
            from sweep.reports.serving import serving_plots
            serving_plots(tmp, tmp / "plots")
        if out.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{out.name}.old.", dir=out.parent))
            os.replace(out, old / "x")
            os.replace(tmp, out)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out


def _json_default(v: Any) -> Any:
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (np.floating,)):
        return None if not math.isfinite(v) else float(v)
    if isinstance(v, np.ndarray):
        return v.tolist()
    return str(v)


@dataclass
class ServeResult:
    """`sweep.api.serve`'s answer: ``summary`` (the stable keys of `costmodel.serving.summary`, with
    ``goodput_rps``), ``requests`` and ``iterations`` (DataFrames, the columns of ``DIR/requests``
    and ``DIR/iterations``), ``goodput`` (the search: rates tried, attainment and percentiles at
    each; None without it), ``table`` (the `CostTable`, to reuse), ``setup`` (what was served)."""

    summary: dict[str, Any]
    requests: Any
    iterations: Any
    goodput: dict[str, Any] | None
    table: CostTable
    setup: dict[str, Any]


def serve_api(network: str, arch: Any, *, trace: str | None = None, rate: float | None = None,
              requests: int | None = None, duration_s: float | None = None, prompt: str = "512",
              output: str = "128", cv: float = 1.0, load_seed: int = 0, columns: dict | None = None,
              drop_long_prompts: bool = False, slo_ttft: float | None = None, slo_tpot: float | None = None,
              attainment: float = 0.9, goodput: bool = False, out: str | Path | None = None,
              table: CostTable | None = None, **kw: Any) -> ServeResult:
    """`sweep serve` as a function (`sweep.api.serve`); ``kw``: `setup`'s keywords (mapper, seed,
    weight_bits, fusion, tp, ep, launch_us, host_s, scheduler = {max_num_seqs: ..., ...})."""
    try:
        slo = SLO(slo_ttft, slo_tpot, attainment)
    except ValueError as e:
        raise _bad("slo", (slo_ttft, slo_tpot, attainment), str(e)) from None
    load = Load(trace, dict(columns or {}), rate, requests, duration_s, prompt, output, cv, load_seed,
                drop_long_prompts)
    st = setup(network, arch, table=table, **kw)
    run = serve(st, load, slo, search_goodput=goodput)
    if out is not None:
        write_outputs(out, st, run, load, slo)
    return ServeResult(run["summary"], _request_table(run["result"]).to_pandas(), _iteration_frame(run["result"]),
                       run["goodput"], st.table, {**st.options, "kv_cache": st.kv, "num_blocks": st.num_blocks})


def _iteration_frame(res) -> Any:
    import pandas as pd
    return pd.DataFrame({k: v for k, v in res.iterations.items()})
