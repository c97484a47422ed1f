"""The command line's transformer-step parts: the options that set a step (``--phase``,
``--batch``, ``--seq``, ``--context``, ``--weight-bits``, ``--act-bits``, ``--kv-bits``, shared by
`sweep list networks` and `sweep map`) and the text of a mapped step (its vector operations, the
matmul / vector split, DRAM traffic by role and the serving figures: time to first token or time
per output token, tokens/s, energy per token)."""

from __future__ import annotations

from typing import Annotated, Any, Optional

import typer
from rich.table import Table

from sweep.common import fmt

__all__ = ["SystemOpt", "ChipsOpt", "TpOpt", "PpOpt", "EpOpt", "ReplicasOpt", "MicroBatchesOpt", "InterconnectOpt", "LaunchUsOpt",
           "print_system", "PhaseOpt", "BatchOpt", "SeqOpt", "ContextOpt", "WeightBitsOpt", "ActBitsOpt", "KvBitsOpt", "AttentionOpt",
           "FusionOpt", "QueryTileOpt", "KvTileOpt", "GpuMemoryUtilizationOpt", "memory_share",
           "list_step_options", "workload_of", "print_step", "print_fusion_choice", "print_vector_ops", "memory_text",
           "print_config_notes"]

_PANEL = "Transformer step (the zoo's LLMs, BERT and ViT; `sweep list networks`)"
PhaseOpt = Annotated[Optional[str], typer.Option("--phase", help="prefill (the prompt, compute-bound) or decode (one new token per sequence, weights and KV cache read from DRAM); encoders (bert_base, vit_b16) are prefill only. Default: the model's.", rich_help_panel=_PANEL)]
BatchOpt = Annotated[Optional[int], typer.Option("--batch", min=1, help="Sequences in the step.", rich_help_panel=_PANEL)]
SeqOpt = Annotated[Optional[int], typer.Option("--seq", min=1, help="Prompt tokens per sequence (prefill).", rich_help_panel=_PANEL)]
ContextOpt = Annotated[Optional[int], typer.Option("--context", min=1, help="Tokens in the KV cache that the new token attends to, itself included (decode).", rich_help_panel=_PANEL)]
WeightBitsOpt = Annotated[Optional[int], typer.Option("--weight-bits", help="Weight precision (16, 8 or 4), over the accelerator's precision table (W).", rich_help_panel=_PANEL)]
ActBitsOpt = Annotated[Optional[int], typer.Option("--act-bits", min=1, help="Activation precision: 32, 16, 8 or 4, over the accelerator's precision table (I and O_final).", rich_help_panel=_PANEL)]
KvBitsOpt = Annotated[Optional[int], typer.Option("--kv-bits", min=1, help="KV cache precision (default: the activations').", rich_help_panel=_PANEL)]
AttentionOpt = Annotated[Optional[str], typer.Option("--attention", help="Prefill mask: causal (decoders' default: query i attends keys 0..i, the blocks above the diagonal skipped) or dense (every query every key; encoders and ViT always).", rich_help_panel=_PANEL)]
QueryTileOpt = Annotated[Optional[int], typer.Option("--query-tile", min=1, help="Fused attention's query tile in positions (default 128): larger tiles read K and V fewer times and need more on-chip memory for the scores.", rich_help_panel=_PANEL)]
KvTileOpt = Annotated[Optional[int], typer.Option("--kv-tile", min=1, help="Fused attention's K/V tile in keys (default 128): larger tiles rescale the partial output fewer times and need more on-chip memory.", rich_help_panel=_PANEL)]
BatchedOpt = Annotated[bool, typer.Option("--batched-attention", help="Attention's sequences x KV heads as one batched matmul per block (loop dim G: an accelerator whose \\[spatial_hint] allows G spreads them over its cores or MXUs) instead of one instance after another.", rich_help_panel=_PANEL)]
_SYSTEM = "System of chips (a transformer step served by several chips; docs/system.md)"
SystemOpt = Annotated[Optional[str], typer.Option("--system", metavar="FILE", help="A system TOML (\\[system]: tp, pp, ep, replicas, micro_batches, interconnect, chips): one chip's share of the step is mapped, the collectives and the pipeline added; prints the collectives, TTFT or time per output token, tokens/s of the system and per chip, energy per token with the links, memory per chip. The options below override its keys.", rich_help_panel=_SYSTEM)]
ChipsOpt = Annotated[Optional[int], typer.Option("--chips", min=1, help="Chips in all (= tp x pp x ep x replicas; alone: tensor parallel over all of them).", rich_help_panel=_SYSTEM)]
TpOpt = Annotated[Optional[int], typer.Option("--tp", min=1, help="Tensor parallelism (Megatron-LM): heads, FFN and vocabulary split over tp chips, two all-reduces per block.", rich_help_panel=_SYSTEM)]
PpOpt = Annotated[Optional[int], typer.Option("--pp", min=1, help="Pipeline parallelism: the blocks in pp stages, activations sent between them.", rich_help_panel=_SYSTEM)]
EpOpt = Annotated[Optional[int], typer.Option("--ep", min=1, help="Expert parallelism (MoE models): experts over ep groups, attention data parallel, an all-to-all dispatch and combine per block.", rich_help_panel=_SYSTEM)]
ReplicasOpt = Annotated[Optional[int], typer.Option("--replicas", min=1, help="Copies of the model serving independent batches (data parallel).", rich_help_panel=_SYSTEM)]
MicroBatchesOpt = Annotated[Optional[int], typer.Option("--micro-batches", min=1, help="Micro-batches through the pipeline stages (divides the batch / ep; default 1).", rich_help_panel=_SYSTEM)]
LaunchUsOpt = Annotated[Optional[float], typer.Option("--launch-us", min=0.0, help="The host's fixed cost per kernel launch on each chip (us) over the accelerator's; 0 = every step captured once and replayed (CUDA graphs). A GPU preset replays decode already (\\[gpu] graph_phases) and pays its device time per kernel (\\[gpu] kernel_us) either way.", rich_help_panel=_SYSTEM)]
GpuMemoryUtilizationOpt = Annotated[Optional[float], typer.Option("--gpu-memory-utilization", metavar="F", help="Share of each chip's memory that the weights, activations and KV cache may fill, in (0, 1] (vLLM's gpu_memory_utilization, default 0.9: the rest is the runtime's); sets the check that the step fits and the largest batch that fits. 1 counts every byte.", rich_help_panel=_SYSTEM)]
InterconnectOpt = Annotated[Optional[str], typer.Option("--interconnect", help="The chips' links: nvlink3 (A100, default), nvlink4 (H100), pcie4_x16, or a table in --system.", rich_help_panel=_SYSTEM)]
FusionOpt = Annotated[Optional[str], typer.Option("--fusion", help="fused (default, as LLM serving stacks run: attention as one FlashAttention-style group, score -> softmax -> context on chip per query tile, K/V streamed; element-wise ops applied as the accumulators drain), unfused (every operation reads and writes its tensors through memory), or auto (sweep map only: maps unfused and fused with every query tile 64..1024 and K/V tile 64..512, keeps the best under --objective and prints the table of choices).", rich_help_panel=_PANEL)]


