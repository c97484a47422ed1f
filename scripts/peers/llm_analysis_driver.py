#!/usr/bin/env python3
"""Run llm-analysis (cli-ai / Cheng Li) on the fixed comparison cases; write OUT.json.

Run in a venv of its own (python -m venv V && V/bin/pip install llm-analysis==0.2.2): V/bin/python scripts/peers/llm_analysis_driver.py [OUT.json].
The records trimmed to the fields scripts/peers_llm.py reads are pinned in tests/data/peers_llm/llm_analysis.json.

The LLMAnalysis class is used directly (same code path as llm_analysis.analysis.infer, analysis.py:2309-2349)
because infer() cannot take expert parallelism (ep_size) or a custom GPUConfig object. One cross-check call of
infer() with a model-config JSON file and the built-in GPU name is made and compared.
"""
import json, logging, os, sys, traceback, dataclasses
from importlib.metadata import version

os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
from llm_analysis.analysis import LLMAnalysis, infer
from llm_analysis.config import (ModelConfig, GPUConfig, ParallelismConfig, get_gpu_config_by_name,
                                 get_dtype_config_by_name)
from llm_analysis.logger import logger

logger.setLevel(logging.ERROR)
OUT = sys.argv[1] if len(sys.argv) > 1 else "llm_analysis.json"
PEER_VERSION = version("llm-analysis")

# ---------------------------------------------------------------- models
# llm-analysis MLP = 2 matrices h x ffn_embed_dim (analysis.py:285). SwiGLU's 3 matrices h x 28672 are represented
# as ffn_embed_dim = 1.5*28672 = 43008 ("swiglu_equiv"), which gives the right parameter count / weight bytes.
# The MLP FLOPs are hard-coded 16*b*s*h^2 (analysis.py:913) and ignore ffn_embed_dim either way.
def llama(variant):
    ffn = 28672 if variant == "literal" else 43008
    return ModelConfig(name=f"Llama-3-70B-{variant}", num_layers=80, n_head=64, hidden_dim=8192, vocab_size=128256,
                       max_seq_len=8192, num_key_value_heads=8, ffn_embed_dim=ffn, expansion_ratio=ffn / 8192,
                       model_type="llama")


def mixtral(variant):
    ffn = 14336 if variant == "literal" else 21504
    return ModelConfig(name=f"Mixtral-8x7B-{variant}", num_layers=32, n_head=32, hidden_dim=4096, vocab_size=32000,
                       max_seq_len=32768, num_key_value_heads=8, ffn_embed_dim=ffn, expansion_ratio=ffn / 4096,
                       model_type="mixtral", moe_num_experts=8, moe_top_k=2)


MODELS = {"Llama-3-70B": llama, "Mixtral-8x7B": mixtral}

# ---------------------------------------------------------------- GPUs
BUILTIN = get_gpu_config_by_name("a100-sxm-80gb")
FORCED = dataclasses.replace(BUILTIN, name="a100-sxm-80gb-brief", mem_per_GPU_in_GB=80e9 / 2 ** 30)
GPUS = {"builtin_a100-sxm-80gb": BUILTIN, "forced_A100_SXM_brief": FORCED}
DTYPE = get_dtype_config_by_name("w16a16e16")


def gpu_record(g, name):
    return {"name": name, "llm_analysis_gpu_config": dataclasses.asdict(g),
            "flops_per_s": g.peak_fp16_TFLOPS * 1e12,
            "mem_bw_bytes_per_s": g.hbm_bandwidth_in_GB_per_sec * 1e9,
            "mem_size_bytes_for_capacity_check": g.mem_per_GPU_in_GB * 1024 ** 3,
            "interchip_link_bw_bytes_per_s": g.intra_node_bandwidth_in_GB_per_sec * 1e9,
            "link_latency_s": g.intra_node_min_message_latency,
            "note": "capacity uses mem_per_GPU_in_GB*1024**3 (analysis.py:1485); BW/FLOPS decimal (1e9/1e12); "
                    "link latency is a floor max(t_AR, 8us), not an additive term (analysis.py:1161-1164)"}


def run_one(model_cfg, gpu, tp, pp, ep, batch, seq_len, gen):
    par = ParallelismConfig(tp_size=tp, pp_size=pp, ep_size=ep, sp_size=tp)
    a = LLMAnalysis(model_cfg, gpu, DTYPE, par, flops_efficiency=1, hbm_memory_efficiency=1,
                    intra_node_memory_efficiency=1, inter_node_memory_efficiency=1)
    s = a.inference(batch_size_per_gpu=batch, seq_len=seq_len, num_tokens_to_generate=gen, use_kv_cache=True)
    return a, s


