"""Energy of attention on AccelForge's tpu_v4i, ours against AccelForge's fused mapper (FFM).

Run with OUR venv (AccelForge is not imported; its figures come from its pinned JSON):

    python scripts/accelforge_attention/compare_energy.py

One KV-head group of Llama-3-8B (4 query heads, head dim 128), 2,048 tokens, dense, 8 bits per
value. AccelForge side: ``tests/data/accelforge_attention/{fused,unfused}_T2048_b8_energy.json``
(run_ffm.py on tpu_v4i as the wheel ships it). Our side: the same chip in our format,
``tests/data/accelforge_attention/tpu_v4i.toml`` (every figure's source in its header), each
attention matmul mapped with LOMA (objective energy) and costed by the reference evaluator, the
softmax by the vector unit (`costmodel.vector.vector_cost`).

What is compared, per (Einsum, component, tensor): energy (pJ) and accesses (bits). Our layers
and operands are named as AccelForge's Einsums and tensors: score -> QK (W = K, I = Q, O = QK),
context -> AV (W = V, I = QK_softmax, O = AV), the softmax op -> QK_softmax (reads QK, writes
QK_softmax; its compute -> ScalarUnit), the fused output's normalisation and rescaling (ours
only: AccelForge's softmax is one element-wise Einsum) -> AV_scale. Bits = our word accesses x
the port's word_bits (8 here).

Cases:
  * fused: `attention_layers(..., fusion="fused", tile=2048, key_tile=2048)`: one query tile and
    one K/V tile, the scores and probabilities on chip; FFM's best fused mapping on tpu_v4i has no
    tiled loop either (K and V whole in the 128 MiB GlobalBuffer). Query tiles 128 to 1,024 are
    printed too (K and V bits and the total): K and V are then read from DRAM once per query tile.
  * unfused on the GlobalBuffer keeping W only (`accelerator(glb=("W",))`): the keep set FFM
    chose for its unfused mapping (its GlobalBuffer holds K and V, nothing else).
  * unfused on tpu_v4i.toml as it is (the GlobalBuffer serving W, I, O), raw.

Conventions that separate the two (measured by this script; docs/llm.md):
  (a) register reads: AccelForge reads the weight register for every MAC, we once per run of
      W-irrelevant loops (docs/accelforge.md, convention (a)); 0 pJ on tpu_v4i either way.
  (e) AccelForge's Z fanout has may_reuse Nothing: each of the 4 MXUs reads its own copy of K (V)
      from the GlobalBuffer; our model multicasts an operand over an array dim carrying a loop
      irrelevant to it: one read for the 4. Ours = AccelForge's GlobalBuffer K (V) reads / 4.
  (f) bypass: FFM may leave a tensor out of a level (Q and AV go MainMemory <-> LocalBuffer);
      in our model an operand passes every level serving it: one GlobalBuffer write and one read
      per value of Q and of AV (fused, on tpu_v4i.toml).
  (g) softmax: AccelForge stages QK and QK_softmax through the LocalBuffer (a write and a read of
      each per value); our vector unit reads and writes the level its tensors live in, no
      staging; ours also normalises the output (rows x head_dim multiplies, read and write).
"""

from __future__ import annotations

import argparse
import json
import math
import time
from collections import defaultdict
from dataclasses import replace
from pathlib import Path

from costmodel.loopnest.arch import Accelerator, load_accelerator
from costmodel.loopnest.mapping import Mapping
from costmodel.loopnest.reference import evaluate
from costmodel.vector import vector_cost
from costmodel.workload import VectorOp
from costmodel.transformer.attention import attention_layers, fused_attention_ops

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "tests" / "data" / "accelforge_attention"
TOML = DATA / "tpu_v4i.toml"
T, GROUP, HD = 2048, 4, 128
EINSUMS = ("QK", "QK_softmax", "AV", "AV_scale")
COMPONENTS = ("MainMemory", "GlobalBuffer", "LocalBuffer", "Register", "MAC", "ScalarUnit")
TENSORS = ("Q", "K", "V", "QK", "QK_softmax", "AV")
#: our layer -> AccelForge's Einsum, and (Einsum, our operand) -> AccelForge's tensor
EINSUM_OF = {"score": "QK", "context": "AV"}
TENSOR_OF = {("QK", "W"): "K", ("QK", "I"): "Q", ("QK", "O"): "QK",
             ("AV", "W"): "V", ("AV", "I"): "QK_softmax", ("AV", "O"): "AV"}


def accelerator(glb: tuple[str, ...] = ("W", "I", "O")) -> Accelerator:
    """tpu_v4i.toml with its GlobalBuffer serving the operands ``glb`` (the file: W, I, O;
    ``("W",)``: the keep set of FFM's unfused mapping)."""
    acc = load_accelerator(TOML)
    mems = tuple(replace(m, operands=glb) if m.name == "GlobalBuffer" else m for m in acc.memories)
    return acc if mems == acc.memories else replace(acc, name=f"{acc.name}_glb_{''.join(glb)}", memories=mems)


