"""AccelForge and dse-sweep side by side on the same inputs (issue 31, "A second peer: AccelForge").

    python scripts/compare_accelforge.py --accelforge-python $ACCELFORGE_VENV/bin/python                 # eyeriss_like, 5 layers
    python scripts/compare_accelforge.py --accelforge-python ... --case tpu_like                         # same 5 layers on tpu_like
    python scripts/compare_accelforge.py --accelforge-python ... --case llama                            # Llama-3-8B decode matmuls
    python scripts/compare_accelforge.py --accelforge-python ... --pin tests/data/accelforge              # store for the tests
    python scripts/compare_accelforge.py --accelforge-python ... --search --time-limit 3600               # + each tool's own search

Under a minute per case (our LOMA searches, AccelForge's model once per row); ``--search`` adds
AccelForge's FFM mapper on ResNet-18 layer1.0.conv1 on eyeriss_like (about 20 minutes on 2 cores)
and our ``loma`` / ``salsa`` on the same layer.

AccelForge (PyPI ``accelforge``, the Timeloop / Accelergy line; needs Python 3.12) lives in its
own virtual environment, never a dependency of ours (docs/accelforge.md, "Setup")::

    ~/.pyenv/versions/3.12.*/bin/python -m venv $ACCELFORGE_VENV && $ACCELFORGE_VENV/bin/pip install accelforge
    apt-get install -y graphviz        # its mapper renders an SVG with `dot` on every run

Its side runs in a subprocess with that Python (``scripts/accelforge_driver.py``, JSON on stdout):
our accelerator becomes an AccelForge architecture with OUR energies per action (each memory's
read / write action costs our pJ per word, ``bits_per_action`` = our ``word_bits``; the MAC's
compute action our ``mac_pj``; leakage and area 0; no component model, no CACTI), the shared
memories above a ``PE`` container with one spatial fanout per array dim, the per-PE memories below
it; the layer becomes one Einsum ``output[b, k, oy, ox] = input[b, c, IY: SY oy + DY fy, IX: SX
ox + DX fx] * weight[k, c, fy, fx]`` (the padded input, as our zoo layers are costed); our mapping
becomes a LoopTree (a storage node per operand and memory at its boundary, the temporal loops
with their tile shapes, the spatial loops between the shared and the per-PE memories).

Cases (rows: our ``loma`` best mapping, lpf_limit 6, energy objective, seed 0):

* ``eyeriss_like``: ResNet-18 conv1, layer1.0.conv1, layer2.0.conv2, layer3.0.conv2,
  layer4.0.conv2 of ``costmodel/zoo/resnet18.csv`` (the ZigZag table's layers) on our preset.
* ``tpu_like``: the same five layers on our ``tpu_like`` preset.
* ``llama``: Llama-3-8B decode q_proj and ffn_up at batch 1 and batch 8 (context 4096) on
  eyeriss_like and on tpu_like (the unfused step in the accelerator's precision, as pinned).

Printed per row: energy and latency of the same mapping in both tools, ratio ours / AccelForge,
then the decomposition of the energy per (operand, memory): ours, then ours with each of
AccelForge's counting conventions applied in turn (docs/accelforge.md, "Conventions"),

(b) ``per bit``: an access costs bits / bits_per_action actions (AccelForge
    ``TensorHolder._get_values_per_action``), not ceil(tile bits / word_bits) per transfer;
(a) ``per MAC``: every MAC reads its weight and its input from the innermost level holding them
    (AccelForge ``analyze_compute``: one read per tensor per compute), where our MAC keeps its
    operand while operand-irrelevant loops run innermost;
(c) ``precision``: one precision per (tensor, memory) (AccelForge ``bits_per_value``), where ours
    moves a complete output at O_final and a partial sum at O; the AccelForge architecture gets
    O_final at a memory all of whose O traffic is final in our model, O elsewhere (`af_bits`),

whose last column is AccelForge's prediction from our counts, against AccelForge's own number
(residual). Latency: ours = compute cycles + the worst stall per transfer window; AccelForge's =
the largest component latency (each memory: its word accesses per instance per port, reads and
writes added on a shared port; the MAC array: compute cycles), all overlapped.

``--search``: each tool's own search on layer1.0.conv1, eyeriss_like: AccelForge's FFM mapper
(``Spec.map_workload_to_arch``, energy metric, our spatial unrolling pinned through the fanouts'
``loop_bounds``; ``--time-limit`` seconds, its ``mapper.time_limit``; ``--free-spatial`` lets it
choose the unrolling) and ours (``loma`` lpf_limit 6, ``salsa`` 4 chains): best energy each, wall
times side by side; each best is also costed by the other tool (AccelForge's LoopTree translated
to our mapping by `translate_looptree`; ours evaluated by AccelForge), with our prediction of
AccelForge's figure from our counts.

``--pin DIR`` writes DIR/<case>.json (AccelForge's version, the command, per row the layer, our
mapping, the AccelForge bits, its energy per (tensor, component, action), actions and latency
per component) for ``tests/costmodel/loopnest/test_accelforge_pinned.py``, which needs no
AccelForge.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import math
import shlex
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from costmodel.loopnest.arch import load_accelerator  # noqa: E402
from costmodel.loopnest.mapping import Mapping  # noqa: E402
from costmodel.loopnest.reference import evaluate, operand_bits  # noqa: E402
from costmodel.transformer import build_transformer, transformer_config  # noqa: E402
from costmodel.zoo import load_network  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from compare_zigzag import portable_command  # noqa: E402

RESNET_LAYERS = ("conv1", "layer1.0.conv1", "layer2.0.conv2", "layer3.0.conv2", "layer4.0.conv2")
LLAMA_LAYERS = ("q_proj", "ffn_up")
LLAMA_BATCHES = (1, 8)
TENSOR = {"W": "weight", "I": "input", "O": "output"}
SEARCH_LAYER = "layer1.0.conv1"


# ---------------------------------------------------------------------------------------------
# the rows of a case

def case_rows(case: str, layers: list[str] | None = None) -> list[tuple[str, str, object]]:
    """[(row name, accelerator preset, Layer)] of ``case``. The ResNet-18 layers without their
    unpadded input size (``in_rows`` / ``in_cols`` None): AccelForge's Einsum has no padding and
    reads the padded window, so both tools cost the padded input (convention (e), docs/accelforge.md)."""
    if case in ("eyeriss_like", "tpu_like"):
        by = {l.name: l.with_(in_rows=None, in_cols=None) for l, _ in load_network("resnet18")}
        names = layers or list(RESNET_LAYERS)
        bad = [n for n in names if n not in by]
        if bad:
            sys.exit(f"unknown layer(s) {bad}; resnet18 has {list(by)}")
        return [(n, case, by[n]) for n in names]
    if case == "llama":
        rows = []
        for arch in ("eyeriss_like", "tpu_like"):
            for b in LLAMA_BATCHES:
                # pinned with the unfused step in the accelerator's precision (INT8), not the
                # bfloat16 checkpoint's 16 bits
                net = build_transformer(transformer_config("llama3_8b").at_accelerator_precision(), phase="decode",
                                        batch=b, context=4096, fusion="unfused")
                by = {l.name: l for l, _ in net}
                for n in layers or LLAMA_LAYERS:
                    rows.append((f"{arch}:b{b}:{n}", arch, by[n]))
        return rows
    sys.exit(f"--case {case!r}: eyeriss_like, tpu_like or llama")


# ---------------------------------------------------------------------------------------------
# the request to the driver

def arch_request(arch) -> dict:
    """Our accelerator as the driver reads it (memories outermost first)."""
    mems = []
    for m in reversed(arch.memories):
        if m.private_to and set(m.private_to) != set(arch.array):
            raise ValueError(f"{arch.name}: memory {m.name} private to {m.private_to}: only per-PE or shared "
                             "memories are translated")
        mems.append({"name": m.name, "size_bits": m.size_bits, "operands": list(m.operands), "read_pj": m.read_pj,
                     "write_pj": m.write_pj, "word_bits": m.word_bits, "read_bw": m.read_bw, "write_bw": m.write_bw,
                     "private": bool(m.private_to), "shared_port": m.shared_port})
    if arch.accumulator_pj is not None:
        raise ValueError(f"{arch.name}: an [accumulator] has no AccelForge counterpart here")
    return {"name": arch.name, "mac_pj": arch.mac_pj, "array": dict(arch.array), "memories": mems}


def _layer_dict(layer) -> dict:
    return {k: getattr(layer, k) for k in ("K", "C", "OY", "OX", "FY", "FX", "B", "SY", "SX", "DY", "DX")}


def _with_spatial(layer, arch, mapping: Mapping) -> Mapping:
    """``mapping`` with its spatial unrolling fitted to the layer (the arch's default if none)."""
    sp = (mapping.spatial if mapping.spatial is not None else arch.spatial).fit(layer)
    return Mapping(sp, mapping.temporal.loops, mapping.boundaries)


def loop_tree_form(layer, arch, mapping: Mapping) -> tuple[Mapping, dict[str, int]]:
    """``mapping`` in a form AccelForge's LoopTree can hold, and the refetch factor it costs there.

    A LoopTree keeps the array's spatial loops below every shared memory's storage node and
    above every per-PE one, and refuses a temporal loop between a spatial loop and a storage
    node below it that indexes a rank the spatial loop indexes (``Mapping._get_single_tensor_mapping``:
    "a spatial loop above a temporal loop above a storage node ... not fanned out by the spatial
    loop"). Where a per-PE W or I level's boundary lies above a shared level's, its boundary is
    lowered across the operand-irrelevant loops at the top of its own loops: the same mapping
    in our model (those loops directly above the boundary keep the tile stationary, R of `evaluate`),
    but AccelForge refills a tile on every iteration of every loop above its storage node
    (convention (d)). Returns (the mapping, {"op|memory": product of the loops moved out}).

    Raises:
        ValueError: no such lowering separates the per-PE from the shared boundaries.
    """
    from costmodel.loopnest.mapping import RELEVANT
    m = mapping.resolve(arch)
    loops = [(d, f) for d, f in m.temporal.loops]
    top = arch.memories[-1].name
    b = {op: list(m.boundaries[op]) for op in ("W", "I", "O")}
    shared = [x for op in b for lv, x in zip(arch.levels(op), b[op]) if not lv.private_to and lv.name != top]
    floor = min(shared) if shared else len(loops)
    moved: dict[str, int] = {}
    for op in ("W", "I", "O"):
        for i, lv in enumerate(arch.levels(op)):
            if not lv.private_to or b[op][i] <= floor:
                continue
            low = b[op][i - 1] if i else 0
            x = b[op][i]
            while x > floor and x > low and loops[x - 1][0] not in RELEVANT[op] and op != "O":
                x -= 1
                moved[f"{op}|{lv.name}"] = moved.get(f"{op}|{lv.name}", 1) * loops[x][1]
            if x > floor:
                raise ValueError(f"{layer.name}: {op} at {lv.name} holds {b[op][i]} loops, a shared memory only "
                                 f"{floor}: no LoopTree with the array between them")
            b[op][i] = x
    return Mapping(m.spatial, m.temporal.loops, {op: tuple(v) for op, v in b.items()}), moved


# ---------------------------------------------------------------------------------------------
# our counts under AccelForge's conventions

def _variant(arch, word_one: bool, bits: dict | None, per_bit_pj: bool):
    """``arch`` with every memory's word 1 bit (``word_one``; energies per bit if ``per_bit_pj``)
    and precisions ``bits`` (None: unchanged)."""
    mems = []
    for m in arch.memories:
        if word_one:
            k = m.word_bits if per_bit_pj else 1
            m = dataclasses.replace(m, word_bits=1, read_bw=m.read_bw / m.word_bits, write_bw=m.write_bw / m.word_bits,
                                    read_pj=m.read_pj / k, write_pj=m.write_pj / k)
        mems.append(m)
    return dataclasses.replace(arch, memories=tuple(mems),
                               precisions=dict(bits) if bits is not None else dict(arch.precisions))


def _per_level(rep) -> dict[tuple[str, str], dict]:
    return {(op, c["memory"]): c for op in ("W", "I", "O") for c in rep.breakdown["operands"][op]}


def values(layer, arch, mapping: Mapping) -> dict[tuple[str, str], dict]:
    """Values (elements) our model moves per (operand, memory): {"reads", "writes", "partial"}
    (``partial``: the O values among them at partial-sum precision), from our model on ``arch``
    with 1-bit words and 1-bit (2-bit partial sums) precisions."""
    lay = dataclasses.replace(layer, fixed_bits=())
    one = _per_level(evaluate(lay, _variant(arch, True, {"W": 1, "I": 1, "O": 1, "O_final": 1}, False), mapping))
    two = _per_level(evaluate(lay, _variant(arch, True, {"W": 1, "I": 1, "O": 2, "O_final": 1}, False), mapping))
    return {k: {"reads": v["reads"], "writes": v["writes"],
                "partial": (two[k]["reads"] + two[k]["writes"]) - (v["reads"] + v["writes"])} for k, v in one.items()}


def af_bits(layer, arch, mapping: Mapping) -> dict:
    """The precisions of the AccelForge architecture for this mapping: W, I and O (partial sums)
    as ours (`operand_bits`), and per memory serving O (``O_mem``) O_final where every O value our
    model moves at that memory is final, else O (AccelForge has one precision per tensor and
    memory: convention (c))."""
    b = operand_bits(layer, arch)
    v = values(layer, arch, mapping)
    o_mem = {m.name: (b["O_final"] if v[("O", m.name)]["partial"] == 0 else b["O"]) for m in arch.levels("O")}
    return {"W": b["W"], "I": b["I"], "O": b["O"], "O_final": b["O_final"], "O_mem": o_mem}


def mac_run(mapping: Mapping, op: str) -> int:
    """R of the MAC boundary: the product of the run of ``op``-irrelevant temporal loops
    innermost, across which our MAC keeps its W or I operand (reads of the innermost level =
    loads into the MAC / R); AccelForge reads the operand for every MAC (convention (a))."""
    from costmodel.loopnest.mapping import RELEVANT
    r = 1
    for d, f in mapping.temporal.loops:
        if f == 1:
            continue
        if d in RELEVANT[op]:
            break
        r *= f
    return r


def decompose(layer, arch, mapping: Mapping, bits: dict, refetch: dict[str, int] | None = None) -> dict:
    """Per (operand, memory) our energy and, in turn, with AccelForge's conventions (b) per bit,
    (a) per-MAC operand reads and (c) one precision per (tensor, memory) applied; the last,
    ``pred``, is AccelForge's energy predicted from our counts, with its read / write actions,
    after (d): ``refetch`` ({"op|memory": R}, `loop_tree_form`) multiplies the fills of that
    level and the reads of the level above serving them.

    Returns {"levels": {"W|rf_64B_W": {"ours", "per_bit", "per_mac", "pred", "pred_reads",
    "pred_writes", "ours_reads", "ours_writes", "values_reads", "values_writes"}}, "mac":
    macs x mac_pj, "ours": total, "per_bit", "per_mac", "pred": totals (MAC included)}."""
    rep = evaluate(layer, arch, mapping)
    if not rep.valid:
        raise ValueError(f"{layer.name}: our model finds the mapping invalid: {rep.reason}")
    ours = _per_level(rep)
    pb = _per_level(evaluate(layer, _variant(arch, True, None, True), mapping))
    v = values(layer, arch, mapping)
    mem = {m.name: m for m in arch.memories}
    out = {}
    refetch = refetch or {}
    for op in ("W", "I", "O"):
        inner = arch.levels(op)[0].name
        lv = arch.levels(op)
        for j, m in enumerate(lv):
            k = (op, m.name)
            e_b = pb[k]["energy_pj"]
            e_a = e_b
            vr, vw = v[k]["reads"], v[k]["writes"]
            if op in ("W", "I") and m.name == inner:   # (a): no operand kept in the MAC: reads x R
                r_mac = mac_run(mapping, op)
                e_a = e_b + (r_mac - 1) * pb[k]["reads"] * mem[m.name].read_pj / mem[m.name].word_bits
                vr = vr * r_mac
            e_c = (vr * m.read_pj + vw * m.write_pj) * (bits["O_mem"][m.name] if op == "O" else bits[op]) / m.word_bits
            vw *= refetch.get(f"{op}|{m.name}", 1)                 # (d): fills of a lowered level
            if j:
                vr *= refetch.get(f"{op}|{lv[j - 1].name}", 1)     # (d): and the reads serving them
            p = bits["O_mem"][m.name] if op == "O" else bits[op]
            pr, pw = vr * p / m.word_bits, vw * p / m.word_bits
            out[f"{op}|{m.name}"] = {"ours": ours[k]["energy_pj"], "per_bit": e_b, "per_mac": e_a, "precision": e_c,
                                     "pred": pr * m.read_pj + pw * m.write_pj, "pred_reads": pr, "pred_writes": pw,
                                     "ours_reads": ours[k]["reads"], "ours_writes": ours[k]["writes"],
                                     "values_reads": vr, "values_writes": vw}
    mac = rep.breakdown["mac_energy_pj"]
    tot = {s: mac + sum(x[s] for x in out.values()) for s in ("ours", "per_bit", "per_mac", "precision", "pred")}
    return {"levels": out, "mac": mac, **tot, "ours_latency": rep.latency_cycles,
            "compute_cycles": rep.breakdown["compute_cycles"], "stall_cycles": rep.breakdown["stall_cycles"]}


def af_level_energy(af: dict, op: str, mem: str) -> float:
    """AccelForge's energy of tensor ``op`` at memory ``mem`` (reads + writes), pJ."""
    t = TENSOR[op]
    return af["energy"].get(f"{mem}|{t}|read", 0.0) + af["energy"].get(f"{mem}|{t}|write", 0.0)


# ---------------------------------------------------------------------------------------------
# running both sides

def _accelforge_version(py: str) -> str:
    p = subprocess.run([py, "-c", "import importlib.metadata as m, json, pathlib, accelforge; "
                        "f = pathlib.Path(accelforge.__file__).parent / 'scm_version.json'; "
                        "s = json.loads(f.read_text()) if f.is_file() else {}; "
                        "print(m.version('accelforge'), s.get('node', ''))"], capture_output=True, text=True, check=False)
    return p.stdout.strip() or "unknown"


def run_driver(py: str, req: dict) -> list[dict]:
    p = subprocess.run([py, str(ROOT / "scripts" / "accelforge_driver.py")], input=json.dumps(req),
                       capture_output=True, text=True, check=False)
    if p.returncode != 0:
        sys.exit(f"AccelForge driver failed:\n{p.stderr[-4000:]}")
    return [json.loads(l) for l in p.stdout.splitlines() if l.strip().startswith("{")]


def our_mapping(layer, arch, mapper: str = "loma", params: dict | None = None) -> tuple[Mapping, dict]:
    from sweep.commands.map_eval import map_layer
    t0 = time.perf_counter()
    r = map_layer(layer, arch, mapper, "energy", 0, params or {"lpf_limit": 6})
    r["wall_s"] = time.perf_counter() - t0
    return Mapping.from_dict(r["mapping"]), r


def _git_state() -> str:
    def git(*args):
        p = subprocess.run(["git", "--no-optional-locks", *args], cwd=ROOT, capture_output=True, text=True, check=False)
        return p.stdout.strip() if p.returncode == 0 else "?"
    dirty = git("status", "--porcelain", "--untracked-files=no", "--", "costmodel/loopnest")
    return (f"commit {git('rev-parse', '--short', 'HEAD')}, costmodel/loopnest "
            + ("clean" if not dirty else "with uncommitted changes" if dirty != "?" else "state unknown"))


def compare(a, rows) -> list[dict]:
    """Our mapping per row, AccelForge's evaluation of it, the decomposition."""
    archs = {n: load_accelerator(n) for n in {r[1] for r in rows}}
    out = []
    jobs = {}
    for name, an, layer in rows:
        arch = archs[an]
        m, r = our_mapping(layer, arch)
        m = _with_spatial(layer, arch, m)
        m2, moved = loop_tree_form(layer, arch, m)
        e1, e2 = evaluate(layer, arch, m).energy_pj, evaluate(layer, arch, m2).energy_pj
        if e1 != e2:
            raise AssertionError(f"{name}: the LoopTree form changes our energy ({e1} -> {e2})")
        m = m2
        bits = af_bits(layer, arch, m)
        d = m.to_dict()
        jobs.setdefault(an, []).append({"name": name, "layer": _layer_dict(layer), "spatial": d["spatial"],
                                        "temporal": d["temporal"], "boundaries": d["boundaries"], "bits": bits})
        out.append({"name": name, "arch": an, "layer": dataclasses.asdict(layer), "mapping": d, "bits": bits,
                    "refetch": moved,
                    "ours_search": {"energy_pj": r["energy_pj"], "latency_cycles": r["latency_cycles"],
                                    "wall_s": r["wall_s"]}})
    af = {}
    for an, js in jobs.items():
        req = {"arch": arch_request(archs[an]), "evaluate": js, "dump": a.dump}
        for res in run_driver(a.accelforge_python, req):
            af[res["name"]] = res
    for row in out:
        arch = archs[row["arch"]]
        from costmodel.workload import Layer
        layer = Layer(**row["layer"])
        dec = decompose(layer, arch, Mapping.from_dict(row["mapping"]), row["bits"], row["refetch"])
        row["accelforge"] = {k: af[row["name"]][k] for k in ("energy_pj", "latency_cycles", "energy", "actions",
                                                             "latency", "capacity_relaxed", "mapping_yaml")}
        row["decomposition"] = dec
    return out


# ---------------------------------------------------------------------------------------------
# printing

def _r(a, b) -> float:
    return a / b if b else float("nan")


def print_rows(rows, w: int) -> None:
    print(f"{'row':{w}} {'ours pJ':>12} {'AF pJ':>12} {'ratio':>7} {'ours lat':>10} {'AF lat':>10} {'ratio':>7}  "
          f"AF bottleneck")
    te = ta = tl = tal = 0.0
    for r in rows:
        d, af = r["decomposition"], r["accelforge"]
        lat = af["latency"]
        bott = max(lat, key=lat.get) if lat else "-"
        print(f"{r['name']:{w}} {d['ours']:12.4e} {af['energy_pj']:12.4e} {_r(d['ours'], af['energy_pj']):7.4f} "
              f"{d['ours_latency']:10.0f} {af['latency_cycles']:10.0f} {_r(d['ours_latency'], af['latency_cycles']):7.4f}  "
              f"{bott}")
        te += d["ours"]
        ta += af["energy_pj"]
        tl += d["ours_latency"]
        tal += af["latency_cycles"]
    print(f"{'total':{w}} {te:12.4e} {ta:12.4e} {_r(te, ta):7.4f} {tl:10.0f} {tal:10.0f} {_r(tl, tal):7.4f}")


def print_decomposition(rows) -> None:
    print("\nenergy per (operand, memory), pJ: ours; with AccelForge's conventions (b) per bit, (a) per-MAC "
          "operand reads, (c) one precision per memory = prediction; AccelForge; AF / prediction")
    for r in rows:
        d, af = r["decomposition"], r["accelforge"]
        print(f"-- {r['name']} ({r['arch']}), AccelForge O bits per memory {r['bits']['O_mem']}")
        if r["accelforge"].get("capacity_relaxed"):
            print(f"   AccelForge capacity relaxed (unbounded) at {r['accelforge']['capacity_relaxed']}")
        if r.get("refetch"):
            print(f"   (d) LoopTree form: per-PE boundaries lowered across {r['refetch']} (our energy unchanged)")
        print(f"   {'level':18} {'ours':>12} {'(b) per bit':>12} {'(a) per MAC':>12} {'(c) precis.':>12} {'(d) pred':>12} "
              f"{'AccelForge':>12} {'AF/pred':>9} {'ours/AF':>8}")
        for k, x in d["levels"].items():
            op, mem = k.split("|")
            e = af_level_energy(af, op, mem)
            print(f"   {k:18} {x['ours']:12.5e} {x['per_bit']:12.5e} {x['per_mac']:12.5e} {x['precision']:12.5e} "
                  f"{x['pred']:12.5e} {e:12.5e} {_r(e, x['pred']):9.6f} {_r(x['ours'], e):8.4f}")
        mac_af = sum(v for k, v in af["energy"].items() if k.endswith("|compute"))
        print(f"   {'MAC':18} " + f"{d['mac']:12.5e} " * 5 + f"{mac_af:12.5e} "
              f"{_r(mac_af, d['mac']):9.6f} {_r(d['mac'], mac_af):8.4f}")
        print(f"   {'total':18} {d['ours']:12.5e} {d['per_bit']:12.5e} {d['per_mac']:12.5e} {d['precision']:12.5e} "
              f"{d['pred']:12.5e} {af['energy_pj']:12.5e} {_r(af['energy_pj'], d['pred']):9.6f} "
              f"{_r(d['ours'], af['energy_pj']):8.4f}")
        print(f"   ours/AF {_r(d['ours'], af['energy_pj']):.4f} = (b) {_r(d['ours'], d['per_bit']):.4f} x "
              f"(a) {_r(d['per_bit'], d['per_mac']):.4f} x (c) {_r(d['per_mac'], d['precision']):.4f} x "
              f"(d) {_r(d['precision'], d['pred']):.4f} x residual {_r(d['pred'], af['energy_pj']):.6f}; latency: ours {d['compute_cycles']} compute + "
              f"{max(d['stall_cycles'].values()):.0f} stall, AF {', '.join(f'{k} {v:.0f}' for k, v in af['latency'].items())}")


# ---------------------------------------------------------------------------------------------
# each tool's own search

def translate_looptree(text: str, arch) -> Mapping:
    """AccelForge's best LoopTree as the driver prints it (one node a line, top first:
    ``[weight, input in sram_1M]``, ``T-k in [0..8) shape=8``, ``S-D2-k in [0..4) shape=2``)
    -> our Mapping: temporal loops innermost first (factor = the loop's iteration count),
    the spatial loops per array dim, per (operand, memory) the temporal loops below its node."""
    import re
    op_of = {v: k for k, v in TENSOR.items()}
    temporal, spatial, holders = [], {}, []
    for line in text.splitlines():
        line = line.strip()
        m = re.match(r"\[(.+) in (\S+)\]$", line)
        if m:
            holders.append(([t.strip() for t in m.group(1).split(",")], m.group(2), len(temporal)))
            continue
        m = re.match(r"T-(\w+) in \[0\.\.(\d+)\)", line)
        if m:
            temporal.append((m.group(1).upper(), int(m.group(2))))
            continue
        m = re.match(r"S-(\w+)-(\w+) in \[0\.\.(\d+)\)", line)
        if m:
            if int(m.group(3)) > 1:
                spatial.setdefault(m.group(1), []).append((m.group(2).upper(), int(m.group(3))))
    n = len(temporal)
    loops = [(d, f) for d, f in reversed(temporal)]          # innermost first
    b = {op: {} for op in ("W", "I", "O")}
    for tensors, comp, above in holders:
        for t in tensors:
            b[op_of[t]][comp] = n - above
    bounds = {op: tuple(b[op].get(m.name, n) for m in arch.levels(op)) for op in b}
    keep = [i for i, (_, f) in enumerate(loops) if f > 1]
    idx = {i: sum(1 for k in keep if k < i) for i in range(n + 1)}
    from costmodel.loopnest.mapping import SpatialMapping
    return Mapping(SpatialMapping({a: tuple(v) for a, v in spatial.items()}), tuple(loops[i] for i in keep),
                   {op: tuple(idx[x] for x in v) for op, v in bounds.items()})

def run_search(a) -> dict:
    arch = load_accelerator("eyeriss_like")
    layer = next(l for l, _ in load_network("resnet18") if l.name == SEARCH_LAYER)
    ours = {}
    for mapper, params in (("loma", {"lpf_limit": 6}), ("salsa", {"chains": 4})):
        m, r = our_mapping(layer, arch, mapper, params)
        ours[mapper] = {"energy_pj": r["energy_pj"], "latency_cycles": r["latency_cycles"], "wall_s": r["wall_s"],
                        "mapping": r["mapping"], "params": params}
    m = _with_spatial(layer, arch, Mapping.from_dict(ours["loma"]["mapping"]))
    bits = af_bits(layer, arch, m)
    job = {"name": SEARCH_LAYER, "layer": _layer_dict(layer), "bits": bits,
           "spatial": None if a.free_spatial else m.to_dict()["spatial"], "time_limit_s": a.time_limit}
    evals, forms = [], {}
    for k, v in ours.items():   # our bests costed by AccelForge too (where a LoopTree holds them)
        try:
            mk, moved = loop_tree_form(layer, arch, _with_spatial(layer, arch, Mapping.from_dict(v["mapping"])))
        except ValueError as e:
            v["accelforge"] = str(e)
            continue
        bk, dk = af_bits(layer, arch, mk), mk.to_dict()
        forms[k] = (mk, bk, moved)
        evals.append({"name": k, "layer": _layer_dict(layer), "spatial": dk["spatial"], "temporal": dk["temporal"],
                      "boundaries": dk["boundaries"], "bits": bk})
    t0 = time.perf_counter()
    res = run_driver(a.accelforge_python, {"arch": arch_request(arch), "search": [job], "evaluate": evals,
                                           "dump": a.dump})
    wall = time.perf_counter() - t0
    for r in res:
        if r["kind"] == "evaluate":
            mk, bk, moved = forms[r["name"]]
            ours[r["name"]]["accelforge"] = {"energy_pj": r["energy_pj"], "latency_cycles": r["latency_cycles"],
                                             "predicted_pj": decompose(layer, arch, mk, bk, moved)["pred"]}
    af = next((r for r in res if r["kind"] == "search"), {})
    af["driver_wall_s"] = round(wall, 1)
    print(f"\neach tool's own search, {SEARCH_LAYER} on eyeriss_like (energy objective):")
    print(f"  AccelForge FFM ({'free' if a.free_spatial else 'our'} spatial unrolling, time limit "
          f"{a.time_limit or 'none'} s): {af.get('energy_pj', float('nan')):.4e} pJ, "
          f"{af.get('latency_cycles', float('nan')):.0f} cycles, wall {af.get('wall_s', float('nan')):.0f} s "
          f"(driver {wall:.0f} s)")
    if af.get("mapping_text"):
        try:
            am = translate_looptree(af["mapping_text"], arch)
            rep = evaluate(layer, arch, am)
            dec = decompose(layer, arch, am, bits)
            af["ours_of_af_best"] = {"mapping": am.to_dict(), "energy_pj": rep.energy_pj,
                                     "latency_cycles": rep.latency_cycles, "predicted_af_pj": dec["pred"]}
            print(f"  AccelForge's best in our model: {rep.energy_pj:.4e} pJ, {rep.latency_cycles:.0f} cycles "
                  f"(mapping {am.to_dict()}); our prediction of AccelForge from our counts {dec['pred']:.4e} pJ, "
                  f"AccelForge / prediction {_r(af['energy_pj'], dec['pred']):.4f}")
        except Exception as e:  # noqa: BLE001 (a LoopTree we cannot translate: say so)
            print(f"  AccelForge's best not translated to our mapping: {e}")
    for k, v in ours.items():
        x = v.get("accelforge")
        other = (f"; in AccelForge {x['energy_pj']:.4e} pJ (prediction {x['predicted_pj']:.4e})"
                 if isinstance(x, dict) else f"; not a LoopTree: {x}" if x else "")
        print(f"  ours {k} {v['params']}: {v['energy_pj']:.4e} pJ, {v['latency_cycles']:.0f} cycles, wall {v['wall_s']:.1f} s"
              + other)
    return {"accelforge_ffm": af, "ours": ours}


# ---------------------------------------------------------------------------------------------

def pin(a, argv, rows, version: str) -> None:
    out = Path(a.pin)
    out.mkdir(parents=True, exist_ok=True)
    about = {"accelforge": version, "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d"),
             "command": "python scripts/compare_accelforge.py " + portable_command(argv, "--accelforge-python", "ACCELFORGE_VENV"),
             "dse_sweep": _git_state(), "our_mapper": "loma lpf_limit 6, energy objective, seed 0",
             "units": "energy pJ (AccelForge's actions cost our pJ per word), latency cycles"}
    keep = ("energy_pj", "latency_cycles", "energy", "actions", "latency", "capacity_relaxed")
    data = [{"name": r["name"], "arch": r["arch"], "layer": r["layer"], "mapping": r["mapping"], "bits": r["bits"],
             "refetch": r["refetch"],
             "accelforge": {k: r["accelforge"][k] for k in keep}} for r in rows]
    head = {"about": about, "case": a.case}
    text = json.dumps(head, indent=1)[:-2] + ',\n "rows": [\n  ' + ",\n  ".join(json.dumps(x) for x in data) + "\n ]\n}\n"
    (out / f"{a.case}.json").write_text(text)
    print(f"pinned {len(data)} rows to {out / (a.case + '.json')}", file=sys.stderr)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--accelforge-python", required=True, help="a Python 3.12 with accelforge installed")
    ap.add_argument("--case", default="eyeriss_like", choices=("eyeriss_like", "tpu_like", "llama"))
    ap.add_argument("--layers", default=None, help="comma-separated layer names (default: the case's)")
    ap.add_argument("--search", action="store_true", help="also each tool's own search on layer1.0.conv1, eyeriss_like")
    ap.add_argument("--time-limit", type=float, default=None, help="AccelForge FFM time limit, seconds")
    ap.add_argument("--free-spatial", action="store_true", help="--search: AccelForge chooses the spatial unrolling")
    ap.add_argument("--json", dest="json_out", default=None, help="also write all results to this JSON file")
    ap.add_argument("--pin", default=None, metavar="DIR", help="write AccelForge's figures per row to DIR/<case>.json")
    ap.add_argument("--dump", default=None, metavar="DIR", help="keep the AccelForge YAML inputs in DIR")
    argv = sys.argv[1:] if argv is None else argv
    a = ap.parse_args(argv)
    state = _git_state()
    version = _accelforge_version(a.accelforge_python)
    rows = compare(a, case_rows(a.case, a.layers.split(",") if a.layers else None))
    w = max(10, *(len(r["name"]) for r in rows))
    print(f"# {state}; accelforge {version}; case {a.case}; our mapping: loma lpf_limit 6 (energy)")
    print_rows(rows, w)
    print_decomposition(rows)
    search = run_search(a) if a.search else None
    if a.pin:
        pin(a, argv, rows, version)
    if a.json_out:
        Path(a.json_out).write_text(json.dumps({"case": a.case, "state": state, "accelforge": version, "rows": rows,
                                                "search": search}, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
