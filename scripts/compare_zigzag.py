"""ZigZag and dse-sweep side by side on the same inputs (issue 12, item 8).

    python scripts/compare_zigzag.py --zigzag-python /root/venvs/zigzag/bin/python            # eyeriss_like, 5 layers
    python scripts/compare_zigzag.py --zigzag-python ... --case tpu_like --layers all --json out.json

ZigZag (``zigzag-dse==3.9.1``) lives in its own virtual environment, never a dependency of ours::

    python3 -m venv /root/venvs/zigzag && /root/venvs/zigzag/bin/pip install zigzag-dse==3.9.1 six

Its side runs in a subprocess with that Python (``scripts/zigzag_driver.py``, JSON on stdout).
Cases:

* ``eyeriss_like``: our preset ``eyeriss_like`` == ZigZag's ``inputs/hardware/eyeriss_like.yaml``
  with the spatial unrolling D1: OX 14, D2: FY 3 x K 4 (a mapping YAML written to a temp dir).
  Default layers: ResNet-18 conv1, conv2_1 (layer1.0.conv1), conv3_2 (layer2.0.conv2), conv4_2
  (layer3.0.conv2), conv5_2 (layer4.0.conv2) of ``costmodel/zoo/resnet18.csv``.
* ``tpu_like``: ZigZag's ``inputs/hardware/tpu_like.yaml`` + ``inputs/mapping/tpu_like.yaml``,
  imported by `sweep.zigzag_import` (``sweep import zigzag``). Layers: the unique layers of our
  zoo resnet18 (both tools get the same layer dims; resnet18.onnx is read by neither here).

Printed per layer and in total:

(a) ZigZag's best mapping (LOMA, lpf_limit 6, opt energy) costed by ZigZag and by our
    ``sweep eval`` model (`costmodel.loopnest.reference.evaluate` of the translated mapping:
    ZigZag's temporal loops innermost first, per-operand memory-level boundaries from its
    per-level loop lists): energy and latency, ratio ours / ZigZag.
(b) each tool's searched best: ZigZag LOMA (lpf_limit 6) and SALSA; ours ``loma`` (lpf_limit=6)
    and ``salsa`` (chains=4): energy and latency, ratio ours / ZigZag per engine.

Workload: ZigZag gets each layer as a one-layer YAML workload without padding (both tools then
count the padded input, IY = SY (OY-1) + FY). Precisions W 8, I 8, O 16, O_final 8 (ZigZag's ONNX
defaults and our presets).

Latency, how ZigZag counts (``zigzag/cost_model/cost_model.py``, ``calc_overall_latency``)::

    latency_total2 = ideal_temporal_cycle + stall_slack_comb + data_onloading_cycle
                     + data_offloading_cycle + systolic_drain_cycle

* ``ideal_temporal_cycle`` = product of the temporal loops = our compute cycles C.
* ``stall_slack_comb``: per memory port, the transfer cycles of each (operand, level, direction)
  within its allowed window (whole period when double-buffered: effective utilisation <= 50 %,
  else the period divided by the top irrelevant loop), combined per physical port; the largest
  stall over ports. Ours: per memory, (reads + writes) x word / bandwidth against C, double
  buffering if twice the tiles fit, fills of single-buffered memories always stall.
* ``data_onloading_cycle``: the first fill of every level of W and I before computing can start
  (not overlapped). We do not count it.
* ``data_offloading_cycle``: the final outputs written from each O level up to the top after the
  last MAC, levels in series. We do not count it.
* ``systolic_drain_cycle``: array size - 1 along each systolic dimension (tpu_like only).

Measured differences over 10 % on the same mapping (commit 9b8397c with the physics helper's
uncommitted costmodel/loopnest changes; ``--explain`` prints the terms): eyeriss_like conv1
(ours 0.65x: ZigZag 903168 + stall 516000 + 71 + 1008, ours 903168 + 16725) and conv5_2 (0.88x:
ZigZag 1376256 + 2359260 + 1200 + 223, ours 1376256 + 1897376). On- and off-loading are < 0.2 %
of either; the whole gap is the stall at sram_8KB, the single read_write port (128 b/cycle) that
feeds all 168 per-PE O register files (rf_16B, 128 bits, full with 8 partial sums, hence NOT
double-buffered). ZigZag (``calculate_allowed_transfer_cycles``): a transfer across a link whose
lower level is not double-buffered may only happen in the lower level's instantaneous window
(period / size of the top O-irrelevant loop above it: 168 / 21 = 8 cycles in conv1, 21 / 3 = 7 in
conv5_2), and transfers sharing one physical port add (``stall_slack_comb``: sum of positive
stalls per port). conv1: read-back to rf_16B and write-up from it, 56 cycles each per 168-cycle
period at sram_8KB's port, allowed 8: 2 x (56 - 8) x 5376 = 516096. conv5_2: 2 x (25 - 7) x 65536
= 2359296. Ours: sram_8KB is double-buffered (twice its tiles fit), so its whole traffic may
overlap the compute (conv1: 602112 cycles < C: no stall; conv5_2: 3273632 - C); the single-buffered
rf_16B stalls only for its own port time (24 b/cycle per instance: 6 cycles per fill). The rule of
ours to change (`costmodel/loopnest/reference.py` ``_stalls`` and its fast twins): stalls per
transfer link, not per memory - the fills (and O write-ups) of a level that is not
double-buffered are timed at the slower end of the link (the upper memory's port, shared by all
lower instances it serves) and may overlap only that level's instantaneous window; directions
sharing one port add. ZigZag's rule is the more physical here: an Eyeriss PE cannot compute on a
psum register file that is being swapped.
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from costmodel.loopnest.arch import load_accelerator  # noqa: E402
from costmodel.loopnest.mapping import Mapping  # noqa: E402
from costmodel.loopnest.reference import evaluate  # noqa: E402
from costmodel.zoo import load_network  # noqa: E402

EYERISS_LAYERS = {"conv1": "conv1", "conv2_1": "layer1.0.conv1", "conv3_2": "layer2.0.conv2",
                  "conv4_2": "layer3.0.conv2", "conv5_2": "layer4.0.conv2"}
EYERISS_MAPPING_YAML = """\
- name: default
  spatial_mapping:
    D1:
      - OX, 14
    D2:
      - FY, 3
      - K, 4
  memory_operand_links:
    O: O
    W: I2
    I: I1