def run_case(model_name, variant, phase, batch, ctx, tp, pp, ep, gname):
    gpu = GPUS[gname]
    mc = MODELS[model_name](variant)
    rec = {"peer": "llm-analysis", "peer_version": PEER_VERSION, "model": model_name, "model_variant": variant,
           "model_config": dataclasses.asdict(mc), "phase": phase, "batch": batch, "seq_or_context": ctx,
           "tp": tp, "pp": pp, "ep": ep, "platform": gpu_record(gpu, gname),
           "efficiencies": {"flops_efficiency": 1, "hbm_memory_efficiency": 1, "intra_node_memory_efficiency": 1,
                            "inter_node_memory_efficiency": 1,
                            "note": "TP all-reduce uses gpu_config.intra_node_bandwidth directly, so "
                                    "intra_node_memory_efficiency is not applied to it (analysis.py:1157-1159)"},
           "notes": []}
    if phase == "prefill":
        seq_len, gen = ctx, 1
    else:
        seq_len, gen = ctx - 1, 1  # KV cache sized for seq_len+gen = ctx tokens (analysis.py:1565-1569)
        rec["notes"].append(f"decode run as seq_len={seq_len}, num_tokens_to_generate=1 -> KV cache of {ctx} tokens; "
                            "TPOT = summary['decode_latency']")
    try:
        a, s = run_one(mc, gpu, tp, pp, ep, batch, seq_len, gen)
    except AssertionError as e:
        rec["error"] = f"AssertionError: {e}"
        if phase == "decode" and "prefill activation" in str(e):
            rec["notes"].append("this assert is about the PREFILL of the seq_len-token prompt that inference() always "
                                "models too (logits activation vocab*b*s*2/tp, analysis.py:1525-1540); it is not a "
                                "decode-capacity verdict")
        rec["notes"].append("llm-analysis refused (capacity assert); figures computed with mem_per_GPU_in_GB=1e6, "
                            "everything else unchanged")
        a, s = run_one(mc, dataclasses.replace(gpu, mem_per_GPU_in_GB=1e6), tp, pp, ep, batch, seq_len, gen)
        rec["figures_with_capacity_check_disabled"] = True
    p = "prefill_" if phase == "prefill" else "decode_"
    lat = s[p + "latency"]
    if phase == "prefill":
        rec["ttft_s"] = lat
        act = s["prefill_activation_memory_per_gpu"]
    else:
        rec["time_per_token_s"] = lat
        act = s["decode_activation_memory_per_gpu"]
    w = s["weight_memory_per_gpu"]
    kv = s["kv_cache_memory_per_gpu"]
    rec.update({"weights_per_chip_bytes": w, "kv_cache_per_chip_bytes": kv, "activations_per_chip_bytes": act,
                "memory_per_chip_bytes": w + kv + act,
                "weight_memory_embedding_per_gpu": s["weight_memory_embedding_per_gpu"]})
    if phase == "prefill":
        rec["notes"].append("kv_cache_per_chip_bytes is for seq_len+1 tokens (llm-analysis needs >=1 generated token)")
    # breakdown
    comm = s[p + "latency_fwd_tp_comm"]
    L = mc.num_layers // pp
    emb_comm = a.get_latency_fwd_per_layer_tp_comm(batch, 1 if phase == "decode" else seq_len,
                                                   DTYPE.embedding_bits / 8)
    bs_seq = 1 if phase == "decode" else seq_len
    tflops = a.get_TFLOPS_per_gpu() * 1e12
    bw = a.get_gpu_hbm_bandwidth() * 1e9
    comp_attn = a.get_num_flops_fwd_per_layer_attn(batch, bs_seq) / tp / tflops
    comp_mlp = a.get_num_flops_fwd_per_layer_mlp(batch, bs_seq) / tp / tflops
    mem_attn = (a.get_num_params_per_layer_attn() * 2 / tp
                + a.get_activation_memory_per_layer_attn(batch, bs_seq, True)) / bw
    mem_mlp = (a.get_num_params_per_layer_mlp() * 2 / tp
               + a.get_activation_memory_per_layer_mlp(batch, bs_seq, True)) / bw
    out_emb = s[p + "latency_fwd_output_embedding_loss"]
    in_emb = s[p + "latency_fwd_input_embedding"]
    rec.update({
        "comm_s": comm + emb_comm,
        "comm_breakdown": {"tp_allreduce_per_layer_count": 2 if tp > 1 else 0,
                           "tp_allreduce_each_s": a.get_latency_fwd_per_layer_tp_comm(batch, bs_seq, 2),
                           "tp_allreduce_message_bytes": batch * bs_seq * mc.hidden_dim * 2,
                           "layers_counted": L, "layers_comm_s": comm, "input_embedding_allreduce_s": emb_comm,
                           "pp_send_recv_s": 0.0},
        "compute_s": (comp_attn + comp_mlp) * L + out_emb,
        "memory_s": (mem_attn + mem_mlp) * L + s[p + "latency_fwd_layernorm"] + (in_emb - emb_comm)
                    + (s.get("kv_cache_latency", 0) if phase == "decode" else 0),
        "latency_breakdown_s": {k: v for k, v in s.items() if k.startswith(p + "latency_fwd")},
        "kv_cache_latency_s": s["kv_cache_latency"] if phase == "decode" else None,
        "num_flops_fwd_total": s[p + "num_flops_fwd_total"],
    })
    if pp > 1:
        rec["notes"].append(f"PP: latency counts only num_layers/pp = {L} layers (one stage) + embeddings; "
                            "no PP send/recv, no bubble (analysis.py:1303-1317)")
    if ep > 1:
        rec["notes"].append("EP: ep_size only divides MLP weight memory (analysis.py:376-380); latency ignores EP "
                            "(MLP weight read = all experts / tp, analysis.py:1080-1083; FLOPs 16*b*s*h^2), no all-to-all")
    return rec