def memory_share(value: float | None, key: str = "--gpu-memory-utilization") -> float | None:
    """``--gpu-memory-utilization`` (or the keyword ``key``) checked
    (`costmodel.capacity.check_memory_utilization`): None when not given (the default, 0.9, applies).

    Raises:
        CampaignError: a value outside (0, 1] (``key`` and the value named; exit 2).
    """
    if value is None:
        return None
    from costmodel.capacity import check_memory_utilization
    from sweep.common.errors import CampaignError, Finding
    try:
        return check_memory_utilization(value, key)
    except ValueError as e:
        why = str(e).split(": ", 1)[-1]   # the message without its "key = value" (the finding says it)
        raise CampaignError(key, [Finding(key, value, why)]) from None


def workload_of(phase: str | None, batch: int | None, seq: int | None, context: int | None,
                weight_bits: int | None, act_bits: int | None, kv_bits: int | None,
                attention: str | None = None, fusion: str | None = None,
                query_tile: int | None = None, kv_tile: int | None = None,
                batched_attention: bool = False) -> dict[str, Any]:
    """The given step options as `sweep.commands.map_eval.resolve_network`'s ``workload`` (None: not given)."""
    return {"phase": phase, "batch": batch, "seq": seq, "context": context,
            "weight_bits": weight_bits, "act_bits": act_bits, "kv_bits": kv_bits, "attention": attention,
            "fusion": fusion, "query_tile": query_tile, "kv_tile": kv_tile,
            "batched_attention": True if batched_attention else None}


