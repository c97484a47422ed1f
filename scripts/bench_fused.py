"""Fused attention, causal prefill and the vector unit beside the array, measured (issue 38, item 5).

Llama-3-8B prefill of 2,048 / 8,192 / 32,768 tokens (batch 1) on llm_ws (128 x 128 weight-stationary
array at 1 GHz, 16 MiB unified buffer, one HBM2E stack) with SALSA, at 8-bit weights and activations
(``--weight-bits 8 --act-bits 8``, the INT8 array llm_ws is; the checkpoint's bfloat16 would not fit
its one stack), in four execution models:

* ``dense unfused``: every query attends every key, every operation reads and writes its tensors
  (`--attention dense --fusion unfused`, the model before this version);
* ``causal unfused``: the blocks at and below the diagonal only (`--fusion unfused`);
* ``causal fused``: attention as one tiled group per (sequence, KV head), element-wise ops in their
  producers' drain, the vector unit working beside the array (`--fusion fused`, tiles of 128);
* ``causal auto``: the best of unfused and fused with every query / K/V tile under the objective
  (`--fusion auto`; the row's ``choice`` names the tiles);

and the fused step again on llm_ws designs with a wider vector unit (``--lanes``: the template
parameter vector.lanes). Per row: TTFT, the array's compute bound (the step's computed MACs / MACs
per cycle at the clock) and TTFT over it, the matmul and vector latencies and what overlapped, DRAM
bytes by role (weights, KV cache, activations), energy per token, and the wall time of the
`sweep map` command with the search's own seconds.

    python scripts/bench_fused.py [--seq 2048 8192 32768] [--objective latency] [--lanes 512 1024]
                                  [--out /tmp/bench_fused]

Prints a Markdown table and writes the raw rows to ``--out/rows.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
import time
from pathlib import Path

INT8 = ["--weight-bits", "8", "--act-bits", "8"]  # W8A8: the KV cache takes the activations' 8 bits
MODELS = [("dense unfused", ["--attention", "dense", "--fusion", "unfused"]),
          ("causal unfused", ["--fusion", "unfused"]),
          ("causal fused", ["--fusion", "fused"]),
          ("causal auto", ["--fusion", "auto"])]


def _design(lanes: int, folder: Path) -> str:
    """An llm_ws design with ``lanes`` vector lanes, written as an accelerator TOML."""
    from costmodel.importers.toml_out import write
    from costmodel.loopnest.arch import load_accelerator
    from costmodel.loopnest.template import ArchTemplate
    acc = ArchTemplate(load_accelerator("llm_ws")).design({"vector.lanes": lanes}, name=f"llm_ws_v{lanes}")
    path = folder / f"llm_ws_v{lanes}.toml"
    write(path, acc.to_dict())
    return str(path)


def _run(seq: int, label: str, extra: list[str], arch: str, objective: str) -> dict:
    cmd = ["sweep", "map", "--network", "llama3_8b", "--phase", "prefill", "--seq", str(seq), *INT8, *extra,
           "--arch", arch, "--mapper", "salsa", "--objective", objective, "--json"]
    t0 = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True, check=True,
                         env={**os.environ, "RAY_USAGE_STATS_ENABLED": "0"})
    wall = time.perf_counter() - t0
    res = json.loads(out.stdout)
    tot, llm = res["total"], res["llm"]
    clock = llm["clock_mhz"] * 1e6
    bound_s = tot["macs"] / (128 * 128) / clock
    d = tot["dram_bits"]
    return {"seq": seq, "model": label, "arch": Path(arch).stem, "ttft_s": llm["ttft_s"], "bound_s": bound_s,
            "over_bound": llm["ttft_s"] / bound_s, "macs": tot["macs"],
            "matmul_s": tot["matmul_latency_cycles"] / clock, "vector_s": tot["vector_latency_cycles"] / clock,
            "overlapped_s": (tot.get("overlapped_cycles") or 0.0) / clock,
            "weights_gb": d["weights"] / 8e9, "kv_gb": d["kv_cache"] / 8e9, "act_gb": d["activations"] / 8e9,
            "energy_per_token_mj": llm["energy_per_token_j"] * 1e3, "wall_s": wall, "search_s": tot["wall_s"],
            "choice": _choice(res)}


def _choice(res: dict) -> str:
    """The attention the step ran: unfused, or fused q<query tile>/k<K/V tile>."""
    w = res["llm"]["workload"]
    return "unfused" if w.get("fusion") != "fused" else f"q{w['query_tile']}/k{w['kv_tile']}"


def _md(rows: list[dict]) -> str:
    head = ("| tokens | model | arch | TTFT s | compute bound s | x bound | matmul s | vector s | overlapped s "
            "| weights GB | KV cache GB | activations GB | mJ / token | attention | wall s | search s |")
    lines = [head, "|" + "---|" * 16]
    for r in rows:
        lines.append(f"| {r['seq']:,} | {r['model']} | {r['arch']} | {r['ttft_s']:.4g} | {r['bound_s']:.4g} | "
                     f"{r['over_bound']:.2f} | {r['matmul_s']:.4g} | {r['vector_s']:.4g} | {r['overlapped_s']:.4g} | "
                     f"{r['weights_gb']:.4g} | {r['kv_gb']:.4g} | {r['act_gb']:.4g} | "
                     f"{r['energy_per_token_mj']:.4g} | {r['choice']} | {r['wall_s']:.1f} | {r['search_s']:.2f} |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seq", type=int, nargs="+", default=[2048, 8192, 32768])
    ap.add_argument("--objective", default="latency", choices=("latency", "energy", "edp"))
    ap.add_argument("--lanes", type=int, nargs="*", default=[512, 1024])
    ap.add_argument("--out", default="/tmp/bench_fused")
    a = ap.parse_args()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        wide = [_design(n, Path(tmp)) for n in a.lanes]
        for seq in a.seq:
            for label, extra in MODELS:
                rows.append(_run(seq, label, extra, "llm_ws", a.objective))
                print(f"{seq} {label}: TTFT {rows[-1]['ttft_s']:.4g} s", flush=True)
            for arch in wide:
                rows.append(_run(seq, "causal auto", ["--fusion", "auto"], arch, a.objective))
                print(f"{seq} causal auto on {Path(arch).stem}: TTFT {rows[-1]['ttft_s']:.4g} s", flush=True)
    (out / "rows.json").write_text(json.dumps(rows, indent=1))
    print(_md(rows))


if __name__ == "__main__":
    main()
