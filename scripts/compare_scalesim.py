"""SCALE-Sim's compute cycles beside ours: the Flexer NPU tile latency and DeepOpt's eq. 17 (issue 31,
"SCALE-Sim, pinned").

    python scripts/compare_scalesim.py --list                                   # the shapes; no SCALE-Sim needed
    python scripts/compare_scalesim.py --python $SCALESIM_VENV/bin/python       # run all, print, compare
    python scripts/compare_scalesim.py --set tiles --only stride2,non_square    # some classes (or id parts)
    python scripts/compare_scalesim.py --pin tests/data/scalesim                # store for the tests

The whole set, 244 tiles and 21 DeepOpt layers, is about 1.7 million simulated cycles; SCALE-Sim
steps through every cycle in Python (about 0.1 ms each): 3.5 minutes with ``--jobs 2`` on two busy
cores.

SCALE-Sim (PyPI ``scalesim``, 3.0.0 when the figures were pinned) lives in its own virtual
environment, never a dependency of ours::

    python -m venv $SCALESIM_VENV && $SCALESIM_VENV/bin/pip install scalesim==3.0.0 'numpy<2'

Its Python is ``--python``, else ``$SCALESIM_VENV/bin/python``. Its side runs in subprocesses
(``scripts/scalesim_driver.py``, JSON lines on stdout), one SCALE-Sim run per shape: weight
stationary (``Dataflow = ws``), an array of ArrayHeight = rows x ArrayWidth = cols PEs, every SRAM
64 MiB and ``InterfaceBandwidth = CALC`` (SCALE-Sim sizes the DRAM bandwidth for stall-free
execution); the shape is one row of a topology CSV (IFMAP height and width, filter height and
width, channels, filters, stride) or of an M, N, K GEMM topology. SCALE-Sim's compute cycles are
its COMPUTE_REPORT.csv "Total Cycles" minus "Stall Cycles"; every run must report 0 stall cycles
(the script stops otherwise). SCALE-Sim's "Total Cycles (incl. prefetch)" adds the first DRAM
fills and is kept for reference only.

Sets:

* ``tiles`` -- one tiled convolution (tCONV) each, against our `costmodel.npu.conv_cycles`, the
  latency the Flexer mapper gives a tCONV (`mappers.npu.graph.build_dfg`). Classes: ``full_folds``
  (R*S*C a multiple of the rows, K of the columns), ``partial_folds``, ``stride2``,
  ``one_output_row`` (OY = 1, and one output pixel), ``gemm`` (1x1 on a 1 x N output, and M, N, K
  GEMMs: ours is a 1x1 convolution with C = K, K = N over M output pixels), ``non_square`` (16 x 32,
  32 x 16, 8 x 4 arrays), and ``campaign``: the tCONVs of ``campaigns/flexer_multinpu.toml``. For
  each of its networks' distinct layers and each distinct buffer of its presets (tilings depend on
  the buffer only: arch1 256 KiB, arch3 512 KiB) the middle tiling of `costmodel.npu.tilings` with
  the campaign's flexer parameters (min_spatial, min_channels, max_ops), all its distinct tCONV
  shapes (edge tiles too); a shape met again is kept once, under its first source.
* ``deepopt`` -- whole DeepOpt layers (``*_deepopt`` zoo networks) on J x K arrays (J PE rows =
  ArrayHeight, K columns = ArrayWidth; DeepOpt's 32 x 64 and a 48 x 24), against DeepOpt's eq. 17
  compute cycles (`costmodel.systolic.kernels`, SRAMs large enough for no split). Printed:
  SCALE-Sim's folds ceil(R*S*C/J) * ceil(F/K), eq. 17's R * ceil(C/C_uv) * ceil(F/F_uv) (C_uv =
  min(floor(J/S), C), F_uv = min(K, F)) and the relation SCALE-Sim + 1 = folds_scalesim * (E*G +
  2J + K - 2); on 1x1 layers the folds agree and SCALE-Sim = eq. 17 + folds * (2J + K - 2) - 1.

``--pin DIR`` writes DIR/tiles.json and DIR/deepopt.json (SCALE-Sim's version, the command, the
date, per shape its inputs and SCALE-Sim's cycles) for ``tests/costmodel/npu/test_scalesim_pinned.py``
and ``tests/costmodel/systolic/test_scalesim_deepopt.py``, which need no SCALE-Sim.
"""

