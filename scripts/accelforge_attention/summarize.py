"""Summarize results/*.json from run_ffm.py into a table (energies pJ, DRAM traffic bytes)."""
import json, sys, glob
from collections import defaultdict
files = sys.argv[1:] or sorted(glob.glob(str(__import__("pathlib").Path(__file__).resolve().parent / "results" / "*.json")))
TENSORS = ["Q", "K", "V", "QK", "QK_softmax", "AV"]
for f in files:
    d = json.load(open(f))
    print(f"== {d['name']}  (mapper wall {d['wall_s']} s, tokens {d['tokens']}, {d['bits']}-bit, metric {d['metric']})")
    print(f"   total energy {d['energy_J']*1e12:.6g} pJ ; latency {d['latency_s']*1e6:.6g} us (sum over Einsums of per-Einsum max-component latency)")
    dm = d["MainMemory_bits_per_tensor"]
    tot_r = tot_w = 0
    for t in TENSORS:
        r = dm.get(t, {}).get("read", 0.0); w = dm.get(t, {}).get("write", 0.0)
        tot_r += r; tot_w += w
        print(f"   DRAM {t:11s} read {r/8:>14,.0f} B  write {w/8:>14,.0f} B")
    print(f"   DRAM total    read {tot_r/8:>14,.0f} B  write {tot_w/8:>14,.0f} B")
    print("   energy by component (pJ): " + ", ".join(f"{k} {v*1e12:.6g}" for k, v in d["energy_by_component"].items()))
    print("   energy by einsum (pJ): " + ", ".join(f"{k} {v*1e12:.6g}" for k, v in d["energy_by_einsum"].items()))
    byct = defaultdict(float)
    for k, v in d["energy_by_einsum_component_tensor_action"].items():
        e, c, t, a = k.split("|"); byct[(c, t)] += v
    print("   energy by component|tensor (pJ): " + ", ".join(f"{c}|{t} {v*1e12:.6g}" for (c, t), v in byct.items() if v))
    print("   latency by einsum (us): " + ", ".join(f"{k} {v*1e6:.6g}" for k, v in d["latency_by_einsum"].items()))
    print("   latency by einsum|component (us): " + ", ".join(f"{k} {v*1e6:.6g}" for k, v in d["latency_by_einsum_component"].items()))
    print("   resource usage (fraction of capacity): " + str(d["resource_usage"]))
    print("   mapping:\n      " + d["mapping_str"].replace("\n", "\n      "))
