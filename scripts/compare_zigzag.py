"""ZigZag and dse-sweep side by side on the same inputs (issue 12, item 8).

    python scripts/compare_zigzag.py --zigzag-python $ZIGZAG_VENV/bin/python            # eyeriss_like, 5 layers
    python scripts/compare_zigzag.py --zigzag-python ... --case tpu_like --explain --json out.json  # resnet18.onnx
    python scripts/compare_zigzag.py --zigzag-python ... --zigzag-cache /tmp/zz   # rerun: ZigZag's results reused
    python scripts/compare_zigzag.py --zigzag-python ... --no-search --pin tests/data/zigzag  # store for the tests

About 4 minutes for eyeriss_like (ZigZag LOMA + SALSA, ours loma + salsa), 2-4 for tpu_like on 2 cores.

ZigZag (``zigzag-dse==3.9.1``) lives in its own virtual environment, never a dependency of ours::

    python3 -m venv $ZIGZAG_VENV && $ZIGZAG_VENV/bin/pip install zigzag-dse==3.9.1 six

Its side runs in a subprocess with that Python (``scripts/zigzag_driver.py``, JSON on stdout).
Cases:

* ``eyeriss_like``: our preset ``eyeriss_like`` == ZigZag's ``inputs/hardware/eyeriss_like.yaml``
  with the spatial unrolling D1: OX 14, D2: FY 3 x K 4 (a mapping YAML written to a temp dir).
  Default layers: ResNet-18 conv1, conv2_1 (layer1.0.conv1), conv3_2 (layer2.0.conv2), conv4_2
  (layer3.0.conv2), conv5_2 (layer4.0.conv2) of ``costmodel/zoo/resnet18.csv``.
* ``tpu_like``: ZigZag's ``inputs/hardware/tpu_like.yaml`` + ``inputs/mapping/tpu_like.yaml``,
  imported into a temp TOML by ``sweep import zigzag``, on ZigZag's ``inputs/workload/resnet18.onnx``
  (``--onnx`` for another file): ZigZag parses the file itself (one run of the whole network), we
  read the very same file with `costmodel.importers.onnx`; rows per Conv / Gemm node (21), matched
  by node name; layers of equal shape are searched once on our side. Default engines: LOMA only.
* any other of ZigZag's bundled accelerators (``--case edge_tpu_like``, ``meta_prototype``,
  ``tesla_npu_like``, ``ascend_like``, ``generic_array_cacti``, ``gemm_l1_l3``, and
  ``eyeriss_like --mapping default``): as tpu_like, with ``--mapping`` (default
  ``inputs/mapping/<case>.yaml``, ``<case>_like.yaml``, else ``default.yaml``; e.g. the ``_mixed``
  variants). ``--hint-only`` drops the fixed ``spatial_mapping`` of the default entry: ZigZag
  generates ``--nb-spatial`` unrollings per layer from the hint and keeps its best, we import a
  hint-only accelerator and our mappers search its unrollings (``spatial = search``,
  ``spatial_candidates`` 3 by default; ``--param KEY=VALUE`` passes other mapper parameters).
  Where the accelerator does not fix every array dim, part (a) costs ZigZag's mapping with the
  unrolling ZigZag chose for the layer. Pinned files: ``<case>[__<mapping>].json`` / ``.toml``.
  (gemm_l1 has no DRAM: ZigZag finds no valid mapping of ResNet-18's conv1 in its 115 KiB l1.)

Printed (first line: the git commit and whether costmodel/loopnest had uncommitted changes) per
layer and in total (sums over the rows):

(a) ZigZag's best mapping (LOMA, lpf_limit 6, opt energy) costed by ZigZag and by our
    ``sweep eval`` model (`costmodel.loopnest.reference.evaluate` of the translated mapping:
    ZigZag's temporal loops innermost first, per-operand memory-level boundaries from its
    per-level loop lists): energy and latency, ratio ours / ZigZag.
(b) each tool's searched best (``--engines``): ZigZag LOMA (lpf_limit 6) and SALSA; ours ``loma``
    (lpf_limit=6) and ``salsa`` (chains=4): energy and latency, ratios ours / ZigZag per engine;
    wall times (ZigZag: the driver's run, the cached run's when reused; ours: the searches).

Workload: eyeriss_like: ZigZag gets each layer as a one-layer YAML workload with its padding and
unpadded input size (as ZigZag's ONNX parser writes them; before model version 4 without them,
both tools then counting the padded input). Both clip an input tile to the unpadded input (ZigZag
``LayerNode.calc_tensor_dim``, ours `window.window_caps`). Both count only the input rows / columns a
strided window touches (ZigZag ``calc_pr_dimension_size``, ours `reference.window_rows` since model
version 3: a 1x1 stride-2 conv reads OY x OX pixels, not the (2 OY - 1) x (2 OX - 1) of its span).
Precisions W 8, I 8, O 16, O_final 8 (ZigZag's ONNX defaults, our presets, and the ``[precision]``
of the import).

Latency, how ZigZag counts (``zigzag/cost_model/cost_model.py``, ``calc_overall_latency``)::

    latency_total2 = ideal_temporal_cycle + stall_slack_comb + data_onloading_cycle
                     + data_offloading_cycle + systolic_drain_cycle

* ``ideal_temporal_cycle`` = product of the temporal loops = our compute cycles C.
* ``stall_slack_comb``: per memory port, the transfer cycles of each (operand, level, direction)
  within its allowed window (whole period when double-buffered: effective utilisation <= 50 %,
  else the period divided by the top irrelevant loop), combined per physical port; the largest
  stall over ports. Ours (since 695bd23): per transfer link at the port it touches, within the
  link's window (C, or C // T below a single-buffered level), transfers on one port adding
  (`costmodel/loopnest/reference.py` docstring, with the differences that remain).
* ``data_onloading_cycle``: the first fill of every level of W and I before computing can start
  (not overlapped). We do not count it.
* ``data_offloading_cycle``: the final outputs written from each O level up to the top after the
  last MAC, levels in series. We do not count it.
* ``systolic_drain_cycle``: array size - 1 along each systolic dimension (tpu_like only).

Measured (docs/zigzag.md; ``--explain`` prints the terms), same mapping, ours / ZigZag:

* eyeriss_like, commit d60910d, costmodel/loopnest clean: energy 0.979 (conv1), 0.999-1.000
  (others), total 0.995; latency 0.92 (conv1), 1.12 (conv5_2), 0.98-1.00 (others), total 1.04: the
  stall at sram_8KB, the single read_write port (128 b/cycle) feeding all 168 per-PE psum register
  files (rf_16B, single-buffered). conv1: ZigZag 903168 + 516000 + 71 + 1008, ours 903168 + 408576;
  conv5_2: ZigZag 1376256 + 2359260 + 1200 + 223, ours 1376256 + 2813312. ZigZag adds the
  excesses of the read-back and the write-up, each against its own window; ours times the port
  doing both in one window (reference.py docstring, difference (a)).
* tpu_like on resnet18.onnx (model version 4, 2026-11-26, the importer's per-word energy r_cost x
  bandwidth_min / bandwidth_max): network energy 0.999 (ZigZag's mapping and our ``loma`` best;
  1.010 in model version 3, which moved the padded input), latency 0.954 and 0.956. Over 10 % per
  layer: (1) ZigZag's
  ``data_onloading_cycle`` (12544-25088 cycles: the layer's whole input through the 64-bit DRAM
  port before the first MAC; ours lets a streaming load overlap compute) on short layers: layer1
  convs 0.82, layer2.0.conv1 0.69, layer3.0.conv1 0.82; (2) layer3.0.downsample 1.29: its DRAM
  traffic (input read 3136 + weights 4096 + outputs 6272 cycles at 64 bits per cycle) is 13504
  cycles, our latency; ZigZag's 10431 is below what its one read-write DRAM port can carry.
  Before model version 3 the 1x1 stride-2 downsample convs cost 1.17-1.77x ZigZag's energy on its
  mappings (our input tile was the window's span); now 0.996-0.999.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import hashlib
import json
import math
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from costmodel.loopnest.arch import load_accelerator  # noqa: E402
from costmodel.loopnest.mapping import Mapping, SpatialMapping  # noqa: E402
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
#: ZigZag's precisions for one-layer YAML workloads (= its ONNX parser's defaults and our presets').
PRECISION = {"W": 8, "I": 8, "O": 16, "O_final": 8}


def portable_command(argv: list[str], python_flag: str, venv: str) -> str:
    """``argv`` as a shell command to pin beside figures, with no path of one machine: the peer's
    Python after ``python_flag`` as ``$VENV/bin/python``, any other absolute path as its file name."""
    out, peer = [], False
    for x in argv:
        if peer:
            x = f"${venv}/bin/python"
        elif x.startswith("/"):
            x = Path(x).name
        peer = x == python_flag
        out.append(x if x.startswith("$") else shlex.quote(x))
    return " ".join(out)


def _zigzag_inputs(py: str) -> Path:
    out = subprocess.run([py, "-c", "import zigzag, pathlib; print(pathlib.Path(zigzag.__file__).parent / 'inputs')"],
                         capture_output=True, text=True, check=True)
    return Path(out.stdout.strip())


def _zigzag_version(py: str) -> str:
    out = subprocess.run([py, "-c", "import importlib.metadata as m; print(m.version('zigzag-dse'))"],
                         capture_output=True, text=True, check=False)
    return out.stdout.strip() or "unknown"


def _git_state() -> str:
    """The commit and whether costmodel/loopnest differs from it (read-only git calls)."""
    def git(*args):
        p = subprocess.run(["git", "--no-optional-locks", *args], cwd=ROOT, capture_output=True, text=True, check=False)
        return p.stdout.strip() if p.returncode == 0 else "?"
    dirty = git("status", "--porcelain", "--untracked-files=no", "--", "costmodel/loopnest")  # tracked files
    return (f"commit {git('rev-parse', '--short', 'HEAD')}, costmodel/loopnest "
            + ("clean" if not dirty else "with uncommitted changes" if dirty != "?" else "state unknown"))


def _eyeriss_layers(names: list[str] | None):
    net = load_network("resnet18")
    by_name = {l.name: l for l, _ in net}
    if not names:
        names = list(EYERISS_LAYERS)
    elif names == ["all"]:
        names = list(by_name)
    out = []
    for n in names:
        zoo = EYERISS_LAYERS.get(n, n)
        if zoo not in by_name:
            sys.exit(f"unknown layer {n!r}; known: {list(EYERISS_LAYERS)} or {list(by_name)}")
        out.append((n, by_name[zoo]))
    return out


def _setup(a, inputs: Path, td: Path):
    """(hardware YAML, mapping YAML, our accelerator, [(name, Layer)], ONNX file or None) of the case."""
    if a.case == "eyeriss_like" and not a.mapping and not a.hint_only:
        mp = td / "eyeriss_like_mapping.yaml"
        mp.write_text(EYERISS_MAPPING_YAML)
        layers = _eyeriss_layers(a.layers.split(",") if a.layers else None)
        return inputs / "hardware" / "eyeriss_like.yaml", mp, load_accelerator("eyeriss_like"), layers, None
    from costmodel.importers.onnx import read_onnx
    hw, mp, toml = inputs / "hardware" / f"{a.case}.yaml", _mapping_yaml(a, inputs), td / f"{a.case}.toml"
    if a.hint_only:
        mp = hint_only_yaml(mp, td)
    if not hw.is_file():
        sys.exit(f"--case {a.case}: no {hw} (ZigZag's bundled accelerators: "
                 f"{sorted(p.stem for p in (inputs / 'hardware').glob('*.yaml'))})")
    p = subprocess.run([sys.executable, "-m", "sweep.cli", "import", "zigzag", "--accelerator", str(hw),
                        "--mapping", str(mp), "--out", str(toml)], cwd=ROOT, capture_output=True, text=True, check=False)
    if p.returncode != 0:
        sys.exit(f"sweep import zigzag failed:\n{p.stdout}{p.stderr}")
    onnx = Path(a.onnx) if a.onnx else inputs / "workload" / "resnet18.onnx"
    layers = [(l.name, l) for l in read_onnx(onnx).network.layers]
    if a.layers and a.layers != "all":
        keep = a.layers.split(",")
        layers = [(n, l) for n, l in layers if n in keep]
    return hw, mp, load_accelerator(toml), layers, onnx


def _mapping_yaml(a, inputs: Path) -> Path:
    """--mapping (a file, or a name in ZigZag's inputs/mapping), else the case's own mapping YAML:
    inputs/mapping/<case>.yaml, <case>_like.yaml (meta_prototype), else default.yaml."""
    if a.mapping:
        given = Path(a.mapping)
        named = inputs / "mapping" / (a.mapping if a.mapping.endswith(".yaml") else f"{a.mapping}.yaml")
        if given.is_file() or not named.is_file():
            return given
        return named
    for stem in (a.case, f"{a.case}_like"):
        if (inputs / "mapping" / f"{stem}.yaml").is_file():
            return inputs / "mapping" / f"{stem}.yaml"
    return inputs / "mapping" / "default.yaml"


def hint_only_yaml(mp: Path, td: Path) -> Path:
    """A copy of mapping YAML ``mp`` whose ``default`` entry keeps only its ``spatial_mapping_hint``
    (ZigZag then generates the unrolling per layer; we import a hint-only accelerator). Without a
    hint, the hint is made of the fixed mapping's loop dims per array dim."""
    import yaml
    entries = yaml.safe_load(mp.read_text())
    for e in entries:
        if e.get("name") == "default":
            fixed = e.pop("spatial_mapping", None) or {}
            if not e.get("spatial_mapping_hint"):
                e["spatial_mapping_hint"] = {a: [str(x).split(",")[0].strip() for x in v] for a, v in fixed.items()}
    out = td / f"{mp.stem}_hint_only.yaml"
    out.write_text(yaml.safe_dump(entries, sort_keys=False))
    return out


def _padding(layer) -> dict:
    """ZigZag's padding of a layer with a known unpadded input (model version 4), as its ONNX parser
    writes it (``parser/onnx/conv_parser.py``): pr_loop_dims IX, IY, their unpadded sizes and
    (begin, end) pads, begin = floor(PX), end = 2 PX - begin; {} without an input size."""
    if layer.in_rows is None or layer.in_cols is None:
        return {}
    pads = [[math.floor(p), int(2 * p) - math.floor(p)] for p in (layer.PX, layer.PY)]
    return {"pr_loop_dims": ["IX", "IY"], "pr_loop_sizes": [layer.in_cols, layer.in_rows], "padding": pads}


def _run_zigzag(py: str, hw: Path, mp: Path, layers, onnx: Path | None, engine: str, lpf: int, dump: Path,
                cache: str | None = None, nb_spatial: int = 3) -> dict:
    """ZigZag's best mapping per layer (scripts/zigzag_driver.py in ``py``); with ``cache`` (a
    directory) a result of the very same request (inputs' text included) is reused. ``nb_spatial``:
    ZigZag's spatial candidates per layer when the mapping YAML leaves array dims to its hint.
    ``out["_wall_s"]``: the driver's wall time (the cached run's when reused)."""
    req = {"hardware": str(hw), "mapping": str(mp), "engine": engine, "lpf_limit": lpf, "opt": "energy"}
    if nb_spatial != 3:
        req["nb_spatial_mappings_generated"] = nb_spatial
    if onnx is not None:
        req["onnx"] = str(onnx)
    else:
        if any(l.G != 1 or l.DY != 1 or l.DX != 1 for _, l in layers):
            sys.exit("grouped / dilated layers are not passed to ZigZag by this script")
        req["layers"] = [{"name": n, "K": l.K, "C": l.C, "OY": l.OY, "OX": l.OX, "FY": l.FY, "FX": l.FX, "B": l.B,
                          "SY": l.SY, "SX": l.SX, "precision": PRECISION, **_padding(l)} for n, l in layers]
    same = {k: v for k, v in req.items() if k not in ("hardware", "mapping")}  # the temp mapping path varies
    key = hashlib.sha256(json.dumps([same, hw.read_text(), mp.read_text(), py], sort_keys=True).encode()).hexdigest()
    hit = Path(cache) / f"zigzag_{engine}_{key[:16]}.json" if cache else None
    if hit is not None and hit.is_file():
        return json.loads(hit.read_text())
    t0 = time.perf_counter()
    p = subprocess.run([py, str(ROOT / "scripts" / "zigzag_driver.py")], input=json.dumps({**req, "dump": str(dump / engine)}),
                       capture_output=True, text=True, check=False)
    if p.returncode != 0:
        sys.exit(f"ZigZag driver failed ({engine}):\n{p.stderr[-4000:]}")
    out = {r["layer"]: r for r in map(json.loads, p.stdout.splitlines()) if r}
    out["_wall_s"] = round(time.perf_counter() - t0, 2)
    if hit is not None:
        hit.parent.mkdir(parents=True, exist_ok=True)
        hit.write_text(json.dumps(out))
    return out


def zigzag_spatial(zz: dict) -> SpatialMapping:
    """ZigZag's spatial mapping of one layer ({array dim: {loop dim: factor}}) as ours (factor-1
    entries dropped)."""
    return SpatialMapping({a: tuple((d, int(round(f))) for d, f in v.items() if round(f) > 1)
                           for a, v in zz["spatial"].items() if any(round(f) > 1 for f in v.values())})


def translate(zz: dict, arch, own_spatial: bool = False) -> Mapping:
    """ZigZag's temporal mapping (per operand, per memory level, loops innermost first) -> our
    Mapping: the loops of O's levels concatenated (all operands share one ordering), boundaries
    = cumulative loop counts per operand level. Spatial: the accelerator's default, or with
    ``own_spatial`` the unrolling ZigZag chose for the layer (generated from its hint)."""
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
    return Mapping(zigzag_spatial(zz) if own_spatial else None, tuple(loops[i] for i in keep), b)


def _ours_search(layer, arch, mapper: str, params: dict, cache: dict) -> dict:
    """Our mapper's best (energy objective, seed 0); layers of equal shape are searched once
    (``wall_s``: the search's wall time, repeated for every layer of that shape)."""
    from sweep.commands.map_eval import map_layer
    key = (dataclasses.replace(layer, name=""), mapper)
    if key not in cache:
        t0 = time.perf_counter()
        r = map_layer(layer, arch, mapper, "energy", 0, params)
        cache[key] = {"energy_pj": r["energy_pj"], "latency_cycles": r["latency_cycles"], "mapping": r.get("mapping"),
                      "wall_s": time.perf_counter() - t0, "first": True}
    else:
        cache[key] = {**cache[key], "first": False}
    return cache[key]


def _ratio(a, b):
    return a / b if b and a is not None and math.isfinite(a) else float("nan")


def own_spatial(arch) -> bool:
    """Whether ZigZag chose the unrolling per layer (the accelerator fixes not every array dim)."""
    return any(a not in arch.spatial.dims for a in arch.array)


def _same_mapping(layer, arch, z: dict) -> dict:
    """(a): ZigZag's LOMA best costed by ZigZag and by our reference evaluator."""
    m = translate(z, arch, own_spatial(arch))
    rep = evaluate(layer, arch, m)
    return {"zigzag_energy_pj": z["energy_pj"], "ours_energy_pj": rep.energy_pj,
            "energy_ratio": _ratio(rep.energy_pj, z["energy_pj"]),
            "zigzag_latency": z["latency_cycles"], "ours_latency": rep.latency_cycles,
            "latency_ratio": _ratio(rep.latency_cycles, z["latency_cycles"]),
            "valid": rep.valid, "reason": rep.reason, "mapping": m.to_dict(),
            "zigzag_latency_terms": {k: z[k] for k in ("ideal_temporal_cycle", "stall_slack_comb",
                                                       "data_onloading_cycle", "data_offloading_cycle")},
            "ours_latency_terms": {"compute_cycles": rep.breakdown.get("compute_cycles"),
                                   "stall_cycles": rep.breakdown.get("stall_cycles")}}


def _rows(layers, arch, zz: dict, engines: list[str], a) -> list[dict]:
    params = {"loma": {"lpf_limit": a.lpf_limit, **a.params}, "salsa": {"chains": a.salsa_chains, **a.params}}
    rows, cache = [], {}
    for n, layer in layers:
        if n not in zz["loma"]:
            sys.exit(f"ZigZag returned no result for layer {n!r} (it has {list(zz['loma'])})")
        row = {"layer": n, "source_layer": layer.name, "same_mapping": _same_mapping(layer, arch, zz["loma"][n])}
        if not a.no_search:
            s: dict = {}
            for e in engines:
                ze, oe = zz[e][n], _ours_search(layer, arch, e, params[e], cache)
                s[f"zigzag_{e}"] = {"energy_pj": ze["energy_pj"], "latency_cycles": ze["latency_cycles"]}
                s[f"ours_{e}"] = {k: oe[k] for k in ("energy_pj", "latency_cycles")}
                s[f"{e}_energy_ratio"] = _ratio(oe["energy_pj"], ze["energy_pj"])
                s[f"{e}_latency_ratio"] = _ratio(oe["latency_cycles"], ze["latency_cycles"])
                s.setdefault("ours_mappings", {})[e] = oe["mapping"]
                s.setdefault("ours_wall_s", {})[e] = oe["wall_s"] if oe["first"] else 0.0
            s["best_energy_ratio"] = _ratio(min(s[f"ours_{e}"]["energy_pj"] for e in engines),
                                            min(s[f"zigzag_{e}"]["energy_pj"] for e in engines))
            row["searched"] = s
        rows.append(row)
    return rows


def _tot(rows, *path) -> float:
    s = 0.0
    for r in rows:
        v = r
        for k in path:
            v = v[k]
        s += v
    return s


def _print_same(rows, a, w: int) -> None:
    print(f"{a.case}: ZigZag's best mapping (LOMA, lpf_limit {a.lpf_limit}) costed by both (ours = sweep eval)")
    print(f"{'layer':{w}} {'ZZ energy pJ':>12} {'ours pJ':>12} {'ratio':>7} {'ZZ latency':>11} {'ours lat':>11} {'ratio':>7}")
    for r in rows:
        s = r["same_mapping"]
        print(f"{r['layer']:{w}} {s['zigzag_energy_pj']:12.4e} {s['ours_energy_pj']:12.4e} {s['energy_ratio']:7.4f} "
              f"{s['zigzag_latency']:11.0f} {s['ours_latency']:11.0f} {s['latency_ratio']:7.4f}"
              + ("" if s["valid"] else f"  INVALID: {s['reason']}"))
    valid = [r for r in rows if r["same_mapping"]["valid"]]
    ze, oe = _tot(valid, "same_mapping", "zigzag_energy_pj"), _tot(valid, "same_mapping", "ours_energy_pj")
    zl, ol = _tot(valid, "same_mapping", "zigzag_latency"), _tot(valid, "same_mapping", "ours_latency")
    left = f"  ({len(rows) - len(valid)} rows our model finds invalid left out)" if len(valid) < len(rows) else ""
    print(f"{'total':{w}} {ze:12.4e} {oe:12.4e} {_ratio(oe, ze):7.4f} {zl:11.0f} {ol:11.0f} {_ratio(ol, zl):7.4f}{left}")


def _print_explain(rows, w: int) -> None:
    print("\nlatency terms: ZigZag ideal_temporal + stall_slack_comb + onloading + offloading; ours compute + max stall")
    for r in rows:
        s = r["same_mapping"]
        t, o = s["zigzag_latency_terms"], s["ours_latency_terms"]
        st = o["stall_cycles"] or {}
        worst = max(st, key=st.get) if st else "-"
        print(f"{r['layer']:{w}} ZZ {t['ideal_temporal_cycle']:.0f} + {t['stall_slack_comb']:.0f} + "
              f"{t['data_onloading_cycle']:.0f} + {t['data_offloading_cycle']:.0f}; ours {o['compute_cycles']} + "
              f"{st.get(worst, 0):.0f} ({worst})")


def _print_searched(rows, engines: list[str], w: int, zz_wall: dict) -> None:
    cols = [f"{who}_{e}" for e in engines for who in ("zigzag", "ours")]
    print("\nsearched best, energy pJ (latency cycles); ratios ours / ZigZag per engine: energy, latency")
    print(f"{'layer':{w}} " + " ".join(f"{c.replace('zigzag_', 'ZZ ').replace('_', ' '):>21}" for c in cols)
          + " " + " ".join(f"{e + ' E':>7} {e + ' L':>7}" for e in engines))
    def cell(x: dict) -> str:
        return f"{x['energy_pj']:.4e} ({x['latency_cycles']:.0f})"

    for r in rows:
        s = r["searched"]
        print(f"{r['layer']:{w}} " + " ".join(f"{cell(s[c]):>21}" for c in cols) + " "
              + " ".join(f"{s[f'{e}_energy_ratio']:7.4f} {s[f'{e}_latency_ratio']:7.4f}" for e in engines))
    t = {c: {"energy_pj": _tot(rows, "searched", c, "energy_pj"),
             "latency_cycles": _tot(rows, "searched", c, "latency_cycles")} for c in cols}
    print(f"{'total':{w}} " + " ".join(f"{cell(t[c]):>21}" for c in cols) + " " + " ".join(
        f"{_ratio(t[f'ours_{e}']['energy_pj'], t[f'zigzag_{e}']['energy_pj']):7.4f} "
        f"{_ratio(t[f'ours_{e}']['latency_cycles'], t[f'zigzag_{e}']['latency_cycles']):7.4f}" for e in engines))
    ours_wall = {e: sum(r["searched"]["ours_wall_s"][e] for r in rows) for e in engines}
    print("wall s: " + ", ".join(f"ZigZag {e} {zz_wall.get(e, float('nan')):.1f}, ours {e} {ours_wall[e]:.1f} "
                                 f"(one search per distinct layer shape)" for e in engines))


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _stem(a, mp: Path) -> str:
    """File stem of a case's pinned files: ``<case>``, or ``<case>__<mapping>`` for a mapping YAML
    other than the case's own (``--mapping``)."""
    return a.case if (a.case == "eyeriss_like" and not a.mapping) or mp.stem in (a.case, f"{a.case}_like") else f"{a.case}__{mp.stem}"


def _pin(a, argv, layers, arch_ref: str, zz: dict, inputs: dict[str, Path], toml_text: str | None,
         stem: str) -> None:
    """--pin DIR: ZigZag's LOMA best per layer (its energy, latency and latency terms, spatial and
    per-operand temporal mapping), the layer and the translated mapping our evaluator reads, as
    ``DIR/<stem>.json``; for an imported accelerator also ``DIR/<stem>.toml``
    (tests/costmodel/loopnest/test_zigzag_pinned.py reads them, without ZigZag)."""
    out = Path(a.pin)
    out.mkdir(parents=True, exist_ok=True)
    arch = load_accelerator(arch_ref) if toml_text is None else None
    if toml_text is not None:
        head = (f"# ZigZag's inputs/hardware/{inputs['hardware'].name} + inputs/mapping/{inputs['mapping'].name} "
                f"(zigzag-dse {_zigzag_version(a.zigzag_python)}) as `sweep import zigzag` writes them\n"
                "# (see costmodel/importers/zigzag.py and README.md in this folder).\n")
        body = "".join(l for l in toml_text.splitlines(keepends=True) if not l.startswith("# "))
        (out / f"{stem}.toml").write_text(head + body)
        arch = load_accelerator(out / f"{stem}.toml")
    keep = ("energy_pj", "latency_cycles", "ideal_temporal_cycle", "stall_slack_comb", "data_onloading_cycle",
            "data_offloading_cycle", "spatial", "temporal", "mac_energy_pj", "energy_breakdown")
    rows = [{"name": n, "layer": dataclasses.asdict(l), "zigzag": {k: zz["loma"][n][k] for k in keep},
             "mapping": translate(zz["loma"][n], arch, own_spatial(arch)).to_dict()} for n, l in layers]
    about = {"zigzag": f"zigzag-dse {_zigzag_version(a.zigzag_python)}", "engine": "loma",
             "lpf_limit": a.lpf_limit, "opt": "energy",
             "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d"),
             "command": "python scripts/compare_zigzag.py " + portable_command(argv, "--zigzag-python", "ZIGZAG_VENV"),
             "dse_sweep": _git_state(),
             "zigzag_inputs_sha256": {k: _sha256(v) for k, v in inputs.items()}}
    if "_wall_s" in zz["loma"]:
        about["zigzag_wall_s"] = zz["loma"]["_wall_s"]
    head = {"about": about, "case": a.case, "accelerator": f"{stem}.toml" if toml_text is not None else arch_ref}
    text = json.dumps(head, indent=1)[:-2] + ',\n "layers": [\n  ' + ",\n  ".join(map(json.dumps, rows)) + "\n ]\n}\n"
    (out / f"{stem}.json").write_text(text)
    print(f"pinned {len(rows)} layers to {out / (stem + '.json')}", file=sys.stderr)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--zigzag-python", required=True, help="a Python with zigzag-dse 3.9.1 (+ six) installed")
    ap.add_argument("--case", default="eyeriss_like", help="eyeriss_like (our preset, 5 zoo layers) or the name "
                    "of any of ZigZag's bundled hardware YAMLs (tpu_like, edge_tpu_like, ...; imported by `sweep "
                    "import zigzag`, run on resnet18.onnx)")
    ap.add_argument("--mapping", default=None, help="imported cases: ZigZag's mapping YAML (a file or a name in "
                    "its inputs/mapping, e.g. tpu_like_mixed or a hint-only file); default <case>.yaml, "
                    "<case>_like.yaml, else default.yaml")
    ap.add_argument("--hint-only", action="store_true", help="imported cases: drop the mapping YAML's fixed "
                    "spatial_mapping from its default entry: ZigZag generates unrollings from the hint "
                    "(--nb-spatial per layer), we import a hint-only accelerator (our mappers: spatial = search)")
    ap.add_argument("--param", action="append", default=[], metavar="KEY=VALUE", help="extra parameter of our "
                    "mappers (repeatable), e.g. spatial=search, spatial_candidates=3")
    ap.add_argument("--nb-spatial", type=int, default=3, help="ZigZag's spatial mappings generated per layer "
                    "from a hint (its nb_spatial_mappings_generated; ours: spatial_candidates)")
    ap.add_argument("--layers", default=None, help="comma-separated layer names (eyeriss_like: conv1, conv2_1, "
                    "conv3_2, conv4_2, conv5_2 or zoo resnet18 names, or 'all'; tpu_like: ONNX node names, "
                    "default all)")
    ap.add_argument("--onnx", default=None, help="tpu_like: the ONNX file (default ZigZag's inputs/workload/resnet18.onnx)")
    ap.add_argument("--engines", default=None, help="search engines run by both tools, comma-separated "
                    "(loma, salsa); default loma,salsa for eyeriss_like, loma for tpu_like")
    ap.add_argument("--no-search", action="store_true", help="only part (a): ZigZag's LOMA best costed by both")
    ap.add_argument("--salsa-chains", type=int, default=4)
    ap.add_argument("--lpf-limit", type=int, default=6)
    ap.add_argument("--json", dest="json_out", default=None, help="also write all results to this JSON file")
    ap.add_argument("--explain", action="store_true", help="print both tools' latency terms per layer")
    ap.add_argument("--zigzag-cache", default=None, metavar="DIR", help="reuse ZigZag's results of an identical "
                    "request from DIR (written there on a miss): reruns after a change of ours skip ZigZag")
    ap.add_argument("--pin", default=None, metavar="DIR", help="write ZigZag's LOMA best per layer with its "
                    "mapping and our inputs to DIR/<case>.json (+ DIR/tpu_like.toml) for the tests")
    argv = sys.argv[1:] if argv is None else argv
    a = ap.parse_args(argv)
    a.params = {}
    for kv in a.param:
        k, sep, v = kv.partition("=")
        if not sep or not k:
            ap.error(f"--param {kv!r}: expected KEY=VALUE")
        a.params[k] = int(v) if v.isdigit() else v
    engines = (a.engines or ("loma,salsa" if a.case == "eyeriss_like" and not a.mapping else "loma")).split(",")
    if not set(engines) <= {"loma", "salsa"} or "loma" not in engines:
        ap.error("--engines: loma, optionally with salsa")

    state = _git_state()
    inputs = _zigzag_inputs(a.zigzag_python)
    with tempfile.TemporaryDirectory(prefix="compare_zigzag_") as td:
        hw, mp, arch, layers, onnx = _setup(a, inputs, Path(td))
        zz = {e: _run_zigzag(a.zigzag_python, hw, mp, layers, onnx, e, a.lpf_limit, Path(td), a.zigzag_cache,
                             a.nb_spatial)
              for e in (["loma"] if a.no_search else engines)}
        if a.pin:
            toml = Path(td) / f"{a.case}.toml"
            ins = {"hardware": hw} if onnx is None else {"hardware": hw, "mapping": mp, "onnx": onnx}
            _pin(a, argv, layers, a.case, zz, ins, toml.read_text() if onnx is not None else None, _stem(a, mp))
    rows = _rows(layers, arch, zz, engines, a)

    w = max(10, *(len(r["layer"]) for r in rows))
    print(f"# {state}; workload: {onnx or 'costmodel/zoo/resnet18.csv'}")
    _print_same(rows, a, w)
    if a.explain:
        _print_explain(rows, w)
    if not a.no_search:
        _print_searched(rows, engines, w, {e: zz[e].get("_wall_s", float("nan")) for e in zz})
    if a.json_out:
        Path(a.json_out).write_text(json.dumps({"case": a.case, "state": state, "lpf_limit": a.lpf_limit,
                                                "engines": engines, "rows": rows, "zigzag": zz}, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