from __future__ import annotations

import argparse
import datetime
import itertools
import json
import math
import os
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from costmodel.npu import conv_cycles, load_npu, tilings  # noqa: E402
from costmodel.systolic import SystolicParams  # noqa: E402
from costmodel.systolic import kernels as kn  # noqa: E402
from costmodel.zoo import load_network  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from compare_zigzag import portable_command  # noqa: E402

CAMPAIGN = ROOT / "campaigns" / "flexer_multinpu.toml"
SRAM_KIB = 65536
#: (id, class, (rows, cols), R, S, C, K, OY, OX, stride): the hand-picked tCONVs.
CLASS_SHAPES = [
    ("full_1x1_c64_k64", "full_folds", (32, 32), 1, 1, 64, 64, 7, 7, 1),
    ("full_3x3_c32_k64", "full_folds", (32, 32), 3, 3, 32, 64, 8, 8, 1),
    ("full_1x1_c32_k32", "full_folds", (32, 32), 1, 1, 32, 32, 4, 4, 1),
    ("partial_3x3_c3_k16", "partial_folds", (32, 32), 3, 3, 3, 16, 10, 10, 1),
    ("partial_3x3_c64_k33", "partial_folds", (32, 32), 3, 3, 64, 33, 5, 5, 1),
    ("partial_5x5_c7_k40", "partial_folds", (32, 32), 5, 5, 7, 40, 6, 5, 1),
    ("stride2_3x3_c16_k32", "stride2", (32, 32), 3, 3, 16, 32, 7, 7, 2),
    ("stride2_1x1_c64_k48", "stride2", (32, 32), 1, 1, 64, 48, 7, 7, 2),
    ("stride2_7x7_c3_k64", "stride2", (32, 32), 7, 7, 3, 64, 8, 8, 2),
    ("one_row_3x3_c16_k32", "one_output_row", (32, 32), 3, 3, 16, 32, 1, 14, 1),
    ("one_pixel_3x3_c64_k33", "one_output_row", (32, 32), 3, 3, 64, 33, 1, 1, 1),
    ("one_row_stride2_3x3_c40_k20", "one_output_row", (32, 32), 3, 3, 40, 20, 1, 9, 2),
    ("gemm_1x1_1x50_c96_k64", "gemm", (32, 32), 1, 1, 96, 64, 1, 50, 1),
    ("non_square_16x32_3x3_c16_k40", "non_square", (16, 32), 3, 3, 16, 40, 6, 6, 1),
    ("non_square_32x16_3x3_c16_k40", "non_square", (32, 16), 3, 3, 16, 40, 6, 6, 1),
    ("non_square_16x32_1x1_c50_k20", "non_square", (16, 32), 1, 1, 50, 20, 5, 6, 1),
    ("non_square_32x16_1x1_c50_k20", "non_square", (32, 16), 1, 1, 50, 20, 5, 6, 1),
    ("non_square_8x4_1x1_c8_k8", "non_square", (8, 4), 1, 1, 8, 8, 2, 5, 1),
]
#: (id, class, (rows, cols), M, N, K): GEMMs in SCALE-Sim's M, N, K topology (M x K times K x N).
GEMM_SHAPES = [
    ("gemm_m64_n100_k256", "gemm", (32, 32), 64, 100, 256),
    ("gemm_m1_n128_k512", "gemm", (32, 32), 1, 128, 512),
    ("gemm_m200_n48_k80", "gemm", (32, 32), 200, 48, 80),
    ("non_square_32x16_gemm_m64_n100_k256", "non_square", (32, 16), 64, 100, 256),
]
#: (zoo network, layer, J, K): DeepOpt layers on J x K arrays.
DEEPOPT_LAYERS = [
    ("googlenet_v1_deepopt", "L02_conv2_reduce", 32, 64),
    ("googlenet_v1_deepopt", "L05_inception3a_5x5_reduce", 32, 64),
    ("googlenet_v1_deepopt", "L40_inception4e_3x3_reduce", 32, 64),
    ("googlenet_v1_deepopt", "L46_inception5a_3x3_reduce", 32, 64),
    ("googlenet_v1_deepopt", "L53_inception5b_5x5_reduce", 32, 64),
    ("squeezenet_v11_deepopt", "L03_fire2_expand1x1", 32, 64),
    ("squeezenet_v11_deepopt", "L09_fire4_expand1x1", 32, 64),
    ("squeezenet_v11_deepopt", "L14_fire6_squeeze1x1", 32, 64),
    ("resnet50_deepopt", "L12_res3a_branch2a", 32, 64),
    ("squeezenet_v11_deepopt", "L14_fire6_squeeze1x1", 48, 24),
    ("squeezenet_v11_deepopt", "L15_fire6_expand1x1", 48, 24),
    ("squeezenet_v11_deepopt", "L01_conv1", 32, 64),
    ("squeezenet_v11_deepopt", "L04_fire2_expand3x3", 32, 64),
    ("squeezenet_v11_deepopt", "L10_fire4_expand3x3", 32, 64),
    ("squeezenet_v11_deepopt", "L16_fire6_expand3x3", 32, 64),
    ("googlenet_v1_deepopt", "L01_conv1", 32, 64),
    ("googlenet_v1_deepopt", "L08_inception3a_5x5", 32, 64),
    ("googlenet_v1_deepopt", "L20_inception4a_5x5", 32, 64),
    ("googlenet_v1_deepopt", "L49_inception5a_3x3", 32, 64),
    ("googlenet_v1_deepopt", "L20_inception4a_5x5", 48, 24),
    ("squeezenet_v11_deepopt", "L16_fire6_expand3x3", 48, 24),
]