"""


def _zigzag_inputs(py: str) -> Path:
    out = subprocess.run([py, "-c", "import zigzag, pathlib; print(pathlib.Path(zigzag.__file__).parent / 'inputs')"],
                         capture_output=True, text=True, check=True)
    return Path(out.stdout.strip())


def _layers(case: str, names: list[str] | None):
    net = load_network("resnet18")
    by_name = {l.name: l for l, _ in net}
    if case == "eyeriss_like" and not names:
        names = list(EYERISS_LAYERS)
    if not names or names == ["all"]:
        names = list(by_name)
    out = []
    for n in names:
        zoo = EYERISS_LAYERS.get(n, n)
        if zoo not in by_name:
            sys.exit(f"unknown layer {n!r}; known: {list(EYERISS_LAYERS)} or {list(by_name)}")
        out.append((n, by_name[zoo]))
    return out


def _run_zigzag(py: str, hw: Path, mp: Path, layers, engine: str, lpf: int, prec: dict, dump: Path) -> dict:
    req = {"hardware": str(hw), "mapping": str(mp), "engine": engine, "lpf_limit": lpf, "opt": "energy",
           "dump": str(dump / engine),
           "layers": [{"name": n, "K": l.K, "C": l.C, "OY": l.OY, "OX": l.OX, "FY": l.FY, "FX": l.FX, "B": l.B,
                       "SY": l.SY, "SX": l.SX, "precision": prec} for n, l in layers]}
    if any(l.G != 1 or l.DY != 1 or l.DX != 1 for _, l in layers):
        sys.exit("grouped / dilated layers are not passed to ZigZag by this script")
    p = subprocess.run([py, str(ROOT / "scripts" / "zigzag_driver.py")], input=json.dumps(req),
                       capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"ZigZag driver failed ({engine}):\n{p.stderr[-4000:]}")
    return {r["layer"]: r for r in map(json.loads, p.stdout.splitlines()) if r}


def translate(zz: dict, arch) -> Mapping:
    """ZigZag's temporal mapping (per operand, per memory level, loops innermost first) -> our
    Mapping: the loops of O's levels concatenated (all operands share one ordering), boundaries
    = cumulative loop counts per operand level."""
    tm = zz["temporal"]
    loops = [(d, f) for lv in tm["O"] for d, f in lv]
    b = {}
    for op in ("W", "I", "O"):
        levels = tm[op]
        seq = [(d, f) for lv in levels for d, f in lv]
        if seq != loops:
            raise ValueError(f"operand {op}: ZigZag loop order {seq} differs from O's {loops}")
        if len(levels) != len(arch.levels(op)):
            raise ValueError(f"operand {op}: {len(levels)} ZigZag levels, {len(arch.levels(op))} of ours")
        acc, cuts = 0, []
        for lv in levels:
            acc += len(lv)
            cuts.append(acc)
        b[op] = tuple(cuts)
    # drop factor-1 loops, shifting the cuts
    keep = [i for i, (_, f) in enumerate(loops) if f > 1]
    new_idx = {i: sum(1 for k in keep if k < i) for i in range(len(loops) + 1)}
    b = {op: tuple(new_idx[c] for c in cuts) for op, cuts in b.items()}
    return Mapping(None, tuple(loops[i] for i in keep), b)


def _ours_search(layer, arch, mapper: str, params: dict) -> dict:
    from sweep.single import map_layer
    r = map_layer(layer, arch, mapper, "energy", 0, params)
    return {"energy_pj": r["energy_pj"], "latency_cycles": r["latency_cycles"], "mapping": r.get("mapping")}


def _ratio(a, b):
    return a / b if b and math.isfinite(a) else float("nan")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--zigzag-python", required=True, help="a Python with zigzag-dse 3.9.1 (+ six) installed")
    ap.add_argument("--case", choices=["eyeriss_like", "tpu_like"], default="eyeriss_like")
    ap.add_argument("--layers", default=None, help="comma-separated layer names (eyeriss aliases conv1, conv2_1, "
                    "conv3_2, conv4_2, conv5_2 or zoo resnet18 names), or 'all'")
    ap.add_argument("--no-search", action="store_true", help="only part (a): ZigZag's LOMA best costed by both")
    ap.add_argument("--salsa-chains", type=int, default=4)
    ap.add_argument("--lpf-limit", type=int, default=6)
    ap.add_argument("--json", dest="json_out", default=None, help="also write all results to this JSON file")
    ap.add_argument("--explain", action="store_true", help="print ZigZag's latency terms per layer")
    a = ap.parse_args(argv)

    prec = {"W": 8, "I": 8, "O": 16, "O_final": 8}
    inputs = _zigzag_inputs(a.zigzag_python)
    layers = _layers(a.case, a.layers.split(",") if a.layers else None)
    with tempfile.TemporaryDirectory(prefix="compare_zigzag_") as td:
        td = Path(td)
        if a.case == "eyeriss_like":
            hw = inputs / "hardware" / "eyeriss_like.yaml"
            mp = td / "eyeriss_like_mapping.yaml"
            mp.write_text(EYERISS_MAPPING_YAML)
            arch = load_accelerator("eyeriss_like")
        else:
            from sweep.zigzag_import import import_zigzag
            hw, mp = inputs / "hardware" / "tpu_like.yaml", inputs / "mapping" / "tpu_like.yaml"
            arch, _ = import_zigzag(hw, mp, td / "tpu_like.toml")
        zz = {"loma": _run_zigzag(a.zigzag_python, hw, mp, layers, "loma", a.lpf_limit, prec, td)}
        if not a.no_search:
            zz["salsa"] = _run_zigzag(a.zigzag_python, hw, mp, layers, "salsa", a.lpf_limit, prec, td)

    rows = []
    for n, layer in layers:
        z = zz["loma"][n]
        m = translate(z, arch)
        rep = evaluate(layer, arch, m)
        row = {"layer": n, "zoo_layer": layer.name,
               "same_mapping": {"zigzag_energy_pj": z["energy_pj"], "ours_energy_pj": rep.energy_pj,
                                "energy_ratio": _ratio(rep.energy_pj, z["energy_pj"]),
                                "zigzag_latency": z["latency_cycles"], "ours_latency": rep.latency_cycles,
                                "latency_ratio": _ratio(rep.latency_cycles, z["latency_cycles"]),
                                "valid": rep.valid, "reason": rep.reason, "mapping": m.to_dict(),
                                "zigzag_latency_terms": {k: z[k] for k in ("ideal_temporal_cycle", "stall_slack_comb",
                                                                           "data_onloading_cycle", "data_offloading_cycle")},
                                "ours_latency_terms": {"compute_cycles": rep.breakdown.get("compute_cycles"),
                                                       "stall_cycles": rep.breakdown.get("stall_cycles")}}}
        if not a.no_search:
            ol = _ours_search(layer, arch, "loma", {"lpf_limit": a.lpf_limit})
            os_ = _ours_search(layer, arch, "salsa", {"chains": a.salsa_chains})
            zs = zz["salsa"][n]
            row["searched"] = {
                "zigzag_loma": {"energy_pj": z["energy_pj"], "latency_cycles": z["latency_cycles"]},
                "zigzag_salsa": {"energy_pj": zs["energy_pj"], "latency_cycles": zs["latency_cycles"]},
                "ours_loma": {k: ol[k] for k in ("energy_pj", "latency_cycles")},
                "ours_salsa": {k: os_[k] for k in ("energy_pj", "latency_cycles")},
                "loma_energy_ratio": _ratio(ol["energy_pj"], z["energy_pj"]),
                "salsa_energy_ratio": _ratio(os_["energy_pj"], zs["energy_pj"]),
                "best_energy_ratio": _ratio(min(ol["energy_pj"], os_["energy_pj"]), min(z["energy_pj"], zs["energy_pj"])),
                "ours_mappings": {"loma": ol["mapping"], "salsa": os_["mapping"]}}
        rows.append(row)

    def tot(path):
        s = 0.0
        for r in rows:
            v = r
            for k in path:
                v = v[k]
            s += v
        return s

    print(f"case {a.case}: ZigZag's best mapping (LOMA, lpf_limit {a.lpf_limit}) costed by both (ours = sweep eval)")
    print(f"{'layer':10} {'ZZ energy pJ':>14} {'ours pJ':>14} {'ratio':>7} {'ZZ latency':>12} {'ours lat':>12} {'ratio':>7}")
    for r in rows:
        s = r["same_mapping"]
        print(f"{r['layer']:10} {s['zigzag_energy_pj']:14.4e} {s['ours_energy_pj']:14.4e} {s['energy_ratio']:7.4f} "
              f"{s['zigzag_latency']:12.0f} {s['ours_latency']:12.0f} {s['latency_ratio']:7.4f}"
              + ("" if s["valid"] else f"  INVALID: {s['reason']}"))
    ze, oe = tot(["same_mapping", "zigzag_energy_pj"]), tot(["same_mapping", "ours_energy_pj"])
    zl, ol_ = tot(["same_mapping", "zigzag_latency"]), tot(["same_mapping", "ours_latency"])
    print(f"{'total':10} {ze:14.4e} {oe:14.4e} {oe / ze:7.4f} {zl:12.0f} {ol_:12.0f} {ol_ / zl:7.4f}")
    if a.explain:
        print("\nlatency terms: ZigZag ideal_temporal + stall_slack_comb + onloading + offloading; ours compute + max stall")
        for r in rows:
            s = r["same_mapping"]
            t, o = s["zigzag_latency_terms"], s["ours_latency_terms"]
            st = o["stall_cycles"] or {}
            worst = max(st, key=st.get) if st else "-"
            print(f"{r['layer']:10} ZZ {t['ideal_temporal_cycle']:.0f} + {t['stall_slack_comb']:.0f} + "
                  f"{t['data_onloading_cycle']:.0f} + {t['data_offloading_cycle']:.0f}; ours {o['compute_cycles']} + "
                  f"{st.get(worst, 0):.0f} ({worst})")
    if not a.no_search:
        print("\nsearched best, energy pJ (latency cycles); ratio ours / ZigZag")
        print(f"{'layer':10} {'ZZ loma':>22} {'ZZ salsa':>22} {'ours loma':>22} {'ours salsa':>22} {'loma':>6} {'salsa':>6} {'best':>6}")
        for r in rows:
            s = r["searched"]
            cell = lambda x: f"{x['energy_pj']:.4e} ({x['latency_cycles']:.0f})"
            print(f"{r['layer']:10} {cell(s['zigzag_loma']):>22} {cell(s['zigzag_salsa']):>22} {cell(s['ours_loma']):>22} "
                  f"{cell(s['ours_salsa']):>22} {s['loma_energy_ratio']:6.3f} {s['salsa_energy_ratio']:6.3f} {s['best_energy_ratio']:6.3f}")
        t = {k: tot(["searched", k, "energy_pj"]) for k in ("zigzag_loma", "zigzag_salsa", "ours_loma", "ours_salsa")}
        tl = {k: tot(["searched", k, "latency_cycles"]) for k in t}
        print(f"{'total':10} " + " ".join(f"{f'{t[k]:.4e} ({tl[k]:.0f})':>22}" for k in t)
              + f" {t['ours_loma'] / t['zigzag_loma']:6.3f} {t['ours_salsa'] / t['zigzag_salsa']:6.3f}")
    if a.json_out:
        Path(a.json_out).write_text(json.dumps({"case": a.case, "lpf_limit": a.lpf_limit, "rows": rows,
                                                "zigzag": zz}, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