def list_step_options(what: str, name: str | None, workload: dict[str, Any], file: str | None = None) -> dict[str, Any]:
    """The step options given to `sweep list` (None values dropped).

    Raises:
        CampaignError: a step option anywhere but `sweep list networks NAME` or `sweep list
            networks --file config.json` (the option named).
    """
    from sweep.common.errors import CampaignError, Finding
    given = {k: v for k, v in workload.items() if v is not None}
    config = file is not None and file.lower().endswith(".json")
    if given and (what != "networks" or (name is None and not config)):
        k = next(iter(given))
        raise CampaignError("sweep list", [Finding(f"--{k.replace('_', '-')}", given[k],
                                                   "the step options go with `sweep list networks NAME` (a transformer) "
                                                   "or `sweep list networks --file config.json`")])
    return given


def print_vector_ops(doc: dict, console: Any) -> None:
    """`sweep list networks NAME`'s vector operations (kind, elements, inputs, rows, repeat) and
    what the step leaves uncosted (``not_costed``)."""
    from sweep.commands.text import print_rows
    ops = doc.get("vector_ops") or []
    if ops:
        print_rows(f"{len(ops)} vector operation(s) between the matmuls, {doc.get('total_vector_elements', 0):,} "
                   "elements per step", ops, console)
    for line in doc.get("not_costed") or []:
        console.print(f"not costed: {line}", highlight=False, markup=False)
    for line in doc.get("notes") or []:   # a config.json's notes (costmodel.transformer.hf)
        console.print(f"note: {line}", highlight=False, markup=False, soft_wrap=True)


def print_config_notes(network: str | None, console: Any) -> None:
    """The notes of the Hugging Face config.json ``network`` (`costmodel.transformer.hf`: keys its
    class does not define, an ``architectures`` that disagrees with ``model_type``, an implausible
    size, the checkpoint's precision where unread), one ``note: ...`` line each on ``console``;
    nothing for any other network. Call it after the file was read once (its errors raised then)."""
    from pathlib import Path

    from costmodel.transformer import is_config_file, read_hf_config
    if network is None or not is_config_file(network) or not Path(network).is_file():
        return
    for line in read_hf_config(network)[1]["notes"]:
        console.print(f"note: {line}", highlight=False, markup=False, soft_wrap=True)


def _traffic_text(dram: dict | None) -> str:
    if not dram:
        return "DRAM traffic: n/a"
    total = sum(dram.values())
    parts = ", ".join(f"{k.replace('_', ' ')} {fmt.bits(v)} ({v / total:.1%})" for k, v in dram.items()) \
        if total else "none"
    return f"DRAM traffic per step {fmt.bits(total)}: {parts}"