def accelforge(mode: str, bits: int = 8) -> dict:
    """AccelForge's pinned run ``{mode}_T2048_b{bits}_energy.json``: ``energy`` {(einsum,
    component, tensor): pJ}, ``bits`` {(einsum, component, tensor, action): bits accessed},
    ``wall_s`` (its mapper's wall time, s), ``jobs``, ``raw`` (the JSON)."""
    d = json.loads((DATA / f"{mode}_T{T}_b{bits}_energy.json").read_text())
    assert d["tokens"] == T and d["bits"] == bits and d["metric"] == "energy" and d["mode"] == mode
    energy: dict = defaultdict(float)
    acts: dict = defaultdict(float)
    for k, v in d["energy_by_einsum_component_tensor_action"].items():
        e, c, t, a = k.split("|")
        if a != "leak":                      # leak_power 0 everywhere (yaml)
            energy[(e, c, t)] += v * 1e12
    for k, v in d["actions_by_einsum_component_tensor_action"].items():
        e, c, t, a = k.split("|")
        acts[(e, c, t, a)] += v              # bits_per_action 1: actions are bits (MAC: computes)
    return {"energy": dict(energy), "bits": dict(acts), "wall_s": d["wall_s"], "jobs": d["jobs"], "raw": d}


def _add_vector(out: dict, op: VectorOp, rep: int, acc: Accelerator, einsum: str, reads: str, writes: str) -> None:
    """Cost ``op`` (x ``rep``) on ``acc``'s vector unit into ``out``: its reads (tensor ``reads``)
    and writes (tensor ``writes``) at the level it uses, its compute under ScalarUnit."""
    c = vector_cost(op, acc)
    m = next(m for m in acc.memories if m.name == c.memory)
    rd = math.ceil(c.read_bits / m.word_bits) * m.read_pj
    wr = math.ceil(c.write_bits / m.word_bits) * m.write_pj
    assert math.isclose(rd + wr, c.memory_pj, rel_tol=1e-12)
    out["energy"][(einsum, m.name, reads)] += rd * rep
    out["energy"][(einsum, m.name, writes)] += wr * rep
    out["energy"][(einsum, "ScalarUnit", "None")] += c.compute_pj * rep
    out["bits"][(einsum, m.name, reads, "read")] += c.read_bits * rep
    out["bits"][(einsum, m.name, writes, "write")] += c.write_bits * rep


def ours(fusion: str, acc: Accelerator, tile: int = T, key_tile: int | None = T) -> dict:
    """Our side: every attention layer of ``fusion`` mapped with LOMA (objective energy) on
    ``acc`` and evaluated, x its repeat, plus the vector ops. Returns ``energy`` {(einsum,
    component, tensor): pJ}, ``bits`` {(einsum, component, tensor, action): bits}, ``wall_s``
    (s: the mapping calls, one process, one core), ``search_s`` (the mappers' own wall_s summed),
    ``layers`` (name, repeat, energy pJ, mapping)."""
    from sweep import api
    out = {"energy": defaultdict(float), "bits": defaultdict(float), "layers": []}
    layers, reps = attention_layers(GROUP, HD, T, T, False, fusion, 1, tile, key_tile)
    wall = search = 0.0
    for layer, rep in zip(layers, reps):
        t0 = time.perf_counter()
        res = api.map_layer(layer, acc, "loma", objective="energy")
        wall += time.perf_counter() - t0
        search += res.wall_s
        r = evaluate(layer, acc, Mapping.from_dict(res.mapping))
        assert r.valid, r.reason
        einsum = EINSUM_OF[layer.name.split("_")[0]]
        a = acc.for_layer(layer)
        for op, costs in r.breakdown["operands"].items():
            tensor = TENSOR_OF[(einsum, op)]
            for c in costs:
                wb = a.memory(c["memory"]).port(op).word_bits
                out["energy"][(einsum, c["memory"], tensor)] += c["energy_pj"] * rep
                out["bits"][(einsum, c["memory"], tensor, "read")] += c["reads"] * wb * rep
                out["bits"][(einsum, c["memory"], tensor, "write")] += c["writes"] * wb * rep
        out["energy"][(einsum, "MAC", "None")] += r.breakdown["mac_energy_pj"] * rep
        out["layers"].append((layer.name, rep, r.energy_pj, res.mapping))
    if fusion == "fused":
        names = tuple(layer.name for layer in layers)
        ops, oreps = fused_attention_ops(GROUP, HD, T, T, False, 1, None, names, tile, key_tile)
        for op, rep in zip(ops, oreps):
            if op.op == "online_softmax":
                _add_vector(out, op, rep, acc, "QK_softmax", "QK", "QK_softmax")
            else:                            # attn_normalize / attn_rescale: the output, ours only
                _add_vector(out, op, rep, acc, "AV_scale", "AV", "AV")
    else:
        _add_vector(out, VectorOp("softmax", "softmax", GROUP * T * T, rows=GROUP * T), 1, acc,
                    "QK_softmax", "QK", "QK_softmax")
    out["energy"], out["bits"] = dict(out["energy"]), dict(out["bits"])
    out["wall_s"], out["search_s"] = wall, search
    return out


