"""Run Vidur (microsoft/vidur, MLSys'24) on a serving load and pin what it did: every request's
lengths, arrival, TTFT, E2E and time per output token, every batch it formed with its execution
time, and the A100 kernel times of the shipped Llama-3-8B profile (`mlp.csv`, TP 1) at a few token
counts: the inputs and outputs `scripts/serving_vidur.py` compares with ours. Standard library
only; Vidur runs in its own virtual environment (its requirements.txt), from its repository.

    python scripts/peers/vidur_driver.py --vidur PATH/TO/vidur --python PATH/TO/vidur-venv/bin/python \\
        --attention PATH/TO/attention.csv --out tests/data/peers_serving/vidur_sarathi_conv.json

The settings (Vidur's flags, `vidur/config/config.py`): Llama-3-8B on one A100 (TP 1), the Sarathi
scheduler (chunked prefill: running decodes first, then partial prefills, then new requests, the
chunk budget counting the decodes; the closest of Vidur's schedulers to vLLM's V1) with chunk size
2,048 and batch cap 256, blocks of 16 tokens, 300 requests of the Azure conversation trace's
lengths (Vidur's `splitwise_conv.csv`, shuffled with seed 42, at most 4,096 tokens each) at Poisson
arrivals of 2 req/s (seed 42), Vidur's random-forest execution-time predictor on its shipped A100
profiles, its CPU overhead not modelled (its default).
"""

from __future__ import annotations

import argparse
import csv
import glob
import json
import os
import subprocess
import sys
import time

OPS = ("attn_pre_proj", "attn_post_proj", "attn_rope", "mlp_up_proj", "mlp_act", "mlp_down_proj", "input_layernorm",
       "post_attention_layernorm", "add", "emb")
TOKENS = (1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048)


def flags(out: str, attention: str, cache: str) -> list[str]:
    return ["--seed", "42", "--replica_config_device", "a100", "--replica_config_network_device", "a100_pairwise_nvlink",
            "--replica_config_model_name", "meta-llama/Meta-Llama-3-8B", "--cluster_config_num_replicas", "1",
            "--replica_config_tensor_parallel_size", "1", "--replica_config_num_pipeline_stages", "1",
            "--replica_scheduler_config_type", "sarathi", "--sarathi_scheduler_config_batch_size_cap", "256",
            "--sarathi_scheduler_config_block_size", "16", "--sarathi_scheduler_config_chunk_size", "2048",
            "--request_generator_config_type", "synthetic", "--synthetic_request_generator_config_num_requests", "300",
            "--synthetic_request_generator_config_seed", "42", "--length_generator_config_type", "trace",
            "--trace_request_length_generator_config_trace_file", "./data/processed_traces/splitwise_conv.csv",
            "--trace_request_length_generator_config_max_tokens", "4096",
            "--trace_request_length_generator_config_seed", "42", "--interval_generator_config_type", "poisson",
            "--poisson_request_interval_generator_config_qps", "2.0", "--poisson_request_interval_generator_config_seed",
            "42", "--execution_time_predictor_config_type", "random_forrest",
            "--random_forrest_execution_time_predictor_config_attention_input_file", attention,
            "--random_forrest_execution_time_predictor_config_prediction_max_prefill_chunk_size", "4096",
            "--random_forrest_execution_time_predictor_config_prediction_max_batch_size", "256",
            "--random_forrest_execution_time_predictor_config_prediction_max_tokens_per_request", "4096",
            "--metrics_config_output_dir", out, "--metrics_config_cache_dir", cache, "--no-metrics_config_store_plots",
            "--metrics_config_keep_individual_batch_metrics"]


def read(path: str) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--vidur", required=True, help="Vidur's repository (its data/ with the shipped profiles)")
    ap.add_argument("--python", default=sys.executable, help="the Python of Vidur's virtual environment")
    ap.add_argument("--attention", help="the A100 Llama-3-8B attention profile (default: the repository's)")
    ap.add_argument("--run", help="an earlier run's output directory to read instead of running Vidur")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    vidur = os.path.abspath(a.vidur)
    mlp = os.path.join(vidur, "data/profiling/compute/a100/meta-llama/Meta-Llama-3-8B/mlp.csv")
    attention = a.attention or os.path.join(vidur, "data/profiling/compute/a100/meta-llama/Meta-Llama-3-8B/attention.csv")
    run_dir, wall = a.run, None
    if run_dir is None:
        out = os.path.abspath(a.out + ".vidur_run")
        t = time.perf_counter()
        subprocess.run([a.python, "-m", "vidur.main", *flags(out, os.path.abspath(attention), out + "_cache")],
                       cwd=vidur, check=True, env={**os.environ, "WANDB_MODE": "disabled"})
        wall = time.perf_counter() - t
        run_dir = sorted(glob.glob(os.path.join(out, "*")))[-1]
    reqs = read(os.path.join(run_dir, "request_metrics.csv"))
    batches = read(os.path.join(run_dir, "batch_metrics.csv"))
    t, arrival = 0.0, []
    for r in reqs:   # arrivals from the inter-arrival delays (the first is empty: 0)
        t += float(r["request_inter_arrival_delay"] or 0.0)
        arrival.append(t)
    kernels = {}
    for row in read(mlp):
        n = int(float(row["num_tokens"]))
        if int(float(row["num_tensor_parallel_workers"])) == 1 and n in TOKENS:
            kernels[str(n)] = {op: float(row[f"time_stats.{op}.median"]) for op in OPS}
    git = subprocess.run(["git", "-C", vidur, "log", "-1", "--format=%H %cs"], capture_output=True, text=True).stdout
    doc = {"source": f"microsoft/vidur {git.strip()}", "settings": " ".join(flags("OUT", os.path.basename(attention), "CACHE")),
           "attention_profile": os.path.basename(attention), "vidur_wall_s": wall,
           "requests": {"arrival_s": arrival,
                        "prefill_tokens": [int(r["request_num_prefill_tokens"]) for r in reqs],
                        "decode_tokens": [int(r["request_num_decode_tokens"]) for r in reqs],
                        "ttft_s": [float(r["prefill_e2e_time"]) for r in reqs],
                        "e2e_s": [float(r["request_e2e_time"]) for r in reqs],
                        "tpot_s": [float(r["decode_time_execution_plus_preemption_normalized"]) for r in reqs],
                        "restarts": [int(r["request_num_restarts"]) for r in reqs]},
           "batches": {k: [float(b[c]) for b in batches] for k, c in
                       (("tokens", "batch_num_tokens"), ("prefill_tokens", "batch_num_prefill_tokens"),
                        ("decode_tokens", "batch_num_decode_tokens"), ("size", "batch_size"),
                        ("time_s", "batch_execution_time"))},
           "kernels_ms_per_layer": kernels}
    with open(a.out, "w") as f:
        json.dump(doc, f)
    print(f"{a.out}: {len(reqs)} requests, {len(batches)} batches" + (f", Vidur ran {wall:.0f} s" if wall else ""))


if __name__ == "__main__":
    main()
