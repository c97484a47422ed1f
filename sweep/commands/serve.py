"""`sweep serve`: requests served by a deployment on an accelerator (docs/serving.md)."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from sweep.common.errors import CampaignError, Finding

__all__ = ["serve_command", "parse_columns"]

_LOAD = "Requests (a trace file, or a synthetic load)"
_SCHED = "Scheduler (vLLM V1; defaults as vLLM v0.11.0 sets them for the chip)"
_MODEL = "Deployment"
_SLO = "SLO and goodput"
_POOLS = "Copies and pools (several copies of the model; disaggregated prefill and decode)"


def parse_columns(items: list[str] | None) -> dict[str, str | None]:
    """``--column arrival=t`` items -> ``{"arrival": "t"}`` (``arrival=`` : no arrival column).

    Raises:
        CampaignError: an item not FIELD=NAME, or a field not arrival / prompt / output.
    """
    out: dict[str, str | None] = {}
    for item in items or []:
        k, sep, v = item.partition("=")
        if not sep or k not in ("arrival", "prompt", "output"):
            raise CampaignError("sweep serve", [Finding("--column", item, "expected arrival=NAME, prompt=NAME or "
                                                                        "output=NAME (arrival= : none, all at 0 s)")])
        out[k] = v or None
    return out


def serve_command(
    network: Annotated[str, typer.Option("--network", help="A decoder: a zoo model (llama3_8b, mixtral_8x7b, ...; `sweep list networks`) or a Hugging Face config.json.", rich_help_panel=_MODEL)],
    arch: Annotated[str, typer.Option("--arch", help="Accelerator preset (a100, llm_ws, tpu_v4, ...) or TOML file.", rich_help_panel=_MODEL)],
    trace: Annotated[Optional[str], typer.Option("--trace", help="A trace, CSV or JSONL: arrival (s or a date-time), prompt and output tokens per request, under Vidur's / Splitwise's, Azure's or vLLM's column names; or azure_conv_2023 (bundled: Azure's 2023 conversation trace, 19,366 requests). Alone: replayed as it is; with --rate: its lengths at that rate.", rich_help_panel=_LOAD)] = None,
    drop_long_prompts: Annotated[bool, typer.Option("--drop-long-prompts", help="Leave out a trace's requests whose prompt is longer than the model's context (counted), instead of refusing the file.", rich_help_panel=_LOAD)] = False,
    column: Annotated[Optional[list[str]], typer.Option("--column", metavar="FIELD=NAME", help="A trace's column for arrival, prompt or output under another name (repeatable); arrival= : none (all at 0 s).", rich_help_panel=_LOAD)] = None,
    rate: Annotated[Optional[float], typer.Option("--rate", help="Mean arrivals per second of a synthetic load (Poisson; --cv for burstier).", rich_help_panel=_LOAD)] = None,
    requests: Annotated[Optional[int], typer.Option("--requests", help="Requests of the synthetic load (or the first N of a trace).", rich_help_panel=_LOAD)] = None,
    duration: Annotated[Optional[float], typer.Option("--duration", help="Or: the requests arriving in this many seconds.", rich_help_panel=_LOAD)] = None,
    prompt: Annotated[str, typer.Option("--prompt", help="Prompt tokens: N, uniform:LO:HI, lognormal:MEDIAN:SIGMA, or trace (the --trace's lengths).", rich_help_panel=_LOAD)] = "512",
    output: Annotated[str, typer.Option("--output", help="Output tokens, as --prompt.", rich_help_panel=_LOAD)] = "128",
    cv: Annotated[float, typer.Option("--cv", help="Coefficient of variation of the gaps between arrivals (1: Poisson; Gamma otherwise).", rich_help_panel=_LOAD)] = 1.0,
    load_seed: Annotated[int, typer.Option("--load-seed", help="Seed of the synthetic load (same seed, same requests).", rich_help_panel=_LOAD)] = 0,
    max_num_seqs: Annotated[Optional[int], typer.Option("--max-num-seqs", help="At most this many requests running (vLLM: 256; 1,024 on >= 70 GiB chips but A100s).", rich_help_panel=_SCHED)] = None,
    max_num_batched_tokens: Annotated[Optional[int], typer.Option("--max-num-batched-tokens", help="Token budget per iteration (vLLM: 2,048; 8,192 on >= 70 GiB chips but A100s).", rich_help_panel=_SCHED)] = None,
    block_size: Annotated[Optional[int], typer.Option("--block-size", help="Tokens per KV-cache block (vLLM: 16).", rich_help_panel=_SCHED)] = None,
    gpu_memory_utilization: Annotated[Optional[float], typer.Option("--gpu-memory-utilization", help="Share of each chip's memory for weights, activations and the KV cache (vLLM: 0.9).", rich_help_panel=_SCHED)] = None,
    num_blocks: Annotated[Optional[int], typer.Option("--num-blocks", help="KV blocks in the system, instead of those the memory leaves.", rich_help_panel=_SCHED)] = None,
    max_model_len: Annotated[Optional[int], typer.Option("--max-model-len", help="Longest sequence served (default: the model's context).", rich_help_panel=_SCHED)] = None,
    no_chunked_prefill: Annotated[bool, typer.Option("--no-chunked-prefill", help="Schedule every prompt whole (the token budget becomes max_model_len, as vLLM sets it).", rich_help_panel=_SCHED)] = False,
    graphs: Annotated[str, typer.Option("--graphs", help="How kernel launches are paid: vllm (decode-only batches replay a CUDA graph, others launch their attention; batches over 512 tokens eager), eager, or graph (none).", rich_help_panel=_SCHED)] = "vllm",
    host_ms: Annotated[Optional[float], typer.Option("--host-ms", help="The host's time per iteration (ms): scheduling, input preparation, sampling (default 0: the device's time alone).", rich_help_panel=_SCHED)] = None,
    launch_us: Annotated[Optional[float], typer.Option("--launch-us", help="Fixed cost per kernel launch (us), over the accelerator's.", rich_help_panel=_SCHED)] = None,
    mapper: Annotated[str, typer.Option("--mapper", help="Mapper of the cost table's layers (loma, salsa, random).", rich_help_panel=_MODEL)] = "salsa",
    seed: Annotated[int, typer.Option("--seed", help="Seed of the mapper.", rich_help_panel=_MODEL)] = 0,
    weight_bits: Annotated[Optional[int], typer.Option("--weight-bits", help="Weight precision (16, 8 or 4).", rich_help_panel=_MODEL)] = None,
    act_bits: Annotated[Optional[int], typer.Option("--act-bits", help="Activation precision.", rich_help_panel=_MODEL)] = None,
    kv_bits: Annotated[Optional[int], typer.Option("--kv-bits", help="KV-cache precision.", rich_help_panel=_MODEL)] = None,
    fusion: Annotated[str, typer.Option("--fusion", help="fused (FlashAttention-style, as serving stacks run) or unfused attention.", rich_help_panel=_MODEL)] = "fused",
    tp: Annotated[Optional[int], typer.Option("--tp", help="Tensor parallelism of one copy (chips).", rich_help_panel=_MODEL)] = None,
    pp: Annotated[Optional[int], typer.Option("--pp", help="Pipeline stages: the model's blocks split over pp chips, up to pp batches in flight (vLLM's virtual engines; docs/serving.md).", rich_help_panel=_MODEL)] = None,
    ep: Annotated[Optional[int], typer.Option("--ep", help="Expert parallelism (MoE models; attention data parallel).", rich_help_panel=_MODEL)] = None,
    interconnect: Annotated[Optional[str], typer.Option("--interconnect", help="The chips' links (nvlink3, nvlink4, pcie4_x16).", rich_help_panel=_MODEL)] = None,
    replicas: Annotated[int, typer.Option("--replicas", min=1, help="Colocated copies of the deployment, the requests dealt round-robin.", rich_help_panel=_POOLS)] = 1,
    disaggregate: Annotated[Optional[str], typer.Option("--disaggregate", metavar="P:D", help="A prefill pool of P copies and a decode pool of D copies (DistServe): each prompt prefilled in the first, its K/V cache sent over --kv-link, decoded in the second.", rich_help_panel=_POOLS)] = None,
    prefill_arch: Annotated[Optional[str], typer.Option("--prefill-arch", help="The prefill pool's accelerator (default --arch).", rich_help_panel=_POOLS)] = None,
    prefill_tp: Annotated[Optional[int], typer.Option("--prefill-tp", min=1, help="The prefill pool's tensor parallelism (default --tp).", rich_help_panel=_POOLS)] = None,
    kv_link: Annotated[str, typer.Option("--kv-link", help="The K/V cache's path from a prefill to a decode copy, per chip: nvlink3, nvlink4, pcie4_x16.", rich_help_panel=_POOLS)] = "nvlink3",
    slo_ttft: Annotated[Optional[float], typer.Option("--slo-ttft", help="TTFT target (s).", rich_help_panel=_SLO)] = None,
    slo_tpot: Annotated[Optional[float], typer.Option("--slo-tpot", help="Time-per-output-token target (s).", rich_help_panel=_SLO)] = None,
    attainment: Annotated[float, typer.Option("--attainment", help="Share of requests that must meet the SLO (goodput's threshold).", rich_help_panel=_SLO)] = 0.9,
    search_goodput: Annotated[bool, typer.Option("--goodput", help="Also search the highest rate meeting the SLO (bisection; each rate the load's requests with their gaps scaled).", rich_help_panel=_SLO)] = False,
    out_dir: Annotated[Optional[Path], typer.Option("--out", help="Write requests/ and iterations/ (Parquet), summary.json, cost_table.json and plots/ here.")] = None,
    table_file: Annotated[Optional[Path], typer.Option("--table", help="Reuse a cost_table.json written by an earlier run of the same deployment (skips the mapping).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as one JSON object (stable keys: ttft_s, tpot_s, e2e_s with mean/p50/p90/p99, output_tokens_per_s, requests_per_s, slo_attainment, goodput_rps, energy_per_request_j, preemptions, ...).")] = False,
) -> tuple[dict | None, list[str]]:
    """Serve requests: continuous batching with chunked prefill and a paged KV cache (vLLM V1's
    scheduler), each iteration priced by the project's own mapped cost of its work on the
    accelerator. Prints TTFT, time per output token and E2E percentiles, throughput, SLO attainment,
    goodput, energy per request; --out writes per-request and per-iteration Parquet. Examples:

        sweep serve --network llama3_8b --arch a100 --rate 4 --requests 500 --prompt lognormal:1000:0.8 --output lognormal:200:0.8
        sweep serve --network llama3_8b --arch a100 --trace azure_conv_2023 --drop-long-prompts --requests 2000 --slo-ttft 2 --slo-tpot 0.1 --goodput --out results/serve
    """
    # returns the JSON document under --json, else the lines to print: `sweep.cli` prints them
    from rich.console import Console
    from sweep.serving.serve import IterationWriter, serve, setup, write_outputs
    err = Console(stderr=True, soft_wrap=True)
    slo, load = _load_and_slo(network, trace, column, rate, requests, duration, prompt, output, cv, load_seed,
                              drop_long_prompts, slo_ttft, slo_tpot, attainment, max_model_len)
    table = _read_table(table_file) if table_file is not None else None
    sched = {"max_num_seqs": max_num_seqs, "max_num_batched_tokens": max_num_batched_tokens, "block_size": block_size,
             "gpu_memory_utilization": gpu_memory_utilization, "num_blocks": num_blocks, "max_model_len": max_model_len,
             "chunked_prefill": False if no_chunked_prefill else None, "graphs": graphs}
    progress = None if as_json else _progress(err)
    st = setup(network, arch, mapper=mapper, seed=seed, weight_bits=weight_bits, act_bits=act_bits, kv_bits=kv_bits,
               fusion=fusion, tp=tp, pp=pp, ep=ep, interconnect=interconnect, launch_us=launch_us,
               host_s=None if host_ms is None else host_ms / 1e3, scheduler=sched, table=table, progress=progress)
    layout = _layout(st, replicas, disaggregate, prefill_arch, prefill_tp, kv_link, progress,
                     dict(network=network, mapper=mapper, seed=seed, weight_bits=weight_bits, act_bits=act_bits,
                          kv_bits=kv_bits, fusion=fusion, ep=ep, interconnect=interconnect, launch_us=launch_us,
                          host_s=None if host_ms is None else host_ms / 1e3, scheduler=sched))
    if progress:
        progress(-1, 0, "")
    tmp = Path(tempfile.mkdtemp(prefix="sweep-serve-")) if out_dir and layout is None else None
    try:
        sink = IterationWriter(tmp / "iterations") if tmp else None
        run = serve(st, load, slo, search_goodput=search_goodput, sink=sink, layout=layout)
        if out_dir:
            write_outputs(out_dir, st, run, load, slo, iterations_dir=tmp / "iterations" if tmp else None)
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    doc = {"summary": run["summary"], "goodput": run["goodput"], "setup": st.options, "kv_cache": st.kv,
           "num_blocks": st.num_blocks, "load": load.to_dict(), "requests_source": run["requests"].source,
           "slo": slo.to_dict()}
    if as_json:
        return {**run["summary"], "goodput": run["goodput"], "setup": st.options, "kv_cache": st.kv,
                "num_blocks": st.num_blocks, "out": str(out_dir) if out_dir else None}, []
    from sweep.reports.serving import summary_lines
    return None, summary_lines(doc) + [
        f"simulated {run['summary']['iterations']:,} iterations in {run['sim_s']:.2f} s; cost table "
        f"{st.table.meta.get('grid_points', 0)} grid points, {st.table.meta.get('layers_mapped', 0)} layers mapped "
        f"in {st.table.meta.get('build_s', 0):.1f} s" + (f"; wrote {out_dir}" if out_dir else "")]


def _layout(st, replicas, disaggregate, prefill_arch, prefill_tp, kv_link, progress, kw):
    """The `sweep.serving.serve.Layout` of the pool options (None: one copy).

    Raises:
        CampaignError: a P:D that is not two whole numbers >= 1, an unknown link, pool options
            without --disaggregate.
    """
    from costmodel.system.interconnect import INTERCONNECTS
    from sweep.serving.serve import Layout, setup
    if kv_link not in INTERCONNECTS:
        raise CampaignError("sweep serve", [Finding("--kv-link", kv_link, f"expected one of {sorted(INTERCONNECTS)}")])
    if disaggregate is None:
        if prefill_arch or prefill_tp:
            raise CampaignError("sweep serve", [Finding("--prefill-arch" if prefill_arch else "--prefill-tp",
                                                        prefill_arch or prefill_tp, "a prefill pool needs --disaggregate P:D")])
        return None if replicas == 1 else Layout(replicas=replicas)
    p, sep, d = disaggregate.partition(":")
    if not sep or not p.isdigit() or not d.isdigit() or int(p) < 1 or int(d) < 1:
        raise CampaignError("sweep serve", [Finding("--disaggregate", disaggregate, "expected P:D, the prefill and "
                                                                                    "decode copies, e.g. 2:6")])
    if replicas != 1:
        raise CampaignError("sweep serve", [Finding("--replicas", replicas, "give --disaggregate P:D or --replicas, "
                                                                            "not both")])
    if st.dep.pp > 1:
        raise CampaignError("sweep serve", [Finding("--pp", st.dep.pp, "pipeline stages in disaggregated pools are "
                                                                       "not modelled: give --disaggregate or --pp")])
    pre = None
    if prefill_arch or (prefill_tp and prefill_tp != st.dep.tp):
        pre = setup(arch=prefill_arch or st.options["arch"], tp=prefill_tp or st.dep.tp, progress=progress, **kw)
    return Layout(prefill=int(p), decode=int(d), prefill_setup=pre, link=kv_link)


def _load_and_slo(network, trace, column, rate, requests, duration, prompt, output, cv, load_seed, drop_long,
                  slo_ttft, slo_tpot, attainment, max_model_len):
    """The SLO and the load, checked, and the load read once (a bad trace costs no mapping).

    Raises:
        CampaignError: naming the option, or the trace's file, row and column.
    """
    from costmodel.serving import SLO
    from costmodel.transformer.catalog import resolve_model
    from sweep.serving.serve import Load, load_requests
    cols = parse_columns(column)
    try:
        slo = SLO(slo_ttft, slo_tpot, attainment)
    except ValueError as e:
        key = "--slo-ttft" if "ttft" in str(e) else "--slo-tpot" if "tpot" in str(e) else "--attainment"
        raise CampaignError("sweep serve", [Finding(key, {"--slo-ttft": slo_ttft, "--slo-tpot": slo_tpot,
                                                          "--attainment": attainment}[key], str(e))]) from None
    load = Load(str(trace) if trace else None, cols, rate, requests, duration, prompt, output, cv, load_seed, drop_long)
    if trace is None and rate is None:
        raise CampaignError("sweep serve", [Finding("--rate", None, "give --trace FILE, or a synthetic load: --rate R "
                                                                    "with --requests N or --duration S")])
    if trace is None and requests is None and duration is None:
        raise CampaignError("sweep serve", [Finding("--requests", None, "a synthetic load needs --requests N or "
                                                                        "--duration S")])
    try:
        ctx = resolve_model(network).max_context
    except (KeyError, ValueError) as e:
        raise CampaignError("sweep serve", [Finding("--network", network, str(e).strip("'\""))]) from None
    load_requests(load, max_model_len or ctx)
    return slo, load


def _read_table(path: Path):
    import json
    from costmodel.serving import CostTable
    try:
        return CostTable.from_dict(json.loads(Path(path).read_text()))
    except OSError as e:
        raise CampaignError("sweep serve", [Finding("--table", str(path), f"cannot read: {e.strerror or e}")]) from None
    except (ValueError, TypeError, KeyError) as e:
        raise CampaignError("sweep serve", [Finding("--table", str(path), f"not a cost table: {e}")]) from None


def _progress(console):
    """A progress callback for the cost table's grid points (Rich, on stderr)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
    state: dict[str, Any] = {}

    def cb(done: int, total: int, what: str) -> None:
        if done < 0:
            if "p" in state:
                state["p"].stop()
            return
        if "p" not in state:
            p = Progress(TextColumn("cost table"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                         TextColumn("{task.description}"), console=console, transient=True)
            p.start()
            state["p"], state["t"] = p, p.add_task("", total=total)
        state["p"].update(state["t"], completed=done, description=what)

    return cb