# --------------------------------------------------------------------------------------------- shapes

def conv_shape(sid: str, cls: str, array, R, S, C, K, OY, OX, stride, source: dict | None = None) -> dict:
    """A tCONV as the tests read it (``layer``) and as SCALE-Sim's topology row (``csv``: the
    input tile IFMAP (OY-1)*stride + R high, (OX-1)*stride + S wide, no padding)."""
    out = {"id": sid, "class": cls, "array": list(array),
           "layer": {"R": R, "S": S, "C": C, "K": K, "OY": OY, "OX": OX, "stride": stride},
           "topology": "conv", "csv": [(OY - 1) * stride + R, (OX - 1) * stride + S, R, S, C, K, stride]}
    if source:
        out["source"] = source
    return out


def class_shapes() -> list[dict]:
    out = [conv_shape(*s) for s in CLASS_SHAPES]
    out += [{"id": sid, "class": cls, "array": list(array), "gemm": {"M": M, "N": N, "K": K}, "topology": "gemm",
             "csv": [M, N, K]} for sid, cls, array, M, N, K in GEMM_SHAPES]
    return out


def _tile_sizes(D: int, t: int) -> list[int]:
    """The distinct tile sizes of a dimension D cut in tiles of t: t, and the edge tile if smaller."""
    return sorted({t, D - (math.ceil(D / t) - 1) * t}, reverse=True)


