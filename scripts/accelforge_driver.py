"""AccelForge's side of scripts/compare_accelforge.py: run in AccelForge's own Python (3.12 venv).

Reads one JSON request on stdin, writes one JSON object per line on stdout. Needs only the
standard library and ``accelforge`` (PyPI); nothing of dse-sweep is imported (our Python and
AccelForge's are different interpreters).

Request::

    {"arch": {"name": str, "mac_pj": float, "array": {"D1": 14, ...},
              "memories": [ {"name", "size_bits" (null: unbounded), "operands": ["I", "O"],
                             "read_pj", "write_pj", "word_bits", "private": bool,
                             "shared_port": bool, "read_bw", "write_bw"}, ... ]   # outermost first
              },
     "bits": {"W": 8, "I": 8, "O": 16, "O_mem": {"dram": 8}},  # O_mem: O's bits per memory
     "evaluate": [ {"name", "layer": {K, C, OY, OX, FY, FX, B, SY, SX, DY, DX},
                    "spatial": {"D1": [["OX", 14]], ...},        # fitted to the layer
                    "temporal": [["OX", 2], ...],                # innermost first
                    "boundaries": {"W": [...], "I": [...], "O": [...]}}, ... ],
     "search": [ {"name", "layer": {...}, "time_limit_s": float|null, "spatial": {...}|null} ],
     "dump": "dir" | null}

Output lines: ``{"kind": "evaluate"|"search", "name", "energy_pj", "latency_cycles",
"energy": {"<tensor>|<component>|<action>": pJ}, "actions": {...}, "latency": {component: cycles},
"mapping_yaml": str, "wall_s": float}``; AccelForge's energies are in the units given (pJ here:
each action's energy is our pJ per word access), latencies in cycles (each ``total_latency``
expression counts one cycle per word access at a memory port, one per MAC at a PE).

Tensor names: ``weight`` (W), ``input`` (I), ``output`` (O); rank variables the lower-case loop
dims (k, c, oy, ox, fy, fx, b); the input's ranks IY = SY oy + DY fy, IX = SX ox + DX fx.
"""

from __future__ import annotations

import json
import math
import os
import sys
import tempfile
import time
from pathlib import Path

TENSOR = {"W": "weight", "I": "input", "O": "output"}
RELEVANT = {"W": {"K", "C", "FY", "FX"}, "I": {"B", "C", "OY", "OX", "FY", "FX"}, "O": {"B", "K", "OY", "OX"}}
DIMS = ("B", "K", "C", "OY", "OX", "FY", "FX")
PE = "PE"
MAC = "MAC"


def _num(x: float) -> str:
    return repr(float(x)) if not float(x).is_integer() else str(int(x))


def arch_yaml(arch: dict, bits: dict, fixed_spatial: bool = True) -> str:
    """AccelForge architecture YAML: the shared memories outermost first, a Container ``PE``
    with one spatial fanout per array dim, the per-PE memories, the MAC. Each memory's actions
    cost our pJ per word (bits_per_action = word_bits); total_latency in cycles: one word per
    cycle per port (a shared port adds reads and writes, separate ports take the larger)."""
    out = ["arch:", "  nodes:"]
    mems = arch["memories"]
    shared = [m for m in mems if not m["private"]]
    private = [m for m in mems if m["private"]]
    if any(m["private"] for m in mems[: len(shared)]) or any(not m["private"] for m in mems[len(shared):]):
        raise SystemExit("driver: shared memories must all sit above the per-PE ones")
    top = mems[0]["name"]

    def mem(m: dict) -> None:
        keep = " | ".join(TENSOR[o] for o in m["operands"])
        lat = ("sum(a.n_calls / a.throughput for a in actions)" if m["shared_port"]
               else "max(a.n_calls / a.throughput for a in actions)")
        bpv = {}
        if "O" in m["operands"]:
            bpv["output"] = bits.get("O_mem", {}).get(m["name"], bits["O"])
        rt = m.get("read_bw", m["word_bits"]) / m["word_bits"]     # actions (words) per cycle
        wt = m.get("write_bw", m["word_bits"]) / m["word_bits"]
        out.extend([
            "  - !Memory",
            f"    name: {m['name']}",
            f"    size: {'inf' if m['size_bits'] is None else int(m['size_bits'])}",
            "    leak_power: 0",
            "    area: 0",
            f"    tensors: {{keep: {'All' if m['name'] == top else keep}}}",
            f"    bits_per_value: {{{', '.join(f'{k}: {v}' for k, v in bpv.items())}}}",
            f"    total_latency: \"{lat}\"",
            "    actions:",
            f"    - {{name: read, energy: {_num(m['read_pj'])}, bits_per_action: {m['word_bits']}, throughput: {_num(rt)}}}",
            f"    - {{name: write, energy: {_num(m['write_pj'])}, bits_per_action: {m['word_bits']}, throughput: {_num(wt)}}}",
        ])

    for m in shared:
        mem(m)
    out.extend(["  - !Container", f"    name: {PE}", "    spatial:"])
    for a, n in arch["array"].items():
        out.append(f"    - {{name: {a}, fanout: {int(n)}}}")
    for m in private:
        mem(m)
    out.extend(["  - !Compute", f"    name: {MAC}", "    leak_power: 0", "    area: 0",
                "    total_latency: \"sum(a.n_calls for a in actions)\"",
                "    actions:", f"    - {{name: compute, energy: {_num(arch['mac_pj'])}, throughput: 1}}"])
    return "\n".join(out) + "\n"