def print_step(res: dict, console: Any) -> None:
    """The transformer part of `sweep map --network`'s text (`sweep.commands.map_eval.map_network`'s
    ``vector``, ``total`` and ``llm``): the vector operations' table, the matmul / vector split,
    DRAM traffic by role and the serving figures."""
    vec, tot, llm = res.get("vector") or {}, res["total"], res.get("llm")
    if vec.get("ops"):
        fused = (res.get("llm") or {}).get("workload", {}).get("fusion") == "fused"
        t = Table(title="vector operations (fused: element-wise ops in their producers' drain, memory '-' when they "
                        "touch none; the online softmax per attention tile)" if fused else
                  "vector operations (no fusion: each reads and writes its tensors)")
        for c in ("operation", "op", "repeats", "elements", "memory", "energy", "latency"):
            t.add_column(c, justify="left" if c in ("operation", "op", "memory") else "right")
        for r in vec["ops"]:
            t.add_row(r["name"], r["op"], f"{r['repeat']:,}", f"{r['elements']:,}", r["memory"],
                      fmt.energy(r["energy_pj"]), fmt.cycles(r["latency_cycles"]))
        fmt.print_wide(console, t)
    if vec.get("not_costed"):
        console.print(f"not costed: {vec['not_costed']}", highlight=False, markup=False)
    if "vector_energy_pj" in tot:
        over = (f" ({fmt.cycles(tot['overlapped_cycles'])} of vector work overlapped the array)"
                if tot.get("overlapped_cycles") else " (one after another)")
        launch = (f"; {tot['launches']:,} kernel launches x the fixed cost = {fmt.cycles(tot['launch_cycles'])}"
                  if tot.get("launch_cycles") else "")
        if "launch_device_cycles" in tot:   # a GPU: the host's part (0 when replayed as a graph) and the device's
            launch = (f"; {tot['launches']:,} kernel launches: host {fmt.cycles(tot['launch_host_cycles'])}"
                      f"{' (replayed as a CUDA graph)' if not tot['launch_host_cycles'] else ''}, device "
                      f"{fmt.cycles(tot['launch_device_cycles'])}")
        console.print(f"matmuls {fmt.energy(tot['matmul_energy_pj'])}, {fmt.cycles(tot['matmul_latency_cycles'])}; "
                      f"vector operations {fmt.energy(tot['vector_energy_pj'])}, "
                      f"{fmt.cycles(tot['vector_latency_cycles'])}{launch}; step {fmt.energy(tot['energy_pj'])}, "
                      f"{fmt.cycles(tot['latency_cycles'])}{over}", highlight=False, markup=False)
    console.print(_traffic_text(tot.get("dram_bits")), highlight=False, markup=False)
    if not llm:
        return
    for line in llm["workload"].get("not_costed") or []:
        console.print(f"not costed: {line}", highlight=False, markup=False)
    if llm["workload"].get("note"):
        console.print(f"note: {llm['workload']['note']}", highlight=False, markup=False)
    w = llm["workload"]
    from costmodel.transformer.step import costed_precision
    prec = (costed_precision(w.get("precision"), llm.get("precisions")) or {}).get("text", "n/a")
    head = (f"prefill of {w['batch']} x {w['seq']} tokens: time to first token {fmt.seconds(llm['ttft_s'])}"
            if llm["phase"] == "prefill" else
            f"decode at batch {w['batch']}, context {w['context']}: time per output token "
            f"{fmt.seconds(llm['time_per_token_s'])}")
    per_token = fmt.energy(None if llm["energy_per_token_j"] is None else llm["energy_per_token_j"] * 1e12)
    console.print(f"{head} at {fmt.sig(llm['clock_mhz'])} MHz; {fmt.sig(llm['tokens_per_s'])} tokens/s; "
                  f"{per_token} per token; precisions: {prec}"
                  + (" (matmuls only)" if llm.get("matmul_only") else ""), highlight=False, markup=False)
    if llm.get("energy_basis"):
        console.print(f"energy: {fmt.energy(llm['dynamic_energy_j'] * 1e12)} dynamic + "
                      f"{fmt.energy(llm['static_energy_j'] * 1e12)} static ({llm['energy_basis']})",
                      highlight=False, markup=False)
    console.print(memory_text(llm, per_chip="system" in res), highlight=False, markup=False)
    console.print(attention_text(w), highlight=False, markup=False)


def attention_text(w: dict) -> str:
    """How the step's attention runs (``workload``: ``attention``, ``fusion``; the tiles of
    `costmodel.transformer.attention`)."""
    from costmodel.transformer.attention import CAUSAL_BLOCK, FUSED_TILE
    mask = w.get("attention") or "the whole cache (decode)"
    pairs = w.get("attention_pairs") or {}
    counts = (f"; query-key pairs {pairs['computed']:,} computed, {pairs['exact']:,} under the mask"
              if pairs else "")
    if w.get("fusion") == "fused":
        return (f"attention: fused (score -> online softmax -> context per query tile, scores on chip; query tile "
                f"{w.get('query_tile') or FUSED_TILE} positions, K/V tile {w.get('kv_tile') or FUSED_TILE} keys), "
                f"mask {mask}{counts}")
    blocks = f", diagonal blocks of {CAUSAL_BLOCK}" if w.get("attention") == "causal" else ""
    return f"attention: unfused (scores and probabilities through memory), mask {mask}{blocks}{counts}"

def memory_text(llm: dict, per_chip: bool = False) -> str:
    """The step's DRAM footprint against the usable share of the capacity and the largest batch that
    fits (``llm``'s ``memory`` and ``max_batch``, `sweep.engine.totals.step_memory`): ``memory per
    chip: 85.9 GB (80 GiB) in 5 HBM2E stacks x 0.90 usable (gpu_memory_utilization) = 77.3 GB (72 GiB);
    the step needs 36.7 GB (weights ...); largest batch that fits at context 4,096: 122``."""
    from costmodel.capacity import GPU_MEMORY_UTILIZATION, capacity_text, gb
    m = llm.get("memory")
    head = "memory per chip" if per_chip else "memory"
    if not m:
        return f"{head}: n/a"
    parts = (f"weights {gb(m['weights_bytes'])}, KV cache {gb(m['kv_cache_bytes'])}, activations "
             f"{gb(m['activations_bytes'])}")
    if m["capacity_bytes"] is None:
        return f"{head}: needs {gb(m['total_bytes'])} ({parts}); capacity not declared (no [dram] kind): not checked"
    w = llm["workload"]
    at = f"context {w['context']:,}" if w.get("phase") == "decode" else f"{w.get('seq'):,} tokens per prompt"
    cap = capacity_text(m["capacity_bytes"], m["memory"], m.get("gpu_memory_utilization", GPU_MEMORY_UTILIZATION))
    return (f"{head}: {cap}; the step needs {gb(m['total_bytes'])} ({parts}); "
            f"largest batch that fits at {at}: {llm.get('max_batch'):,}")