def by(d: dict, keep) -> dict:
    """Sum of ``d``'s values grouped by ``keep(key)`` (None: left out)."""
    s: dict = defaultdict(float)
    for k, v in d.items():
        g = keep(k)
        if g is not None:
            s[g] += v
    return dict(s)


def dram_bits(side: dict) -> dict:
    """MainMemory bits per (tensor, action) of one side."""
    return by(side["bits"], lambda k: (k[2], k[3]) if k[1] == "MainMemory" else None)


def _ratio(a: float, b: float) -> str:
    return f"{a / b:7.4f}" if b else ("    =  " if a == 0 else "    -  ")


def table(title: str, o: dict, af: dict) -> list[str]:
    """Lines: per (Einsum, component, tensor), per component, per Einsum and total: ours, AccelForge
    (uJ), ours / AccelForge; then MainMemory bits per tensor."""
    uj = 1e-6
    lines = [f"== {title}", f"{'einsum':11s} {'component':12s} {'tensor':11s} {'ours uJ':>10s} {'AF uJ':>10s} "
             f"{'ours/AF':>7s}   {'ours rd/wr bits':>25s}   {'AF rd/wr bits':>25s}"]
    keys = sorted(set(o["energy"]) | set(af["energy"]),
                  key=lambda k: (EINSUMS.index(k[0]), COMPONENTS.index(k[1]), k[2]))
    for k in keys:
        a, b = o["energy"].get(k, 0.0), af["energy"].get(k, 0.0)
        if a == 0 and b == 0 and k[1] != "MAC":
            continue
        rw = [f"{s['bits'].get((*k, 'read'), 0):>12,.0f}/{s['bits'].get((*k, 'write'), 0):<12,.0f}"
              for s in (o, af)] if k[1] not in ("MAC", "ScalarUnit") else ["", ""]
        lines.append(f"{k[0]:11s} {k[1]:12s} {k[2]:11s} {a * uj:10.3f} {b * uj:10.3f} {_ratio(a, b)}   "
                     f"{rw[0]:>25s}   {rw[1]:>25s}")
    for name, f in (("component", lambda k: k[1]), ("einsum", lambda k: k[0])):
        so, sa = by(o["energy"], f), by(af["energy"], f)
        for g in sorted(set(so) | set(sa), key=lambda g: (COMPONENTS + EINSUMS).index(g)):
            lines.append(f"  by {name:9s} {g:24s} {so.get(g, 0) * uj:10.3f} {sa.get(g, 0) * uj:10.3f} "
                         f"{_ratio(so.get(g, 0), sa.get(g, 0))}")
    to, ta = sum(o["energy"].values()), sum(af["energy"].values())
    lines.append(f"  total{'':30s} {to * uj:10.3f} {ta * uj:10.3f} {_ratio(to, ta)}")
    do, da = dram_bits(o), dram_bits(af)
    lines.append("  MainMemory bits per tensor (read / write), ours | AccelForge:")
    for t in TENSORS:
        r = [f"{d.get((t, 'read'), 0):>12,.0f} / {d.get((t, 'write'), 0):<12,.0f}" for d in (do, da)]
        lines.append(f"    {t:11s} {r[0]} | {r[1]}")
    return lines


def conventions(o: dict, af: dict, fused: bool) -> list[str]:
    """Lines: each convention's share of ours - AccelForge (pJ), measured (from both sides' keys)
    and predicted from AccelForge's own figures alone (its bits x its pJ per bit)."""
    ea, eo, ba = af["energy"], o["energy"], af["bits"]
    glb_r = af_pj_per_bit(af, "GlobalBuffer", "read")
    glb_w = af_pj_per_bit(af, "GlobalBuffer", "write")
    lines = []
    for e, w, io in (("QK", "K", "Q"), ("AV", "V", "AV")):
        act = "read" if io == "Q" else "write"
        meas_e = eo.get((e, "GlobalBuffer", w), 0) - ea.get((e, "GlobalBuffer", w), 0)
        pred_e = -0.75 * ba[(e, "GlobalBuffer", w, "read")] * glb_r
        lines.append(f"  (e) {e} GlobalBuffer {w}: ours - AF {meas_e * 1e-6:9.3f} uJ, predicted -3/4 of AF's reads "
                     f"{pred_e * 1e-6:9.3f} uJ")
        if fused:
            meas_f = eo.get((e, "GlobalBuffer", io), 0) - ea.get((e, "GlobalBuffer", io), 0)
            pred_f = ba[(e, "MainMemory", io, act)] * (glb_r + glb_w)
            lines.append(f"  (f) {e} GlobalBuffer {io}: ours - AF {meas_f * 1e-6:9.3f} uJ, predicted {io}'s bits x "
                         f"(read + write pJ/bit) {pred_f * 1e-6:9.3f} uJ")
    lb = sum(v for k, v in ea.items() if k[0] == "QK_softmax" and k[1] == "LocalBuffer")
    lines.append(f"  (g) softmax LocalBuffer staging: AF {lb * 1e-6:9.3f} uJ, ours 0; ours AV_scale "
                 f"{by(eo, lambda k: k[0]).get('AV_scale', 0) * 1e-6:9.3f} uJ, AF none")
    return lines