def workload_yaml(layer: dict, bits: dict) -> str:
    sy, sx, dy, dx = (layer.get(k, 1) for k in ("SY", "SX", "DY", "DX"))
    iy = "oy" + (f" * {sy}" if sy != 1 else "") + " + fy" + (f" * {dy}" if dy != 1 else "")
    ix = "ox" + (f" * {sx}" if sx != 1 else "") + " + fx" + (f" * {dx}" if dx != 1 else "")
    shape = "\n".join(f"    - 0 <= {d.lower()} < {int(layer[d])}" for d in DIMS)
    return (
        "workload:\n"
        f"  bits_per_value: {{weight: {bits['W']}, input: {bits['I']}, output: {bits['O']}}}\n"
        "  einsums:\n"
        f"  - einsum: \"output[b, k, oy, ox] = input[b, c, IY: {iy}, IX: {ix}] * weight[k, c, fy, fx]\"\n"
        "    iteration_space_shape:\n"
        f"{shape}\n"
        "    renames: {output: output, input: input, weight: weight}\n"
    )


def mapping_yaml(arch: dict, layer: dict, spatial: dict, temporal: list, boundaries: dict) -> str:
    """Our mapping as an AccelForge LoopTree: storage nodes per (operand, memory) at their
    boundaries (top first), temporal loops with tile shapes (product of the factors of the same
    dim below, spatial included when the spatial loops are below), the spatial loops between the
    shared and the per-PE memories, then the compute."""
    mems = arch["memories"]
    levels = {op: [m for m in reversed(mems) if op in m["operands"]] for op in "WIO"}  # innermost first
    # (boundary, memory index from the top, operand)
    holders = []
    for op in "WIO":
        for m, b in zip(levels[op], boundaries[op]):
            holders.append((b, mems.index(m), op, m))
    n = len(temporal)
    priv_b = [b for b, _, _, m in holders if m["private"]]
    shared_b = [b for b, _, _, m in holders if not m["private"] and m is not mems[0]]
    sp_at = max(priv_b) if priv_b else 0          # spatial loops directly above loops[sp_at - 1]
    if shared_b and min(shared_b) < sp_at:
        raise ValueError(f"a shared memory's boundary ({min(shared_b)}) below a per-PE one ({sp_at}): "
                         "not a LoopTree with the array between them")
    sp_loops = [(a, d, f) for a, loops in spatial.items() for d, f in loops if f > 1]
    sp_factor = {}
    for _, d, f in sp_loops:
        sp_factor[d] = sp_factor.get(d, 1) * f
    lines = ["mapping:", "  nodes:"]

    def storage(items):
        # one node per memory: the operands held there at this boundary
        by_mem = {}
        for _, mi, op, m in sorted(items, key=lambda t: t[1]):
            by_mem.setdefault(m["name"], []).append(TENSOR[op])
        for name, ts in by_mem.items():
            lines.extend(["  - !Storage", f"    tensors: [{', '.join(ts)}]", f"    component: {name}"])

    below = {d: 1 for d in DIMS}      # product of factors below (inner), built innermost first
    tile = []
    for i, (d, f) in enumerate(temporal):
        if i == sp_at:
            for dd, ff in sp_factor.items():
                below[dd] *= ff
        below[d] *= f
        tile.append(below[d] // f)
    at = {}
    for h in holders:
        at.setdefault(h[0], []).append(h)
    for i in range(n, -1, -1):
        here = at.get(i, [])
        if i == sp_at:
            storage([h for h in here if not h[3]["private"]])
            inner = {d: 1 for d in DIMS}
            for d, f in temporal[:sp_at]:
                inner[d] *= f
            sp_nodes = []
            for a, d, f in reversed(sp_loops):     # innermost last in the listing: tile shapes from below
                sp_nodes.append(["  - !Spatial", f"    rank_variable: {d.lower()}", f"    tile_shape: {inner[d]}",
                                 f"    name: {a}", f"    component: {PE}"])
                inner[d] *= f
            for nd in reversed(sp_nodes):
                lines.extend(nd)
            storage([h for h in here if h[3]["private"]])
        else:
            storage(here)
        if i > 0:
            d, f = temporal[i - 1]
            lines.extend(["  - !Temporal", f"    rank_variable: {d.lower()}", f"    tile_shape: {tile[i - 1]}"])
    lines.extend(["  - !Compute", "    einsum: output", f"    component: {MAC}"])
    return "\n".join(lines) + "\n"


def _flat(m, what: str) -> dict:
    """{"tensor|component|action": value} of Mappings.energy / .actions (one mapping)."""
    kw = dict(per_component=True, per_tensor=True)
    if what == "energy":
        d = m.energy(**kw, per_action=True)
    else:
        d = m.actions(**kw)
    out = {}
    for k, v in d.items():
        v = v.iloc[0] if hasattr(v, "iloc") else (v[0] if isinstance(v, (list, tuple)) else v)
        key = "|".join(str(x) for x in (k if isinstance(k, tuple) else (k,)))
        out[key] = float(v)
    return out


def evaluate(req: dict, job: dict) -> dict:
    """AccelForge's model on our mapping. Where AccelForge finds a memory over its capacity (it
    holds an O tile at the memory's one O precision; ours at final precision when no reduction
    loop lies above the level, ZigZag's rule), that memory is made unbounded and the evaluation
    repeated (``capacity_relaxed`` names it): energies and latencies do not depend on sizes here."""
    import re
    import accelforge as af
    from accelforge.model.main import InvalidMappingError
    t0 = time.perf_counter()
    arch = json.loads(json.dumps(req["arch"]))
    relaxed = []
    bits = job.get("bits", req.get("bits"))
    mp = mapping_yaml(arch, job["layer"], job["spatial"], job["temporal"], job["boundaries"])
    while True:
        with tempfile.TemporaryDirectory(prefix="af_") as td:
            files = []
            for nm, text in (("arch", arch_yaml(arch, bits)), ("workload", workload_yaml(job["layer"], bits)),
                             ("mapping", mp)):
                p = Path(td) / f"{nm}.yaml"
                p.write_text(text)
                files.append(p)
            if req.get("dump"):
                d = Path(req["dump"]) / job["name"].replace(":", "_")
                d.mkdir(parents=True, exist_ok=True)
                for p in files:
                    (d / p.name).write_text(p.read_text())
            spec = af.Spec.from_yaml(*files)
            try:
                res = spec.evaluate_mapping()
                break
            except InvalidMappingError as e:
                hit = re.search(r"bits of (\S+) but its size", str(e))
                if not hit or hit.group(1) in relaxed:
                    raise
                relaxed.append(hit.group(1))
                for m in arch["memories"]:
                    if m["name"] == hit.group(1):
                        m["size_bits"] = None
    lat = {str(k): float(v.iloc[0] if hasattr(v, "iloc") else v) for k, v in res.latency(per_component=True).items()}
    return {"kind": "evaluate", "name": job["name"], "energy_pj": float(res.energy()), "latency_cycles": float(res.latency()),
            "energy": _flat(res, "energy"), "actions": _flat(res, "actions"), "latency": lat,
            "capacity_relaxed": relaxed, "mapping_yaml": mp, "wall_s": round(time.perf_counter() - t0, 3)}


def spatial_bounds(spatial: dict | None, array: dict) -> dict:
    """Per array dim, AccelForge ``loop_bounds`` pinning the unrolling: each unrolled dim's
    loop == its factor, every other rank variable's loop == 1 (no spatial pin: {})."""
    if spatial is None:
        return {}
    out = {}
    for a in array:
        on = {d: f for d, f in spatial.get(a, []) if f > 1}
        rest = [d.lower() for d in DIMS if d not in on]
        lines = [f"{{expression: {d.lower()}, operator: '==', value: {f}}}" for d, f in on.items()]
        if rest:
            lines.append(f"{{expression: '{' | '.join(rest)}', operator: '==', value: 1}}")
        out[a] = lines
    return out


def _compact(node, depth: int = 0) -> str:
    """One line per LoopTree node (nested nodes indented)."""
    kids = getattr(node, "nodes", None)
    if kids is not None and type(node).__name__ != "Mapping":
        return "\n".join(_compact(k, depth + 1) for k in kids)
    try:
        s = node.compact_str()
    except Exception:  # noqa: BLE001
        s = type(node).__name__
    if type(node).__name__ in ("Storage", "Toll"):
        s = f"[{', '.join(node.tensors)} in {node.component}]"
    return "  " * depth + s


def search(req: dict, job: dict) -> dict:
    """AccelForge's FFM mapper on one layer (energy objective), optionally with our spatial
    unrolling pinned through the fanouts' loop_bounds; ``time_limit_s`` -> spec.mapper.time_limit."""
    import accelforge as af
    from accelforge.frontend.mapper.metrics import Metrics
    arch_text = arch_yaml(req["arch"], job.get("bits") or req.get("bits"))
    bounds = spatial_bounds(job.get("spatial"), req["arch"]["array"])
    if bounds:
        new = []
        for line in arch_text.splitlines():
            new.append(line)
            for a, bl in bounds.items():
                if line.startswith(f"    - {{name: {a}, fanout:"):
                    new[-1] = line[:-1] + ", loop_bounds: [" + ", ".join(bl) + "]}"
        arch_text = "\n".join(new) + "\n"
    t0 = time.perf_counter()
    cwd = os.getcwd()
    with tempfile.TemporaryDirectory(prefix="af_search_") as td:
        (Path(td) / "arch.yaml").write_text(arch_text)
        (Path(td) / "workload.yaml").write_text(workload_yaml(job["layer"], job.get("bits") or req.get("bits")))
        if req.get("dump"):
            d = Path(req["dump"]) / ("search_" + job["name"])
            d.mkdir(parents=True, exist_ok=True)
            for nm in ("arch.yaml", "workload.yaml"):
                (d / nm).write_text((Path(td) / nm).read_text())
        os.chdir(td)   # the mapper writes mapping.svg into the working directory
        try:
            if job.get("n_jobs"):
                af.set_n_parallel_jobs(int(job["n_jobs"]), print_message=False)
            spec = af.Spec.from_yaml(Path(td) / "arch.yaml", Path(td) / "workload.yaml")
            spec.mapper.metrics = Metrics.ENERGY
            if job.get("time_limit_s"):
                spec.mapper.time_limit = float(job["time_limit_s"])
            res = spec.map_workload_to_arch(print_progress=False)
        finally:
            os.chdir(cwd)
    wall = time.perf_counter() - t0
    try:
        lat = {str(k): float(v.iloc[0] if hasattr(v, "iloc") else v) for k, v in res.latency(per_component=True).items()}
        en, ac = _flat(res, "energy"), _flat(res, "actions")
    except Exception as e:   # noqa: BLE001 (report what could be read)
        lat, en, ac = {"error": repr(e)}, {}, {}
    def one(x):
        return float(x.iloc[0] if hasattr(x, "iloc") else x)
    try:
        text = "\n".join(_compact(n) for n in res.mapping(0).nodes)
    except Exception as e:  # noqa: BLE001
        text = repr(e)
    return {"kind": "search", "name": job["name"], "energy_pj": one(res.energy()), "latency_cycles": one(res.latency()),
            "energy": en, "actions": ac, "latency": lat, "mapping_text": text, "wall_s": round(wall, 2),
            "time_limit_s": job.get("time_limit_s"), "spatial_pinned": bool(bounds)}


def main() -> int:
    req = json.load(sys.stdin)
    for job in req.get("evaluate", []):
        print(json.dumps(evaluate(req, job)), flush=True)
    for job in req.get("search", []):
        print(json.dumps(search(req, job)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