def print_fusion_choice(res: dict, console: Any) -> None:
    """`sweep map --fusion auto`'s table: each way of running the step's attention (unfused; fused
    with its query and K/V tiles), its energy, latency, EDP and DRAM traffic, the chosen one marked
    (``res["fusion_choice"]``, `sweep.commands.fusion_choice`); nothing without it."""
    rows = res.get("fusion_choice")
    if not rows:
        return
    t = Table(title=f"--fusion auto: {len(rows)} ways to run the attention, best under {res['objective']} "
                    "(ties: least energy)")
    for c in ("", "fusion", "query tile", "K/V tile", "energy", "latency", "EDP pJ*cycles", "DRAM traffic"):
        t.add_column(c, justify="left" if c in ("", "fusion") else "right")
    for r in rows:
        ok = r["status"] == "ok"
        t.add_row("*" if r["chosen"] else "", r["fusion"], str(r["query_tile"] or "-"), str(r["kv_tile"] or "-"),
                  fmt.energy(r["energy_pj"]) if ok else "no valid mapping", fmt.cycles(r["latency_cycles"]) if ok else "",
                  fmt.edp(r["edp"], unit=False) if ok else "", fmt.bits(r["dram_bits"]) if ok and r["dram_bits"] else "",
                  style="bold" if r["chosen"] else None)
    fmt.print_wide(console, t)
    best = next(r for r in rows if r["chosen"])
    console.print(f"chosen: {best['network']}", highlight=False, markup=False)


def print_system(res: dict, console: Any) -> None:
    """A step on a system of chips (``res["system"]``, `costmodel.system.serving.system_step`): the
    collectives' table (bytes, count per step, time, share of the step) and the system's figures;
    nothing for one chip."""
    sys_ = res.get("system")
    if not sys_:
        return
    if sys_.get("latency_s") is None:
        console.print(f"system {sys_['label']}: no figures (a layer of the share has no valid mapping)",
                      highlight=False, markup=False)
        return
    lat = sys_["latency_s"]
    net = sys_["system"]["interconnect"]
    console.print(f"system: {sys_['label']}; one chip's share mapped ({res.get('micro_network') or res['network']})"
                  + ("" if isinstance(net, str) else f"; interconnect {net}"), highlight=False, markup=False)
    rows = sys_.get("collectives") or []
    if rows:
        t = Table(title="collectives per step (none overlaps compute: each result is the next operation's input)")
        for c in ("collective", "among", "bytes each", "per step", "time each", "on the path", "share of the step"):
            t.add_column(c, justify="left" if c == "collective" else "right")
        for r in rows:
            path = r["total_s"]
            t.add_row(r["name"], f"{r['chips']} chips", fmt.bits(r["bytes"] * 8), f"{r['per_step']:,}",
                      fmt.seconds(r["time_s"]), fmt.seconds(path), f"{path / lat:.1%}" if lat else "")
        fmt.print_wide(console, t)
    what = "time to first token" if res.get("llm", {}).get("phase") == "prefill" else "time per output token"
    links = ("links not counted: the interconnect states no pJ/bit" if sys_.get("link_energy_j") is None
             else f"links {fmt.energy(sys_['link_energy_j'] * 1e12)}")
    console.print(f"{what} {fmt.seconds(lat)}: the chips' work on the path {fmt.seconds(sys_['compute_s'])}, "
                  f"collectives {fmt.seconds(sys_['collectives_s'])} ({sys_['collectives_s'] / sys_['round_trip_s']:.1%} "
                  f"of a micro-batch's round trip), pipeline bubble {sys_['bubble']:.1%}; "
                  f"{fmt.sig(sys_['tokens_per_s'])} tokens/s for the system, {fmt.sig(sys_['tokens_per_s_per_chip'])} "
                  f"per chip; energy per token {fmt.energy(sys_['energy_per_token_j'] * 1e12)} ({links})",
                  highlight=False, markup=False)
    for w in sys_.get("warnings") or ():   # a collective beyond the NVLink domain, over the scale-out network
        console.print(f"warning: {w}", style="yellow", highlight=False, markup=False)
