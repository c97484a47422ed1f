#!/usr/bin/env python3
"""Run GenZ (genz-llm) on the fixed comparison cases and write OUT.json.

Run in a venv of its own (python -m venv V && V/bin/pip install genz-llm==0.0.16): V/bin/python scripts/peers/genz_driver.py [OUT.json].
The records trimmed to the fields scripts/peers_llm.py reads are pinned in tests/data/peers_llm/genz.json.
"""
import json, os, sys, traceback, warnings
from importlib.metadata import version

warnings.filterwarnings("ignore")
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")

import numpy as np
from GenZ import prefill_moddeling, decode_moddeling, ModelConfig, System, Unit
from GenZ.analyse_model import simplify_df
from Systems.system_configs import system_configs

OUT = sys.argv[1] if len(sys.argv) > 1 else "genz.json"
PEER_VERSION = version("genz-llm")
GIB = 2 ** 30
MIB = 2 ** 20

# ---------------------------------------------------------------- models
LLAMA3_70B = ModelConfig(model="Llama-3-70B-custom",
                         vocab_size=128256, hidden_size=8192, intermediate_size=28672, num_ffi=2,
                         num_decoder_layers=80, num_attention_heads=64, num_key_value_heads=8,
                         head_dim=128, hidden_act="silu", max_model_len=8192)
MIXTRAL = ModelConfig(model="Mixtral-8x7B-custom",
                      vocab_size=32000, hidden_size=4096, intermediate_size=14336, num_ffi=2,
                      num_decoder_layers=32, num_attention_heads=32, num_key_value_heads=8,
                      head_dim=128, num_experts=8, expert_top_k=2, hidden_act="silu", max_model_len=32768)
MODELS = {"Llama-3-70B": LLAMA3_70B, "Mixtral-8x7B": MIXTRAL}

# ---------------------------------------------------------------- platforms
# GenZ units (GenZ/unit.py): Flops in TFLOPS (1e12), BW in "GB/s" = 2**30 B/s, memory in GB = 2**30 B,
# ICN_LL in microseconds. get_inference_system() defaults ICN_LL to 1 us when absent.
BUILTIN = dict(system_configs["A100_80GB_GPU"])
FORCED = {"Flops": 312, "Memory_BW": 2039e9 / GIB, "Memory_size": 80e9 / GIB,
          "ICN": 300e9 / GIB, "ICN_LL": 1.0, "real_values": True}
PLATFORMS = {"builtin_A100_80GB_GPU": BUILTIN, "forced_A100_SXM_brief": FORCED}


def platform_record(cfg, name):
    ll = cfg.get("ICN_LL", 1)
    return {
        "name": name, "genz_dict": cfg,
        "flops_per_s": cfg["Flops"] * 1e12,
        "mem_bw_bytes_per_s": cfg["Memory_BW"] * GIB,
        "mem_size_bytes": cfg["Memory_size"] * GIB,
        "interchip_link_bw_bytes_per_s": cfg["ICN"] * GIB,
        "interchip_link_latency_s": ll * 1e-6,
        "collective_fixed_start_latency_s": 5e-6,
        "note": "GenZ BW/size units are binary (2**30); ICN is one number used as the per-link BW in the ring formula",
    }


def no_capacity(cfg):
    c = dict(cfg)
    c["Memory_size"] = 1e9  # effectively disables the capacity check (GB)
    return c