def cases():
    out = []
    par = [(1, 1, 1), (2, 1, 1), (4, 1, 1), (8, 1, 1), (1, 2, 1), (1, 4, 1), (2, 2, 1), (4, 2, 1)]
    for g in GPUS:
        for variant in ["swiglu_equiv", "literal"]:
            for tp, pp, ep in par:
                for ph, b, s in [("prefill", 1, 2048), ("decode", 32, 4096), ("decode", 1, 4096)]:
                    out.append(("Llama-3-70B", variant, ph, b, s, tp, pp, ep, g))
            for tp, pp, ep in [(1, 1, 1), (1, 1, 2), (1, 1, 4), (1, 1, 8), (2, 1, 1)]:
                for ph, b, s in [("prefill", 1, 2048), ("decode", 32, 4096), ("decode", 1, 4096)]:
                    out.append(("Mixtral-8x7B", variant, ph, b, s, tp, pp, ep, g))
    return out


def infer_crosscheck():
    """Call the public infer() entry point once (model from a JSON file, built-in GPU name)."""
    path = os.path.join(os.path.dirname(os.path.abspath(OUT)), "llama3_70b_swiglu_equiv_llm_analysis.json")
    with open(path, "w") as f:
        json.dump(dataclasses.asdict(llama("swiglu_equiv")), f, indent=1)
    s = infer(model_name=path, gpu_name="a100-sxm-80gb", dtype_name="w16a16e16", log_level="ERROR",
              batch_size_per_gpu=1, tp_size=4, pp_size=1, seq_len=2048, num_tokens_to_generate=1,
              flops_efficiency=1, hbm_memory_efficiency=1)
    return {"call": f"infer(model_name='{path}', gpu_name='a100-sxm-80gb', dtype_name='w16a16e16', "
                    "batch_size_per_gpu=1, tp_size=4, pp_size=1, seq_len=2048, num_tokens_to_generate=1, "
                    "flops_efficiency=1, hbm_memory_efficiency=1)",
            "prefill_latency": s["prefill_latency"], "decode_latency": s["decode_latency"],
            "weight_memory_per_gpu": s["weight_memory_per_gpu"]}


def main():
    recs = []
    try:
        xc = infer_crosscheck()
        print("infer() cross-check:", xc)
    except Exception as e:
        xc = {"error": f"{type(e).__name__}: {e}"}
    for c in cases():
        m, v, ph, b, s, tp, pp, ep, g = c
        try:
            r = run_case(m, v, ph, b, s, tp, pp, ep, g)
        except Exception as e:
            r = {"peer": "llm-analysis", "peer_version": PEER_VERSION, "model": m, "model_variant": v, "phase": ph,
                 "batch": b, "seq_or_context": s, "tp": tp, "pp": pp, "ep": ep, "platform": {"name": g},
                 "error": f"{type(e).__name__}: {e}", "traceback": traceback.format_exc()}
        recs.append(r)
        key = "ttft_s" if ph == "prefill" else "time_per_token_s"
        print(f"{g:22s} {m:12s} {v:12s} {ph:7s} b={b:<3d} tp={tp} pp={pp} ep={ep} {key}={r.get(key)} "
              f"mem/chip={r.get('memory_per_chip_bytes')} comm={r.get('comm_s')} "
              f"{'ERR ' + r['error'][:70] if 'error' in r else ''}", flush=True)
        with open(OUT, "w") as f:
            json.dump(recs, f, indent=1, default=float)
    with open(os.path.join(os.path.dirname(os.path.abspath(OUT)), "llm_analysis_infer_crosscheck.json"), "w") as f:
        json.dump(xc, f, indent=1, default=float)
    print("wrote", OUT)


if __name__ == "__main__":
    main()
