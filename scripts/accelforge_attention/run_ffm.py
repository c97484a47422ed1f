"""Run AccelForge 1.0.467's FFM mapper on the one-KV-group GQA attention (gqa_attention.yaml)
on tpu_v4i.yaml as the accelforge wheel ships it (site-packages/examples/arches).

usage: /tmp/af_venv/bin/python run_ffm.py --tokens 2048 --mode fused|unfused [--jobs 2]
       [--metric energy|latency|edp] [--max-fused-loops N] [--time-limit S] [--bits 8]
Writes results/<mode>_T<tokens>.json and .svg (the mapping) beside this script.
Unfused = AccelForge's own recipe (notebooks/tutorials/mapper.ipynb): MainMemory keeps All,
so every tensor incl. intermediates QK / QK_softmax is backed by DRAM.
"""
import argparse, json, os, sys, time
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
ap = argparse.ArgumentParser()
ap.add_argument("--tokens", type=int, default=2048)
ap.add_argument("--bits", type=int, default=8)
ap.add_argument("--mode", choices=["fused", "unfused"], default="fused")
ap.add_argument("--jobs", type=int, default=2)
ap.add_argument("--metric", default="energy")
ap.add_argument("--max-fused-loops", type=float, default=None)
ap.add_argument("--time-limit", type=float, default=None)
ap.add_argument("--tag", default="")
ap.add_argument("--glb-mib", type=float, default=None, help="override GlobalBuffer size (MiB); tpu_v4i default 128")
a = ap.parse_args()

import accelforge as af
from accelforge.frontend.mapper.metrics import Metrics

af.set_n_parallel_jobs(a.jobs, print_message=False)
ARCH = Path(af.__file__).resolve().parent.parent / "examples" / "arches" / "tpu_v4i.yaml"  # as the wheel ships it
spec = af.Spec.from_yaml(ARCH, HERE / "gqa_attention.yaml",
                         jinja_parse_data={"N_TOKENS": a.tokens, "BITS": a.bits})
if a.glb_mib is not None:
    for node in spec.arch.nodes:
        if node.name == "GlobalBuffer":
            node.size = int(a.glb_mib * 1024 * 1024 * 8)
    a.tag += f"_glb{a.glb_mib:g}MiB"
if a.mode == "unfused":
    for node in spec.arch.nodes:
        if isinstance(node, af.arch.Memory):
            node.tensors.keep = "All"
            break
spec.mapper.metrics = {"energy": Metrics.ENERGY, "latency": Metrics.LATENCY,
                       "edp": Metrics.ENERGY_DELAY_PRODUCT}[a.metric]
if a.max_fused_loops is not None:
    spec.mapper.max_fused_loops = a.max_fused_loops
if a.time_limit:
    spec.mapper.time_limit = a.time_limit

outdir = HERE / "results"; outdir.mkdir(exist_ok=True)
name = f"{a.mode}_T{a.tokens}_b{a.bits}_{a.metric}{a.tag}"
os.chdir(outdir)  # mapper may write mapping.svg into cwd
t0 = time.perf_counter()
res = spec.map_workload_to_arch(print_progress=False)
wall = time.perf_counter() - t0

def one(x):
    if hasattr(x, "iloc"): return float(x.iloc[0])
    if isinstance(x, (list, tuple)): return float(x[0])
    return float(x)

def flat(d):
    return {"|".join(str(p) for p in (k if isinstance(k, tuple) else (k,))): one(v) for k, v in d.items()}

out = {"name": name, "accelforge": af.__version__ if hasattr(af, "__version__") else None,
       "tokens": a.tokens, "bits": a.bits, "mode": a.mode, "metric": a.metric,
       "max_fused_loops": a.max_fused_loops, "time_limit": a.time_limit, "jobs": a.jobs,
       "wall_s": round(wall, 2), "n_mappings_in_result": len(res),
       "total_mappings": getattr(res, "total_mappings", None), "valid_mappings": getattr(res, "valid_mappings", None),
       "energy_J": one(res.energy()), "latency_s": one(res.latency()),
       "energy_by_einsum_component_tensor_action": flat(res.energy(per_einsum=True, per_component=True, per_tensor=True, per_action=True)),
       "energy_by_component": flat(res.energy(per_component=True)),
       "energy_by_einsum": flat(res.energy(per_einsum=True)),
       "actions_by_einsum_component_tensor_action": flat(res.actions(per_einsum=True, per_component=True, per_tensor=True)),
       "latency_by_einsum_component": flat(res.latency(per_einsum=True, per_component=True)),
       "latency_by_einsum": flat(res.latency(per_einsum=True)),
       "tensor_size_bits": {k: int(v) for k, v in res.per_tensor_size().items()},
       }
try:
    out["resource_usage"] = flat(res.resource_usage())
except Exception as e:
    out["resource_usage"] = repr(e)
# DRAM (MainMemory) traffic per tensor in bits (bits_per_action defaults to 1 bit)
dram = defaultdict(lambda: defaultdict(float))
for k, v in out["actions_by_einsum_component_tensor_action"].items():
    e, c, t, act = k.split("|")
    if c == "MainMemory":
        dram[t][act] += v
out["MainMemory_bits_per_tensor"] = {t: dict(d) for t, d in dram.items()}
m = res.mapping(0)

def compact(node, depth=0):
    """One line per LoopTree node (Reservation nodes omitted)."""
    tn = type(node).__name__
    kids = getattr(node, "nodes", None)
    if kids is not None and tn not in ("Storage", "Toll"):
        head = [] if tn == "Mapping" else ["  " * depth + tn]
        return head + [l for k in kids for l in compact(k, depth + (0 if tn == "Mapping" else 1))]
    if tn == "Reservation":
        return []
    if tn in ("Storage", "Toll"):
        return ["  " * depth + f"{tn} [{', '.join(node.tensors)}] in {node.component}"]
    if tn == "Compute":
        return ["  " * depth + f"Compute {node.einsum} on {node.component}"]
    try:
        return ["  " * depth + node.compact_str()]
    except Exception:
        return ["  " * depth + repr(node)[:200]]
try:
    out["mapping_str"] = "\n".join(compact(m))
except Exception as e:
    out["mapping_str"] = repr(e)
try:
    out["mapping_yaml"] = m.to_yaml() if hasattr(m, "to_yaml") else None
except Exception as e:
    out["mapping_yaml"] = repr(e)
(outdir / f"{name}.json").write_text(json.dumps(out, indent=1, default=str))
try:
    (outdir / f"{name}.svg").write_text(res[0].render())
except Exception as e:
    print("render failed", repr(e))
print(json.dumps({k: out[k] for k in ("name", "wall_s", "energy_J", "latency_s", "energy_by_component", "MainMemory_bits_per_tensor", "tensor_size_bits")}, indent=1))
print(out["mapping_str"])
