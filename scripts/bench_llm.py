"""LLM inference on the loop-nest model, measured (issue 28, section 5). Three parts, each printed
as a Markdown table and written with the raw JSON to ``--out``:

* ``speed``: `sweep map` of a whole Llama-3-8B decode step (batch 1, context 4096) and prefill
  (batch 1, 2048 tokens) on tpu_like with loma, salsa and both with ``spatial=search``: the
  command's wall time (one process, pinned to one core with ``taskset -c 0`` where it exists;
  median of ``--repeat`` warm runs, after one run that fills Numba's cache), energy per token and
  time per token / time to first token. Prefill runs loma with ``lpf_limit=7``: the exhaustive
  ordering space of a 2048-token matmul (2^11 x 2^12 x 2^12 prime factors) is out of reach.
* ``bound``: a decode matmul (Llama-3-8B's ffn_gate, 4096 -> 14336) at batch 1, 2, 4, ... on
  tpu_like, eyeriss_like and simba_like (loma, ``spatial=search``, ``lpf_limit=7``): its latency against the DRAM
  bound (weight bits / DRAM read bandwidth, bits per cycle, from each preset's TOML) and against
  the compute bound (MACs / PEs); the batch at which each preset becomes compute-bound (latency
  more than 2 % over the DRAM bound), against the ratio of peak MACs per cycle to DRAM weights
  per cycle (PEs x weight bits / DRAM bits per cycle).
* ``breakdown``: where the energy of a Llama-3-8B decode step goes on tpu_like (batch 1, context
  512 and 32,768; loma, ``spatial=search``, ``lpf_limit=7``): per memory level and role (weights, KV cache,
  activations), the MACs, and the vector operations (compute and their memory traffic); and what
  fusing attention would save at most (the vector operations' memory traffic and the DRAM traffic of
  the scores and probabilities).

Every step is Llama-3-8B at 8-bit weights and activations (``--weight-bits 8 --act-bits 8``, the
cache taking the activations' 8 bits: the INT8 datapath of these presets; the bfloat16 checkpoint
would be costed at 16 bits) with unfused attention (``--fusion unfused``: each matmul whole and
each vector operation through memory, the execution whose saving by fusion ``breakdown`` bounds).

    python scripts/bench_llm.py [speed bound breakdown] [--repeat 3] [--out /tmp/bench_llm]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

STEP = {"weight_bits": 8, "act_bits": 8, "fusion": "unfused"}  # W8A8, unfused (module docstring)
_OPTS = ["--weight-bits", "8", "--act-bits", "8", "--fusion", "unfused"]
STEPS = {"decode": ["--phase", "decode", "--batch", "1", "--context", "4096", *_OPTS],
         "prefill": ["--phase", "prefill", "--batch", "1", "--seq", "2048", *_OPTS]}
CONFIGS = [("loma", []), ("salsa", []), ("loma", ["--param", "spatial=search"]),
           ("salsa", ["--param", "spatial=search"])]


def _map(args: list[str]) -> tuple[float, dict]:
    pin = ["taskset", "-c", "0"] if shutil.which("taskset") else []
    t0 = time.perf_counter()
    out = subprocess.run(pin + ["sweep", "map", "--json", *args], capture_output=True, text=True, check=True,
                         env={**os.environ, "RAY_USAGE_STATS_ENABLED": "0"})
    return time.perf_counter() - t0, json.loads(out.stdout)


def speed(repeat: int) -> list[dict]:
    rows = []
    for phase, step in STEPS.items():
        for mapper, extra in CONFIGS:
            if mapper == "loma" and phase == "prefill":
                extra = extra + ["--param", "lpf_limit=7"]
            args = ["--network", "llama3_8b", *step, "--arch", "tpu_like", "--mapper", mapper, *extra]
            _map(args)  # fills Numba's cache
            times, res = [], {}
            for _ in range(repeat):
                t, res = _map(args)
                times.append(t)
            llm = res["llm"]
            rows.append({"phase": phase, "mapper": mapper + (" " + " ".join(extra[1::2]) if extra else ""),
                         "wall_s": statistics.median(times), "wall_s_min": min(times),
                         "mapping_s": res["total"]["wall_s"],
                         "per_token_s": llm["ttft_s"] if phase == "prefill" else llm["time_per_token_s"],
                         "tokens_per_s": llm["tokens_per_s"], "energy_per_token_j": llm["energy_per_token_j"],
                         "dram_bits": res["total"]["dram_bits"]})
            print(f"  {phase} {rows[-1]['mapper']}: {rows[-1]['wall_s']:.2f} s", file=sys.stderr)
    return rows


def bound(batches: list[int]) -> list[dict]:
    from costmodel.loopnest.arch import load_accelerator
    from costmodel.loopnest.mapping import Mapping
    from costmodel.loopnest.reference import evaluate
    from costmodel.zoo import load_network
    from sweep.commands.map_eval import map_layer

    rows = []
    for preset in ("tpu_like", "eyeriss_like", "simba_like"):
        acc = load_accelerator(preset)
        dram = acc.memories[-1]
        w_bits = acc.precisions.get("W", 8)
        crossover = None
        for b in batches:
            layer = next(l for l, _ in load_network("llama3_8b", phase="decode", batch=b, **STEP)
                     if l.name == "ffn_gate")
            res = map_layer(layer, acc, "loma", "latency", params={"spatial": "search", "lpf_limit": 7})
            bd = evaluate(layer, acc, Mapping.from_dict(res["mapping"])).breakdown
            dram_cycles = layer.weight_count * w_bits / dram.read_bw
            compute_cycles = layer.macs / acc.pe_count
            used_pes = layer.macs / bd["compute_cycles"]  # the PEs the best unrolling keeps busy
            words = sum(lv[-1]["reads"] + lv[-1]["writes"] for lv in bd["operands"].values())
            ratio = res["latency_cycles"] / dram_cycles
            if crossover is None and ratio > 1.02:
                crossover = b
            rows.append({"arch": preset, "batch": b, "latency_cycles": res["latency_cycles"],
                         "dram_bound_cycles": dram_cycles, "compute_bound_cycles": compute_cycles,
                         "model_compute_cycles": bd["compute_cycles"], "used_pes": used_pes,
                         "all_dram_cycles": words * dram.word_bits / dram.read_bw,
                         "spatial": res.get("spatial"), "latency_over_dram": ratio,
                         "predicted_crossover": acc.pe_count * w_bits / dram.read_bw,
                         "predicted_crossover_used_pes": used_pes * w_bits / dram.read_bw})
        for r in rows:
            if r["arch"] == preset:
                r["measured_crossover"] = crossover
        print(f"  {preset}: compute-bound from batch {crossover}", file=sys.stderr)
    return rows


def breakdown(contexts: list[int]) -> list[dict]:
    from costmodel.llm import energy_breakdown
    from costmodel.loopnest.arch import load_accelerator
    from costmodel.loopnest.mapping import Mapping
    from costmodel.zoo import load_network
    from sweep.commands.map_eval import map_network

    acc = load_accelerator("tpu_like")
    out = []
    for ctx in contexts:
        net = load_network("llama3_8b", phase="decode", batch=1, context=ctx, **STEP)
        res = map_network(net, acc, "loma", "energy", params={"spatial": "search", "lpf_limit": 7})
        b = energy_breakdown(net, acc, [Mapping.from_dict(r["mapping"]) for r in res["layers"]])
        out.append({"context": ctx, "total_pj": b["total_pj"], "step_energy_pj": res["total"]["energy_pj"],
                    "fusion_saves_at_most_pj": b["fusion_bound_pj"],
                    "cells": [{"where": c["where"], "role": c["carries"], "energy_pj": c["energy_pj"],
                               "share": c["share"]} for c in b["cells"]]})
        print(f"  context {ctx}: {b['total_pj']:.4g} pJ", file=sys.stderr)
    return out


def _md_speed(rows: list[dict]) -> str:
    lines = ["| phase | mapper | wall s (median) | mapping s | TTFT / time per token s | tokens/s | energy per token mJ |",
             "|---|---|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['phase']} | {r['mapper']} | {r['wall_s']:.2f} | {r['mapping_s']:.2f} | "
                     f"{r['per_token_s']:.4g} | {r['tokens_per_s']:.4g} | {r['energy_per_token_j'] * 1e3:.4g} |")
    return "\n".join(lines)


def _md_bound(rows: list[dict]) -> str:
    lines = ["| arch | batch | latency cycles | weights' DRAM bound | compute bound (all PEs) | compute (model) | "
             "PEs used | all DRAM traffic, cycles | latency / weights' bound |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['arch']} | {r['batch']} | {r['latency_cycles']:,.0f} | {r['dram_bound_cycles']:,.0f} | "
                     f"{r['compute_bound_cycles']:,.0f} | {r['model_compute_cycles']:,.0f} | {r['used_pes']:.0f} | "
                     f"{r['all_dram_cycles']:,.0f} | {r['latency_over_dram']:.4f} |")
    seen = {}
    for r in rows:  # the PEs a matmul can use: the most any batch's best unrolling kept busy
        p, q, m = seen.get(r["arch"], (r["predicted_crossover"], 0.0, r["measured_crossover"]))
        seen[r["arch"]] = (p, max(q, r["predicted_crossover_used_pes"]), m)
    lines += ["", "| arch | predicted batch (all PEs x W bits / DRAM bits per cycle) | predicted (PEs a matmul can use) | "
              "measured (latency > 1.02 x weights' DRAM bound) |", "|---|---:|---:|---:|"]
    lines += [f"| {a} | {p:g} | {q:.3g} | {m} |" for a, (p, q, m) in seen.items()]
    return "\n".join(lines)


def _md_breakdown(rows: list[dict]) -> str:
    out = []
    for r in rows:
        out += [f"context {r['context']:,}: {r['total_pj'] * 1e-9:.4g} mJ per token", "",
                "| where | carries | energy mJ | share |", "|---|---|---:|---:|"]
        out += [f"| {c['where']} | {c['role']} | {c['energy_pj'] * 1e-9:.4g} | {c['share']:.2%} |"
                for c in r["cells"] if c["share"] >= 0.0005]
        out += ["", f"fusing attention (scores and probabilities kept on chip, softmax and the other vector "
                    f"operations reading their inputs where they are made) saves at most "
                    f"{r['fusion_saves_at_most_pj'] * 1e-9:.4g} mJ ({r['fusion_saves_at_most_pj'] / r['total_pj']:.2%}) "
                    "per token: the vector operations' memory traffic plus the scores' and probabilities' DRAM traffic", ""]
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("parts", nargs="*", default=["speed", "bound", "breakdown"])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", default="/tmp/bench_llm")
    a = ap.parse_args()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    md = []
    if "speed" in a.parts:
        r = speed(a.repeat)
        (out / "speed.json").write_text(json.dumps(r, indent=1))
        md.append(_md_speed(r))
    if "bound" in a.parts:
        r = bound([1, 2, 4, 8, 16, 32, 64, 128, 256])
        (out / "bound.json").write_text(json.dumps(r, indent=1))
        md.append(_md_bound(r))
    if "breakdown" in a.parts:
        r = breakdown([512, 32768])
        (out / "breakdown.json").write_text(json.dumps(r, indent=1))
        md.append(_md_breakdown(r))
    text = "\n\n".join(md)
    (out / "bench_llm.md").write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