# ---------------------------------------------------------------- helpers
def breakdown(model_df):
    u = Unit()
    df = simplify_df(model_df)  # rows multiplied by Repeat counts
    ct = float(df[f"Compute time ({u.unit_time})"].sum()) / 1e3
    mt = float(df[f"Memory time ({u.unit_time})"].sum()) / 1e3
    cm = float(df[f"Communication time ({u.unit_time})"].sum()) / 1e3
    lat = float(df[f"Latency ({u.unit_time})"].sum()) / 1e3
    roof = 0.0
    for _, r in df.iterrows():
        if r["Op Type"] != "Sync":
            roof += float(r[f"Latency ({u.unit_time})"]) / 1e3
    # collectives: list unique sync ops with per-instance sizes
    colls = {}
    mult = 1
    for i in range(len(model_df)):
        t = model_df.loc[i, "Op Type"]
        if t == "Repeat":
            mult *= model_df.loc[i, "Dimension"]
        elif t == "EndRepeat":
            mult /= model_df.loc[i, "Dimension"]
        elif t == "Sync":
            name = model_df.loc[i, "Layer Name"]
            dims = model_df.loc[i, "Dimension"]
            one = float(model_df.loc[i, f"Latency ({u.unit_time})"]) / 1e3
            elems = int(np.prod(dims)) if dims is not None else 0
            key = name
            if key not in colls:
                colls[key] = {"dims_elems": list(map(int, dims)) if dims is not None else None,
                              "message_bytes": elems * 2, "time_each_s": one, "count_total": 0}
            colls[key]["count_total"] += int(mult)
    return {"sum_compute_s": ct, "sum_memory_s": mt, "comm_s": cm, "latency_sum_s": lat,
            "roofline_ops_s": roof, "collectives": colls}


def memory(model, phase, batch, seq, tp, pp, ep, sysdict):
    """Memory via model_profilling=True summary (no capacity check)."""
    kw = dict(model=model, batch_size=batch, input_tokens=seq, system_name=no_capacity(sysdict), system_eff=1,
              bits="bf16", tensor_parallel=tp, pipeline_parallel=pp, expert_parallel=ep, model_profilling=True)
    if phase == "decode":
        _, st = decode_moddeling(output_tokens=0, Bb=1, **kw)
    else:
        _, st = prefill_moddeling(**kw)
    u = Unit()
    w = float(st[f"Total Weights ({u.unit_mem})"].values[0]) * MIB
    kv = float(st[f"KV Cache ({u.unit_mem})"].values[0]) * MIB
    unused = float(st[f"Unused Weights ({u.unit_mem})"].values[0]) * MIB
    onchip = float(st[f"On-chip Memory Footprint ({u.unit_mem})"].values[0]) * MIB
    # GenZ sums weights/KV over ALL pipeline stages (whole model is one op list); capacity check in
    # llm_prefill.py/llm_decode.py compares (weights+kv) with mem_size * pipeline_parallel.
    return {"genz_weights_bytes_all_stages": w, "genz_kv_bytes_all_stages": kv,
            "genz_unused_expert_weights_bytes": unused, "genz_max_single_op_footprint_bytes": onchip,
            "weights_per_chip_bytes": w / pp, "kv_cache_per_chip_bytes": kv / pp,
            "activations_per_chip_bytes": None,
            "memory_per_chip_bytes": (w + kv) / pp}