def af_pj_per_bit(af: dict, component: str, action: str) -> float:
    """AccelForge's energy per bit (pJ) of ``component``'s ``action``: its energy / its action count,
    the same for every (Einsum, tensor) it has (checked)."""
    raw = af["raw"]
    vals = set()
    for k, a in raw["actions_by_einsum_component_tensor_action"].items():
        e, c, t, act = k.split("|")
        if c == component and act == action and a > 0:
            vals.add(round(raw["energy_by_einsum_component_tensor_action"][k] / a * 1e12, 6))
    assert len(vals) == 1, (component, action, vals)
    return vals.pop()


def timing() -> list[str]:
    """Lines: our mapping wall time (s) of the fused attention compared (the first mapping of the
    process, then warm) and of every variant `fusion = "auto"` chooses among, plus query tile 2,048."""
    from costmodel.transformer.attention import fusion_variants
    acc = accelerator()
    t0 = time.perf_counter()
    cold = ours("fused", acc)
    cold_s = time.perf_counter() - t0
    warm = ours("fused", acc)
    variants = fusion_variants(T, T) + [{"fusion": "fused", "query_tile": T, "kv_tile": T}]
    t0 = time.perf_counter()
    n = 0
    for v in variants:
        o = ours(v["fusion"], acc, v.get("query_tile", T), v.get("kv_tile", T))
        n += len(o["layers"])
    every = time.perf_counter() - t0
    return [f"  fused, query and K/V tile 2,048 ({len(cold['layers'])} layers + vector ops): {cold_s:.2f} s, the "
            f"process's first mapping (mapping calls {cold['wall_s']:.2f} s; the mappers' own search "
            f"{cold['search_s']:.3f} s); again, warm: {warm['wall_s'] * 1e3:.1f} ms",
            f"  every variant --fusion auto chooses among plus tile 2,048 ({len(variants)} variants, {n} layers, "
            f"warm): {every:.2f} s"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.parse_args()
    times = timing()
    af_f, af_u = accelforge("fused"), accelforge("unfused")
    f = ours("fused", accelerator())
    u_w = ours("unfused", accelerator(("W",)))
    u_all = ours("unfused", accelerator())
    out = (table("fused, query and K/V tile 2,048 (FFM's mapping has no tiled loop); tpu_v4i.toml", f, af_f)
           + ["  conventions (docstring), ours - AccelForge:"] + conventions(f, af_f, True)
           + table("unfused, GlobalBuffer keeps W only (FFM's unfused keep set)", u_w, af_u)
           + ["  conventions (docstring), ours - AccelForge:"] + conventions(u_w, af_u, False)
           + table("unfused, tpu_v4i.toml as it is (GlobalBuffer serves W, I, O: every tensor passes it)", u_all, af_u))
    print("\n".join(out))
    print("== fused, smaller query tiles: K and V read from MainMemory once per query tile (bits)")
    d_af = dram_bits(af_f)
    for tile, kt in ((128, 128), (512, 512), (512, T), (1024, 512)):
        o = ours("fused", accelerator(), tile, kt)
        d = dram_bits(o)
        print(f"    query tile {tile:5d}, K/V tile {kt:5d}: K {d.get(('K', 'read'), 0):>12,.0f}  V "
              f"{d.get(('V', 'read'), 0):>12,.0f}  (AccelForge: {d_af[('K', 'read')]:,.0f} each); energy "
              f"{sum(o['energy'].values()) * 1e-6:9.3f} uJ (AccelForge {sum(af_f['energy'].values()) * 1e-6:.3f})")
    print("== mapper wall time, ours (LOMA, objective energy, in-process, 1 core):")
    print("\n".join(times))
    print(f"  AccelForge FFM (pinned JSON, {af_f['jobs']} jobs): fused {af_f['wall_s']} s, unfused "
          f"{af_u['wall_s']} s")


if __name__ == "__main__":
    main()