def campaign_shapes(path: Path = CAMPAIGN) -> list[dict]:
    """The campaign's tCONVs (module docstring, set ``tiles``, class ``campaign``)."""
    spec = tomllib.loads(path.read_text())
    params = next(m.get("params", {}) for m in spec["mappers"] if m["name"] == "flexer")
    knobs = [params.get("min_spatial", 1), params.get("min_channels", 8), params.get("max_ops", 512)]
    archs: dict[tuple, object] = {}
    for name in spec["architectures"]["presets"]:
        a = load_npu(name)
        archs.setdefault((a.buffer_bytes, a.rows, a.cols, a.data_bytes, a.psum_bytes), a)
    out: dict[tuple, dict] = {}
    for net in spec["networks"]:
        layers: dict[tuple, object] = {}
        for layer, _ in load_network(net):
            layers.setdefault((layer.kind, layer.K, layer.C, layer.OY, layer.OX, layer.FY, layer.FX, layer.SY,
                               layer.SX, layer.DY, layer.DX, layer.G, layer.B), layer)
        for layer in layers.values():
            if layer.SY != layer.SX or layer.DY != 1 or layer.DX != 1:
                continue   # SCALE-Sim's topology has one stride and no dilation
            for arch in archs.values():
                ts = tilings(layer, arch, *knobs)
                if not ts:
                    continue
                t = ts[len(ts) // 2]
                src = {"network": net, "layer": layer.name, "arch": arch.name, "tiling": list(t.as_tuple()),
                       "tiling_index": len(ts) // 2, "tilings": len(ts)}
                for oy, ox, c, k in itertools.product(_tile_sizes(layer.OY, t.oy_t), _tile_sizes(layer.OX, t.ox_t),
                                                      _tile_sizes(layer.C, t.c_t), _tile_sizes(layer.K, t.k_t)):
                    key = (layer.FY, layer.FX, layer.SY, c, k, oy, ox, arch.rows, arch.cols)
                    if key not in out:
                        sid = f"{net}:{layer.name}:{arch.name}:{oy}x{ox}x{c}x{k}"
                        out[key] = conv_shape(sid, "campaign", (arch.rows, arch.cols), layer.FY, layer.FX, c, k,
                                              oy, ox, layer.SY, src)
    return list(out.values())


def deepopt_shapes() -> list[dict]:
    out, nets = [], {}
    for net, name, J, K in DEEPOPT_LAYERS:
        if net not in nets:
            nets[net] = {layer.name: layer for layer, _ in load_network(net)}
        L = nets[net][name]
        s = conv_shape(f"{net}:{name}:{J}x{K}", "deepopt", (J, K), L.FY, L.FX, L.C, L.K, L.OY, L.OX, L.SY)
        s["source"] = {"network": net, "layer": name}
        out.append(s)
    return out


# --------------------------------------------------------------------------------------------- ours

def ours_tile(s: dict) -> int:
    """Our tCONV latency of a ``tiles`` shape (a GEMM: a 1x1 convolution, C = K, K = N, M pixels)."""
    rows, cols = s["array"]
    if "gemm" in s:
        g = s["gemm"]
        return conv_cycles(1, 1, g["K"], g["N"], g["M"], rows, cols)
    L = s["layer"]
    return conv_cycles(L["R"], L["S"], L["C"], L["K"], L["OY"] * L["OX"], rows, cols)


def deepopt_terms(s: dict) -> dict:
    """DeepOpt's eq. 17 compute cycles of a ``deepopt`` shape (XYZiZo, SRAMs of 2^40 bits: no
    sub-volume split) and both tools' fold counts."""
    L, (J, K) = s["layer"], s["array"]
    big = 2.0 ** 40
    a = lambda v: np.array([float(v)])  # noqa: E731
    g = kn.Geo(a(J), a(K), a(big), a(big), a(big), a(L["R"]), a(L["S"]), a(L["stride"]), a(L["stride"]), a(L["C"]))
    res, _, _, _ = kn.k_xyzizo(g, a(L["OX"]), a(L["OY"]), a(L["K"]), SystolicParams())
    c_uv, f_uv = min(J // L["S"], L["C"]), min(K, L["K"])
    return {"eq17": int(res[kn.CYC][0]),
            "folds_scalesim": math.ceil(L["R"] * L["S"] * L["C"] / J) * math.ceil(L["K"] / K),
            "folds_eq17": L["R"] * math.ceil(L["C"] / c_uv) * math.ceil(L["K"] / f_uv)}


# --------------------------------------------------------------------------------------------- SCALE-Sim

def scalesim_python(a) -> str:
    if a.python:
        return a.python
    venv = os.environ.get("SCALESIM_VENV")
    if not venv:
        sys.exit("no SCALE-Sim: give --python PATH or set SCALESIM_VENV (setup: python -m venv $SCALESIM_VENV && "
                 "$SCALESIM_VENV/bin/pip install scalesim==3.0.0 'numpy<2')")
    return str(Path(venv) / "bin" / "python")


def scalesim_version(py: str) -> str:
    code = "import importlib.metadata as m; print('scalesim', m.version('scalesim') + ', numpy', m.version('numpy'))"
    out = subprocess.run([py, "-c", code], capture_output=True, text=True, check=False)
    return out.stdout.strip() or "unknown"


def run_scalesim(py: str, shapes: list[dict], jobs: int) -> dict[str, dict]:
    """SCALE-Sim's figures per shape id, from ``jobs`` drivers in parallel (shapes dealt out by
    our predicted cycles, largest first, to the least loaded driver)."""
    load = [0] * max(1, jobs)
    parts: list[list[dict]] = [[] for _ in load]
    for s in sorted(shapes, key=lambda s: -ours_tile(s)):
        i = load.index(min(load))
        parts[i].append(s)
        load[i] += ours_tile(s)
    procs = []
    for part in filter(None, parts):
        req = {"sram_kib": SRAM_KIB, "shapes": [{k: s[k] for k in ("id", "topology", "csv")}
                                                | {"rows": s["array"][0], "cols": s["array"][1]} for s in part]}
        p = subprocess.Popen([py, str(ROOT / "scripts" / "scalesim_driver.py")], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert p.stdin is not None
        p.stdin.write(json.dumps(req))
        p.stdin.close()
        procs.append(p)
    out = {}
    for p in procs:
        assert p.stdout is not None and p.stderr is not None
        lines, err = p.stdout.read(), p.stderr.read()
        if p.wait() != 0:
            sys.exit(f"SCALE-Sim driver failed:\n{err[-4000:]}")
        for r in map(json.loads, lines.splitlines()):
            if r["stall_cycles"] != 0:
                sys.exit(f"{r['id']}: SCALE-Sim reports {r['stall_cycles']} stall cycles; the pins need stall-free runs")
            out[r.pop("id")] = r | {"compute_cycles": r["total_cycles"] - r["stall_cycles"]}
    return out


# --------------------------------------------------------------------------------------------- output

def _dims(s: dict) -> str:
    if "gemm" in s:
        return "M {M} N {N} K {K}".format(**s["gemm"])
    return "{R}x{S} C {C} K {K} {OY}x{OX} s{stride}".format(**s["layer"])


def _table(first: str, head: str, shapes: list[dict], row) -> int:
    """Print one line per shape: its id, then ``row(shape)``'s text; return how many were not ok."""
    w = max(len(s["id"]) for s in shapes)
    print(f"{first:<{w}}  {head}")
    bad = 0
    for s in shapes:
        text, ok = row(s)
        bad += not ok
        print(f"{s['id']:<{w}}  {text}")
    return bad


def print_tiles(shapes: list[dict], ss: dict) -> int:
    def row(s):
        mine, theirs = ours_tile(s), ss[s["id"]]["compute_cycles"]
        return (f"{'x'.join(map(str, s['array'])):>6}  {_dims(s):<30} {theirs:>10} {mine:>10}  "
                f"{'yes' if mine == theirs else 'NO'}", mine == theirs)
    bad = _table("shape", f"{'array':>6}  {'dims':<30} {'SCALE-Sim':>10} {'ours':>10}  equal", shapes, row)
    print(f"# tiles: {len(shapes) - bad} of {len(shapes)} equal")
    return bad


def print_deepopt(shapes: list[dict], ss: dict) -> int:
    def row(s):
        t, theirs = deepopt_terms(s), ss[s["id"]]["compute_cycles"]
        (J, K), L = s["array"], s["layer"]
        ok = theirs + 1 == t["folds_scalesim"] * (L["OY"] * L["OX"] + 2 * J + K - 2)
        return (f"{_dims(s):<30} {theirs:>10} {t['eq17']:>10} {t['folds_scalesim']:>6} {t['folds_eq17']:>6}  "
                f"{'holds' if ok else 'FAILS'}, SCALE-Sim {'>=' if theirs >= t['eq17'] else '<'} eq. 17", ok)
    bad = _table("layer", f"{'dims':<30} {'SCALE-Sim':>10} {'eq. 17':>10} {'folds':>6} {'eq17f':>6}  relation",
                 shapes, row)
    print(f"# deepopt: relation holds on {len(shapes) - bad} of {len(shapes)}")
    return bad


def pin(out: Path, name: str, shapes: list[dict], ss: dict, about: dict) -> None:
    keep = ("total_cycles", "stall_cycles", "compute_cycles", "total_cycles_incl_prefetch")
    rows = [s | {"scalesim": {k: ss[s["id"]][k] for k in keep}} for s in shapes]
    text = json.dumps({"about": about}, indent=1)[:-2] + ',\n "shapes": [\n  ' + ",\n  ".join(map(json.dumps, rows)) + "\n ]\n}\n"
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{name}.json").write_text(text)
    print(f"pinned {len(rows)} shapes to {out / (name + '.json')}", file=sys.stderr)


def _about(a, argv: list[str], version: str, wall: float) -> dict:
    git = subprocess.run(["git", "--no-optional-locks", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                         capture_output=True, text=True, check=False).stdout.strip() or "?"
    return {"scalesim": version, "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d"),
            "command": "python scripts/compare_scalesim.py " + portable_command(argv, "--python", "SCALESIM_VENV"),
            "scalesim_python": "$SCALESIM_VENV/bin/python", "dse_sweep": f"commit {git}",
            "config": {"dataflow": "ws", "sram_kib": SRAM_KIB, "interface_bandwidth": "CALC", "word_bytes": 1},
            "compute_cycles": "COMPUTE_REPORT.csv 'Total Cycles' - 'Stall Cycles' (0 stall cycles on every row)",
            "array": "[rows, cols] = [ArrayHeight, ArrayWidth]", "wall_s": round(wall, 1)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=__doc__.split("\n\n", 1)[1],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--python", default=None, help="SCALE-Sim's Python (scalesim 3.0.0, numpy<2); default "
                    "$SCALESIM_VENV/bin/python")
    ap.add_argument("--set", default="all", choices=("all", "tiles", "deepopt"), help="which shapes (default all)")
    ap.add_argument("--only", default=None, help="comma-separated classes or parts of shape ids to keep "
                    "(full_folds, partial_folds, stride2, one_output_row, gemm, non_square, campaign, deepopt, "
                    "or e.g. vgg16); not with --pin")
    ap.add_argument("--jobs", type=int, default=2, help="SCALE-Sim drivers run in parallel (default 2)")
    ap.add_argument("--list", action="store_true", help="print the shapes and our cycles, run nothing")
    ap.add_argument("--pin", default=None, metavar="DIR", help="write DIR/tiles.json and DIR/deepopt.json "
                    "(the whole set; --only is refused) for the tests")
    argv = sys.argv[1:] if argv is None else argv
    a = ap.parse_args(argv)
    if a.pin and (a.only or a.set != "all"):
        ap.error("--pin writes the whole set: no --only / --set")
    sets = {"tiles": class_shapes() + campaign_shapes() if a.set in ("all", "tiles") else [],
            "deepopt": deepopt_shapes() if a.set in ("all", "deepopt") else []}
    if a.only:
        keys = a.only.split(",")
        sets = {k: [s for s in v if s["class"] in keys or any(x in s["id"] for x in keys)] for k, v in sets.items()}
    if a.list:
        for s in sets["tiles"] + sets["deepopt"]:
            print(f"{s['id']}  {s['class']}  {'x'.join(map(str, s['array']))}  {_dims(s)}  ours {ours_tile(s)}")
        return 0
    py = scalesim_python(a)
    t0 = time.perf_counter()
    ss = run_scalesim(py, sets["tiles"] + sets["deepopt"], a.jobs)
    wall = time.perf_counter() - t0
    bad = print_tiles(sets["tiles"], ss) if sets["tiles"] else 0
    bad += print_deepopt(sets["deepopt"], ss) if sets["deepopt"] else 0
    print(f"# {scalesim_version(py)}; SCALE-Sim wall time {wall:.0f} s")
    if a.pin:
        about = _about(a, argv, scalesim_version(py), wall)
        for name, shapes in sets.items():
            pin(Path(a.pin), name, shapes, ss, about)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