def run_case(model_name, phase, batch, seq, tp, pp, ep, plat_name, sysdict):
    model = MODELS[model_name]
    rec = {"peer": "GenZ (genz-llm)", "peer_version": PEER_VERSION, "model": model_name, "phase": phase,
           "batch": batch, "seq_or_context": seq, "tp": tp, "pp": pp, "ep": ep,
           "platform": platform_record(sysdict, plat_name),
           "efficiencies": {"compute_efficiency": 1, "memory_efficiency": 1, "comm_efficiency": 1,
                            "how": "system_eff=1 sets ceff=meff=1 (llm_prefill.py:32, llm_decode.py:35; consumed in operator_base.py:250,253); "
                                   "comm_efficiency: System default 1 (system.py:14), not settable via prefill_moddeling/decode_moddeling unless a System object is passed; used at operator_base.py:255"},
           "notes": []}
    kw = dict(model=model, batch_size=batch, input_tokens=seq, system_eff=1, bits="bf16",
              tensor_parallel=tp, pipeline_parallel=pp, expert_parallel=ep)
    try:
        rec.update(memory(model, phase, batch, seq, tp, pp, ep, sysdict))
    except Exception as e:
        rec["notes"].append(f"memory profiling failed: {type(e).__name__}: {e}")

    def call(sd):
        if phase == "decode":
            return decode_moddeling(output_tokens=0, Bb=1, system_name=sd, **kw)
        return prefill_moddeling(system_name=sd, **kw)

    try:
        out = call(sysdict)
    except ValueError as e:
        rec["error"] = f"ValueError: {str(e).strip()}"
        rec["notes"].append("GenZ refused (capacity check); figures below computed with capacity check disabled "
                            "(Memory_size set huge, everything else unchanged)")
        out = call(no_capacity(sysdict))
        rec["figures_with_capacity_check_disabled"] = True
    lat_s = float(out["Latency"]) / 1e3
    thr = float(out["Throughput"])
    if phase == "prefill":
        rec["ttft_s"] = lat_s
    else:
        rec["time_per_token_s"] = lat_s
    rec["throughput_tokens_per_s"] = thr
    if pp > 1 and "genz_kv_bytes_all_stages" in rec:
        ub0 = max(batch // pp, 1)
        rec["kv_cache_per_chip_full_batch_bytes_derived"] = rec["genz_kv_bytes_all_stages"] * (batch / ub0) / pp
        rec["notes"].append("GenZ sizes KV with the PP micro-batch (batch//pp); kv_cache_per_chip_full_batch_bytes_derived "
                            "rescales it to the full batch (derived by this script, not a GenZ output)")
    if pp > 1:
        ub = max(batch // pp, 1)
        nmb = batch // ub
        rec["pp_micro_batch"] = ub
        rec["pp_num_micro_batches"] = nmb
        rec["pp_total_latency_all_microbatches_s"] = batch / thr
        rec["notes"].append("Latency reported = one micro-batch (size batch//pp) through all stages "
                            "(sum of stage times + message passes); throughput uses (nmb-1)*L/pp + L")
    bd = breakdown(out["model_df"])
    rec.update({"compute_s": bd["sum_compute_s"], "memory_s": bd["sum_memory_s"], "comm_s": bd["comm_s"],
                "non_comm_roofline_s": bd["roofline_ops_s"], "collectives": bd["collectives"]})
    rec["runtime_breakdown_ms"] = {k: float(v) for k, v in out["Runtime_breakdown"].to_dict().items()}
    return rec


def cases():
    out = []
    par = [(1, 1, 1), (2, 1, 1), (4, 1, 1), (8, 1, 1), (1, 2, 1), (1, 4, 1), (2, 2, 1), (4, 2, 1)]
    for plat in PLATFORMS:
        for tp, pp, ep in par:
            out.append(("Llama-3-70B", "prefill", 1, 2048, tp, pp, ep, plat))
            out.append(("Llama-3-70B", "decode", 32, 4096, tp, pp, ep, plat))
            out.append(("Llama-3-70B", "decode", 1, 4096, tp, pp, ep, plat))
        for tp, pp, ep in [(1, 1, 1), (1, 1, 2), (1, 1, 4), (1, 1, 8), (2, 1, 1)]:
            out.append(("Mixtral-8x7B", "prefill", 1, 2048, tp, pp, ep, plat))
            out.append(("Mixtral-8x7B", "decode", 32, 4096, tp, pp, ep, plat))
            out.append(("Mixtral-8x7B", "decode", 1, 4096, tp, pp, ep, plat))
    return out


def main():
    recs = []
    for c in cases():
        m, ph, b, s, tp, pp, ep, plat = c
        try:
            r = run_case(m, ph, b, s, tp, pp, ep, plat, PLATFORMS[plat])
        except Exception as e:
            r = {"peer": "GenZ (genz-llm)", "peer_version": PEER_VERSION, "model": m, "phase": ph, "batch": b,
                 "seq_or_context": s, "tp": tp, "pp": pp, "ep": ep, "platform": {"name": plat},
                 "error": f"{type(e).__name__}: {e}", "traceback": traceback.format_exc()}
        recs.append(r)
        key = "ttft_s" if ph == "prefill" else "time_per_token_s"
        print(f"{plat:24s} {m:13s} {ph:7s} b={b:<3d} tp={tp} pp={pp} ep={ep} "
              f"{key}={r.get(key)} mem/chip={r.get('memory_per_chip_bytes')} comm={r.get('comm_s')} "
              f"{'ERR ' + r['error'][:80] if 'error' in r else ''}", flush=True)
        with open(OUT, "w") as f:
            json.dump(recs, f, indent=1, default=float)
    print("wrote", OUT)


if __name__ == "__main__":
    main()
