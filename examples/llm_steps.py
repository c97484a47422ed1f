"""LLM inference on an accelerator from Python: a Llama-3-8B decode step and a prefill on the LLM
template llm_ws (128 x 128 weight-stationary array, HBM2E), then a small architecture search over
the array and the DRAM kind, every design mapped or pruned by bound, and the fastest design per
figure. The steps are W8A8 (INT8 weights and activations, the datapath of llm_ws): the bfloat16
checkpoint's own 16 bits would not fit the template's single 16 GiB HBM2E stack at 0.9 usable.

    python examples/llm_steps.py [OUT_DIR]        # default: a new temporary directory

The same steps from the command line:
    sweep map --network llama3_8b --phase decode --batch 1 --context 2048 --weight-bits 8 --act-bits 8 \\
        --arch llm_ws --mapper loma --param lpf_limit=4 --json
    sweep map --network llama3_8b --phase prefill --seq 512 --weight-bits 8 --act-bits 8 \\
        --arch llm_ws --mapper loma --param lpf_limit=4 --json
"""

import sys
import tempfile
from pathlib import Path

from sweep import api

fast = {"lpf_limit": 4}                                     # LOMA over 4 merged loops: seconds
w8a8 = {"weight_bits": 8, "act_bits": 8}                   # attention is fused by default
decode = api.map_step("llama3_8b", "llm_ws", "loma", phase="decode", batch=1, context=2048, **w8a8,
                      params=fast)
print(f"decode, batch 1, 2,048 tokens of context: {decode.llm['time_per_token_s'] * 1e3:.6g} ms per token, "
      f"{decode.llm['energy_per_token_j'] * 1e3:.6g} mJ per token")
prefill = api.map_step("llama3_8b", "llm_ws", "loma", phase="prefill", seq=512, **w8a8, params=fast)
print(f"prefill of 512 tokens: time to first token {prefill.llm['latency_s'] * 1e3:.6g} ms")

campaign = {
    "name": "tiny_llm_search",
    "networks": [{"model": "llama3_8b", "phase": "decode", "batch": 1, "context": 2048, **w8a8},
                 {"model": "llama3_8b", "phase": "prefill", "seq": 512, **w8a8}],
    "objectives": ["latency"],
    "architectures": {"kind": "loopnest", "template": "llm_ws",
                      "grid": {"array.D1": [64, 128], "dram": ["lpddr5", "ddr5", "hbm3"], "dram_units": [1, 2],
                               "memory.unified_buffer.size_kib": [4096, 65536]}},
    "search": {"sampler": "grid", "prune": "bound", "objectives": ["time_per_token_s", "ttft_s"],
               "batch": 1},                                 # one design per round: each round prunes
    "run": {"designs_per_task": 1},
    "mappers": [{"name": "loma", "params": fast}],
}
out = sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp(prefix="llm_steps_")
run = api.run_campaign(campaign, output=out, executor="local")
print(f"results: {Path(run.output).resolve()}")
totals = api.load_results(run.output).totals               # one row per (design, step)
mapped = totals[totals["status"] == "ok"]
def designs(status):
    return totals.loc[totals["status"] == status, "design_id"].nunique()


print(f"{totals['design_id'].nunique()} designs: {designs('ok')} mapped, {designs('pruned')} pruned by bound, "
      f"{designs('infeasible')} on which the model does not fit the DRAM")
for figure in ("time_per_token_s", "ttft_s"):
    best = mapped.dropna(subset=[figure]).sort_values([figure, "area_mm2"]).iloc[0]
    print(f"fastest by {figure}: {best['design_id']} (array.D1 {best['array.D1']}, {best['dram']}) "
          f"{best[figure] * 1e3:.6g} ms, {best['area_mm2']:.4g} mm^2")
