"""ZigZag inputs: a ZigZag hardware YAML and its mapping YAML -> our accelerator TOML.

Read by `sweep import zigzag --accelerator ACCEL.yaml --mapping MAPPING.yaml --out ACCEL.toml` (issue 12,
item 4). The result is usable with ``--arch ACCEL.toml`` and in campaigns; its format is that of
`costmodel.loopnest.arch` (module docstring). Translation, field by field (ZigZag 3.9.1,
``zigzag/parser/accelerator_validator.py`` and ``mapping_validator.py``):

* ``operational_array``: ``dimensions`` / ``sizes`` -> ``[array]``; ``unit_energy`` -> ``mac_pj``.
  ZigZag's MAC has no accumulator (its lowest O memory is read and written around every MAC), so
  no ``[accumulator]`` table is emitted.
* ``memories`` (YAML order = innermost first, as ZigZag builds its hierarchy) -> ``[[memory]]``:
  ``size`` -> ``size_bits`` (a memory of type ``dram`` or of 10^9 bits and more is written
  unbounded); ``r_cost`` / ``w_cost`` are ZigZag's energy per access of ``bandwidth_max`` bits,
  charged per ``bandwidth_min``-bit word as ``r_cost x bandwidth_min / bandwidth_max``
  (``CostModelEvaluation._calc_memory_access``: ceil(bits / min) x min / max accesses) ->
  ``read_pj`` / ``write_pj`` = that per-word energy, per operand with the ``bandwidth_max`` of the
  ports its ``allocation`` reads it through (tl, th) / writes it through (fh, fl): a table per
  operand where they differ (per-operand ports, `costmodel.loopnest.arch`; gemm_l1_l3's l1: I, W
  512 bits, O 2048), else one number; an operand reading (or writing) through ports of different
  ``bandwidth_max`` (gemm_l1_l3's O: 2048 to reg_O, 512 through the DMA port to l3) takes the
  largest, with a note (ZigZag charges each direction at its own port);
  ``operands`` through the mapping's ``memory_operand_links``
  (I1 / I2 -> I / W); ``served_dimensions`` -> ``private_to`` = the array dims NOT served (a
  per-PE register file serves none: private to all); ports: a ``read_write`` port -> ``shared_port
  = true``; ``word_bits`` = the ports' ``bandwidth_min`` (equal on all ports, else refused);
  ``read_bw`` / ``write_bw`` = the sum of ``bandwidth_max`` of the ports that read / write (one
  bandwidth for all operands: ZigZag's per-operand ports work in parallel, ours share the
  memory's port, so the memory's total rate is kept).
* mapping YAML: the entry ``default`` (or ``--layer-type``) gives ``[spatial]`` and the operand
  links; other entries (per layer name or type, e.g. Add, Pooling) are reported as not imported.
  ``temporal_ordering`` entries (fixed orderings) are not part of an accelerator and are ignored.
  A fixed factor above its array dim's size is reduced to that size, as ZigZag reduces it
  (``SpatialMapping.check_and_reduce``; e.g. ``default.yaml``'s K 32 on eyeriss_like's D1 of 14).
* ``spatial_mapping_hint`` -> ``[spatial_hint]`` (`costmodel.loopnest.hint`), ``max_dims`` 1 as
  ZigZag's generator without mixed unrollings (its default). ZigZag's rules mirrored: an array
  dim with no hint entry may unroll every loop dim (``SpatialMappingHint.complete_with_defaults``),
  entries for dims the array lacks are dropped (never read); when ``spatial_mapping`` fixes only
  some array dims, ZigZag searches the others and keeps the fixed ones, so those list their fixed
  loop dims (``max_dims`` = their count; our search varies their factors too). An entry with only
  a hint gives an accelerator without ``[spatial]``; with both, both are written (ZigZag uses the
  fixed one when it covers every array dim; ours: ``spatial = fixed`` / ``search`` of the mappers).
* ``[precision]``: ZigZag takes precisions from the workload; its ONNX parser defaults are
  W 8, I 8, O (partial sums) 16, O_final 8, written unless ``precision`` is given.
  ``operational_array.input_precision`` ([activation bits, weight bits]) is read by ZigZag 3.9.1
  only for an IMC array (``AcceleratorFactory.create_imc_array``); for a digital one it is checked
  (two positive integers) and noted when it differs from the precisions written.
* ``force_double_buffering`` (gemm_l1_l3's l1) is not modelled and noted; the capacity is kept
  (ZigZag's LOMA allocator sizes a slice short of the whole operand twice there,
  ``MemoryAllocator.calc_size_slices``; with half the capacity instead, 18 of ZigZag's own 21
  ResNet-18 mappings on gemm_l1_l3 overflow l1 in our model).
* An unbounded memory (DRAM) whose ``served_dimensions`` miss array dims (ascend_like's dram
  serves D1, D2 of four) is written as one instance (``private_to = []``), with a note.

Refused (`ZigzagError`, a ValueError; exit 2 in the CLI; the message names the YAML key and value;
nothing is written): in-memory compute (``is_imc``, ``imc_type``, ``adc_resolution``, ``bit_serial_precision``;
ZigZag's aimc.yaml and dimc.yaml), several cores (a top-level ``cores`` / ``multi_core`` / anything
unknown), ``auto_cost_extraction`` (CACTI), memories without costs, missing keys, bad operand links,
loop dims that are not ours (gemm_l1.yaml's D0, D1, D2), an entry with neither ``spatial_mapping``
nor ``spatial_mapping_hint``. Not modelled and reported as notes: ``latency`` of a memory,
``systolic_dimensions``, ``area``, ``dataflows``.
"""

from __future__ import annotations

import math
import os
import re
import tempfile
from pathlib import Path
from typing import Any

from costmodel.importers import toml_out
from costmodel.importers.errors import ZigzagError

__all__ = ["import_zigzag", "zigzag_to_dict", "ZIGZAG_DEFAULT_PRECISION", "ZigzagError"]

#: ZigZag's ONNX parser defaults (``zigzag/parser/onnx/onnx_operator_parser.py``).
ZIGZAG_DEFAULT_PRECISION = {"W": 8, "I": 8, "O": 16, "O_final": 8}
_UNBOUNDED_BITS = 10**9
_TOP_KEYS = {"name", "memories", "operational_array", "dataflows"}
_MEM_KEYS = {"size", "r_cost", "w_cost", "area", "latency", "mem_type", "auto_cost_extraction", "operands",
             "ports", "served_dimensions", "force_double_buffering"}
_OA_KEYS = {"dimensions", "sizes", "unit_energy", "unit_area", "is_imc", "systolic_dimensions", "imc_type",
            "adc_resolution", "bit_serial_precision", "input_precision"}
_IMC_KEYS = ("is_imc", "imc_type", "adc_resolution", "bit_serial_precision")
_MEM_OPERANDS = ("I1", "I2", "O")
_LOOP_DIMS = ("B", "K", "C", "OY", "OX", "FY", "FX", "G")


def _err(src: str, key: str, value: Any, msg: str) -> ZigzagError:
    return ZigzagError(src, key, value, msg)


def _load_yaml(path: Path) -> Any:
    import yaml
    try:
        text = path.read_text()
    except OSError as e:
        raise _err(str(path), "file", str(path), f"cannot read: {e.strerror}") from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise _err(str(path), "file", str(path), f"invalid YAML: {e}") from None


def _req(src, d: dict, key: str, where: str):
    if key not in d:
        raise _err(src, f"{where}{key}", None, "missing (required by ZigZag)")
    return d[key]


def _num(src, key, v, *, integer=False, positive=False):
    ok = isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v >= 0
    if ok and integer:
        ok = float(v).is_integer()
    if ok and positive:
        ok = v > 0
    if not ok:
        raise _err(src, key, v, ("a positive " if positive else "a non-negative ") + ("integer" if integer else "number"))
    return int(v) if integer else (int(v) if float(v).is_integer() else float(v))


def _parse_pairs(src, key: str, items) -> list[list]:
    """``["K, 32", "C, 2"]`` (ZigZag's spatial-mapping strings) -> ``[["K", 32], ["C", 2]]``."""
    if not isinstance(items, list) or not items:
        raise _err(src, key, items, 'a list of "DIM, factor" strings, e.g. ["K, 32"]')
    out = []
    for s in items:
        m = re.fullmatch(r"\s*([A-Z]+\d*)\s*,\s*(\d+)\s*", s) if isinstance(s, str) else None
        if m is None:
            raise _err(src, key, s, 'a "DIM, factor" string, e.g. "K, 32"')
        d, f = m.group(1), int(m.group(2))
        if d not in _LOOP_DIMS:
            raise _err(src, key, s, f"loop dimension {d!r} is not one of ours {list(_LOOP_DIMS)}")
        if f < 1:
            raise _err(src, key, s, "factor must be >= 1")
        if f > 1:
            out.append([d, f])
    return out


def _parse_hint(src: str, where: str, raw: Any, array: dict[str, int], fixed: dict[str, list],
                notes: list[str]) -> dict[str, Any]:
    """ZigZag's ``spatial_mapping_hint`` -> our ``[spatial_hint]`` table (see the module docstring)."""
    if not isinstance(raw, dict) or not raw:
        raise _err(src, f"{where}spatial_mapping_hint", raw, "a table D1: [K, C], D2: [...]")
    hint: dict[str, Any] = {}
    for a, dims in raw.items():
        key = f"{where}spatial_mapping_hint.{a}"
        if not isinstance(dims, list) or not dims or any(not isinstance(d, str) for d in dims):
            raise _err(src, key, dims, "a non-empty list of loop dimensions, e.g. [K, C]")
        for d in dims:
            if d not in _LOOP_DIMS:
                raise _err(src, key, d, f"loop dimension {d!r} is not one of ours {list(_LOOP_DIMS)}")
        if a not in array:
            notes.append(f"{src}: {key} ignored: the array has no dim {a!r} (ZigZag fills only the array's dims)")
            continue
        hint[a] = list(dict.fromkeys(dims))
    max_dims: dict[str, int] = {}
    for a in array:  # ZigZag: a fixed dim stays as given; a dim with no hint may unroll every layer dim
        if a in fixed:
            hint.pop(a, None)  # unrolls nothing when fixed to factor 1
            if fixed[a]:
                hint[a] = [d for d, _ in fixed[a]]
            if len(fixed[a]) > 1:
                max_dims[a] = len(fixed[a])
        elif a not in hint:
            hint[a] = list(_LOOP_DIMS)
    out: dict[str, Any] = {a: hint[a] for a in array if a in hint}
    if max_dims:
        out["max_dims"] = max_dims
    return out


def _clip_spatial(src: str, where: str, spatial: dict[str, list], array: dict[str, int],
                  notes: list[str]) -> dict[str, list]:
    """ZigZag reduces a fixed unrolling factor above its array dim's size to that size
    (``SpatialMapping.check_and_reduce``); the product of one dim's factors must still fit."""
    out = {}
    for a, pairs in spatial.items():
        if a not in array:
            raise _err(src, f"{where}spatial_mapping.{a}", pairs, f"unknown array dim; the array has {list(array)}")
        clipped = [[d, min(f, array[a])] for d, f in pairs]
        if clipped != pairs:
            notes.append(f"{src}: {where}spatial_mapping.{a} {pairs} clipped to the array size {array[a]}: "
                         f"{clipped} (as ZigZag reduces it)")
        if math.prod(f for _, f in clipped) > array[a]:
            raise _err(src, f"{where}spatial_mapping.{a}", [f"{d}, {f}" for d, f in pairs],
                       f"unrolls {math.prod(f for _, f in clipped)} > the array size {array[a]}")
        out[a] = [p for p in clipped if p[1] > 1]
    return {a: v for a, v in out.items() if v}


def _mapping_entry(src: str, data: Any, layer_type: str, array: dict[str, int],
                   notes: list[str]) -> tuple[dict, dict | None, dict[str, str]]:
    """(spatial dict, spatial-hint dict or None, operand links our op -> ZigZag memory operand) of
    the chosen entry."""
    if not isinstance(data, list) or not data:
        raise _err(src, "(top level)", type(data).__name__, "a list of mapping entries (- name: default ...)")
    chosen = None
    for i, e in enumerate(data):
        if not isinstance(e, dict):
            raise _err(src, f"[{i}]", e, "a mapping entry (a table with name, spatial_mapping, memory_operand_links)")
        name = _req(src, e, "name", f"[{i}].")
        if name == layer_type:
            chosen = (i, e)
        else:
            notes.append(f"{src}: entry {name!r} not imported (only {layer_type!r}; an accelerator has one default "
                         f"spatial unrolling)")
    if chosen is None:
        raise _err(src, "name", layer_type, f"no mapping entry named {layer_type!r}; entries: "
                   f"{[e.get('name') for e in data]}")
    i, e = chosen
    where = f"[{i}] ({layer_type})."
    for k in e:
        if k not in ("name", "spatial_mapping", "memory_operand_links", "temporal_ordering", "spatial_mapping_hint"):
            raise _err(src, f"{where}{k}", e[k], "unknown key; ZigZag's keys: name, spatial_mapping, "
                       "memory_operand_links, temporal_ordering, spatial_mapping_hint")
    if "temporal_ordering" in e:
        notes.append(f"{src}: {where}temporal_ordering ignored (a fixed ordering is a mapping, not part of an accelerator)")
    sm = e.get("spatial_mapping")
    if sm is None and e.get("spatial_mapping_hint") is None:
        raise _err(src, f"{where}spatial_mapping", None, "missing: give spatial_mapping or spatial_mapping_hint")
    spatial: dict[str, list] = {}
    if sm is not None:
        if not isinstance(sm, dict) or not sm:
            raise _err(src, f"{where}spatial_mapping", sm, "a table D1: [\"K, 32\"], D2: [...]")
        spatial = {str(a): _parse_pairs(src, f"{where}spatial_mapping.{a}", v) for a, v in sm.items()}
        spatial = _clip_spatial(src, where, spatial, array, notes)
    hint = None
    if e.get("spatial_mapping_hint") is None and sm is not None and any(a not in sm for a in array):
        notes.append(f"{src}: {where}spatial_mapping leaves {[a for a in array if a not in sm]} unset: they "
                     f"unroll nothing here (ZigZag would search them over every loop dim)")
    if e.get("spatial_mapping_hint") is not None:
        if sm is not None and all(a in sm for a in array):
            notes.append(f"{src}: {where}spatial_mapping covers every array dim: ZigZag uses it and not the hint; "
                         f"both written ([spatial] for spatial = fixed, [spatial_hint] for spatial = search)")
        partial = [str(a) for a in (sm or {}) if str(a) in array and not all(b in (sm or {}) for b in array)]
        if partial:
            notes.append(f"{src}: {where}spatial_mapping fixes {partial} only: ZigZag searches the other array dims; "
                         f"[spatial_hint] lists the fixed dims' loop dims for them (their factors are searched too)")
        hint = _parse_hint(src, where, e["spatial_mapping_hint"], array,
                           {a: spatial.get(a, []) for a in partial}, notes)
    links = e.get("memory_operand_links", {"O": "O", "I": "I1", "W": "I2"})  # ZigZag's default
    if not isinstance(links, dict):
        raise _err(src, f"{where}memory_operand_links", links, "a table O: O, W: I2, I: I1")
    for op in ("O", "W", "I"):
        if op not in links:
            raise _err(src, f"{where}memory_operand_links.{op}", None, "missing; expected O: O, W: I1|I2, I: I1|I2")
    for k, v in links.items():
        if k not in ("O", "W", "I"):
            raise _err(src, f"{where}memory_operand_links.{k}", v, "unknown layer operand; expected O, W, I")
        if v not in _MEM_OPERANDS:
            raise _err(src, f"{where}memory_operand_links.{k}", v, f"expected a memory operand from {list(_MEM_OPERANDS)}")
    if links["O"] != "O" or {links["W"], links["I"]} != {"I1", "I2"}:
        bad = "O" if links["O"] != "O" else "W"
        raise _err(src, f"{where}memory_operand_links.{bad}", links[bad],
                   f"links {dict(links)}: expected O: O and W, I on I1, I2 (one each)")
    return spatial, hint, {str(k): str(v) for k, v in links.items()}


def _memory(hs: str, mname: str, m: Any, array: dict[str, int], to_ours: dict[str, str],
            notes: list[str]) -> dict[str, Any]:
    """One ZigZag memory -> one [[memory]] table (see the module docstring)."""
    w = f"memories.{mname}."
    if not isinstance(m, dict):
        raise _err(hs, f"memories.{mname}", m, "a table")
    for k in m:
        if k not in _MEM_KEYS:
            raise _err(hs, f"{w}{k}", m[k], f"unknown key; ZigZag's keys: {sorted(_MEM_KEYS)}")
    if m.get("auto_cost_extraction"):
        raise _err(hs, f"{w}auto_cost_extraction", m["auto_cost_extraction"],
                   "CACTI cost extraction is not modelled; give r_cost and w_cost")
    size = _num(hs, f"{w}size", _req(hs, m, "size", w), integer=True, positive=True)
    fdb = m.get("force_double_buffering", False)
    if not isinstance(fdb, bool):
        raise _err(hs, f"{w}force_double_buffering", fdb, "true or false")
    if fdb:
        notes.append(f"{hs}: {w}force_double_buffering not modelled (ZigZag's LOMA allocator sizes a slice short of "
                     f"the whole operand twice there); the capacity {size} bits is kept")
    _req(hs, m, "latency", w)
    if m["latency"] != 1:
        notes.append(f"{hs}: {w}latency = {m['latency']} ignored (access latency is not modelled)")
    r = _num(hs, f"{w}r_cost", _req(hs, m, "r_cost", w))
    wc = _num(hs, f"{w}w_cost", _req(hs, m, "w_cost", w))
    ops = _req(hs, m, "operands", w)
    if not isinstance(ops, list) or not ops or any(o not in _MEM_OPERANDS for o in ops) or len(set(ops)) != len(ops):
        raise _err(hs, f"{w}operands", ops, f"a non-empty list of distinct memory operands from {list(_MEM_OPERANDS)}")
    served = _req(hs, m, "served_dimensions", w)
    if not isinstance(served, list) or any(a not in array for a in served):
        raise _err(hs, f"{w}served_dimensions", served, f"a list of array dims from {list(array)}")
    ports = _req(hs, m, "ports", w)
    if not isinstance(ports, list) or not ports:
        raise _err(hs, f"{w}ports", ports, "a non-empty list of ports")
    words, rbw, wbw, shared = set(), 0, 0, False
    rmax: set[int] = set()
    wmax: set[int] = set()
    op_max: dict[tuple[str, str], set[int]] = {}   # (ZigZag operand, "read" / "write") -> its ports' bandwidth_max
    for j, p in enumerate(ports):
        pw = f"{w}ports[{j}]."
        if not isinstance(p, dict):
            raise _err(hs, f"{w}ports[{j}]", p, "a port table (name, type, bandwidth_min, bandwidth_max, allocation)")
        ptype = _req(hs, p, "type", pw)
        if ptype not in ("read", "write", "read_write"):
            raise _err(hs, f"{pw}type", ptype, "read, write or read_write")
        bmin = _num(hs, f"{pw}bandwidth_min", _req(hs, p, "bandwidth_min", pw), integer=True, positive=True)
        bmax = _num(hs, f"{pw}bandwidth_max", _req(hs, p, "bandwidth_max", pw), integer=True, positive=True)
        for a in _req(hs, p, "allocation", pw) or []:
            mm = re.fullmatch(r"(I[12]|O), (fh|tl|fl|th)", str(a))
            if mm is None or mm.group(1) not in ops:
                raise _err(hs, f"{pw}allocation", a, f"\"OPERAND, fh|tl|fl|th\" with OPERAND one of {ops}")
            op_max.setdefault((mm.group(1), "read" if mm.group(2) in ("tl", "th") else "write"), set()).add(bmax)
        words.add(bmin)
        if ptype in ("read", "read_write"):
            rbw += bmax
            rmax.add(bmax)
        if ptype in ("write", "read_write"):
            wbw += bmax
            wmax.add(bmax)
        shared = shared or ptype == "read_write"
    if len(words) != 1:
        raise _err(hs, f"{w}ports", sorted(words), "ports of different bandwidth_min (word widths) are not modelled")
    if rbw == 0 or wbw == 0:
        raise _err(hs, f"{w}ports", [p.get("type") for p in ports], "needs a read and a write port (or a read_write port)")
    word = words.pop()
    d: dict[str, Any] = {"name": str(mname)}
    if m.get("mem_type") == "dram" or size >= _UNBOUNDED_BITS:
        notes.append(f"{hs}: {w}size = {size} written unbounded (DRAM)")
    else:
        d["size_bits"] = size
    order = {"I": 0, "W": 1, "O": 2}
    d["operands"] = sorted((to_ours[o] for o in ops), key=order.__getitem__)
    for what, cost, maxes in (("read", r, rmax), ("write", wc, wmax)):
        # per operand: the widest port it is allocated to in that direction (else the memory's widest)
        per = {o: max(op_max.get((o, what), maxes)) for o in ops}
        for o in ops:
            if len(op_max.get((o, what), ())) > 1:
                notes.append(f"{hs}: {w}ports: {o} ({to_ours[o]}) {what}s through ports of different bandwidth_max "
                             f"{sorted(op_max[(o, what)])}; its {what} energy per word taken at {per[o]}")
        pj = {to_ours[o]: _num(hs, f"{w}{'r' if what == 'read' else 'w'}_cost", cost * word / per[o]) for o in ops}
        if len(set(pj.values())) > 1:
            notes.append(f"{hs}: {w}ports: per-operand {what} energy (bandwidth_max "
                         f"{ {to_ours[o]: per[o] for o in ops} }): {what}_pj per operand")
        d[f"{what}_pj"] = (next(iter(pj.values())) if len(set(pj.values())) == 1
                           else {o: pj[o] for o in sorted(pj, key=order.__getitem__)})
    d["word_bits"] = word
    if rbw != word:
        d["read_bw"] = rbw
    if wbw != word:
        d["write_bw"] = wbw
    if shared:
        d["shared_port"] = True
    private = [a for a in array if a not in served]
    if private and "size_bits" not in d:
        notes.append(f"{hs}: {w}served_dimensions {served}: an unbounded memory (DRAM) is written as one instance "
                     f"(private_to []); ZigZag would count {math.prod(array[a] for a in private)} instances, one "
                     f"per position on {private}")
        private = []
    d["private_to"] = "all" if private == list(array) else private
    return d


def _input_precision(hs: str, v: Any, prec: dict[str, int], notes: list[str]) -> None:
    """``operational_array.input_precision`` = [activation bits, weight bits]: ZigZag 3.9.1 reads it
    only for an IMC array (``AcceleratorFactory.create_imc_array``, ``ImcUnit``: activation first);
    a digital array takes its precisions from the workload, so it is checked and noted, not used."""
    if (not isinstance(v, list) or len(v) != 2
            or any(isinstance(x, bool) or not isinstance(x, int) or x < 1 for x in v)):
        raise _err(hs, "operational_array.input_precision", v, "[activation bits, weight bits], two positive integers")
    if [prec.get("I"), prec.get("W")] != v:
        notes.append(f"{hs}: operational_array.input_precision {v} (activation, weight bits) differs from the "
                     f"precisions written (I {prec.get('I')}, W {prec.get('W')}); ZigZag ignores it for a digital "
                     f"array (the workload's precisions count)")


def zigzag_to_dict(accelerator: str | Path, mapping: str | Path, *, layer_type: str = "default",
                   precision: dict[str, int] | None = None, name: str | None = None,
                   notes: list[str] | None = None) -> dict[str, Any]:
    """The TOML-shaped dict of `costmodel.loopnest.arch.accelerator_from_dict` for a ZigZag
    hardware YAML and mapping YAML (see the module docstring). ``notes`` collects what was not
    imported. Raises `ZigzagError` naming the file, the YAML key and the value."""
    notes = notes if notes is not None else []
    hw_path, map_path = Path(accelerator), Path(mapping)
    hs, ms = str(hw_path), str(map_path)
    hw = _load_yaml(hw_path)
    mp = _load_yaml(map_path)

    if not isinstance(hw, dict):
        raise _err(hs, "(top level)", type(hw).__name__, "a table with name, memories, operational_array")
    for k in hw:
        if k not in _TOP_KEYS:
            what = ("several cores are not modelled (one operational array per accelerator)"
                    if "core" in str(k).lower() else f"unknown key; ZigZag's keys: {sorted(_TOP_KEYS)}")
            raise _err(hs, str(k), hw[k] if not isinstance(hw[k], (dict, list)) else type(hw[k]).__name__, what)
    acc_name = name or _req(hs, hw, "name", "")
    if not isinstance(acc_name, str) or not acc_name:
        raise _err(hs, "name", acc_name, "a non-empty string")
    if "dataflows" in hw:
        notes.append(f"{hs}: dataflows ignored (the spatial unrolling comes from the mapping file)")

    oa = _req(hs, hw, "operational_array", "")
    if not isinstance(oa, dict):
        raise _err(hs, "operational_array", oa, "a table")
    for k in oa:
        if k not in _OA_KEYS:
            raise _err(hs, f"operational_array.{k}", oa[k], f"unknown key; ZigZag's keys: {sorted(_OA_KEYS)}")
    for k in _IMC_KEYS:
        v = oa.get(k)
        if v not in (None, False, 0, []):
            raise _err(hs, f"operational_array.{k}", v, "in-memory compute (imc) is not modelled")
    dims = _req(hs, oa, "dimensions", "operational_array.")
    sizes = _req(hs, oa, "sizes", "operational_array.")
    if not isinstance(dims, list) or not dims or any(not isinstance(d, str) or not re.fullmatch(r"D\d", d) for d in dims):
        raise _err(hs, "operational_array.dimensions", dims, "a list of array dims D1, D2, ...")
    if not isinstance(sizes, list) or len(sizes) != len(dims):
        raise _err(hs, "operational_array.sizes", sizes, f"a list of {len(dims)} sizes (one per dimension)")
    array = {d: _num(hs, f"operational_array.sizes[{i}]", s, integer=True, positive=True)
             for i, (d, s) in enumerate(zip(dims, sizes))}
    mac_pj = _num(hs, "operational_array.unit_energy", _req(hs, oa, "unit_energy", "operational_array."))
    if oa.get("systolic_dimensions"):
        notes.append(f"{hs}: operational_array.systolic_dimensions {oa['systolic_dimensions']} not modelled "
                     f"(operands are multicast / reduced in one cycle)")
    prec = dict(ZIGZAG_DEFAULT_PRECISION if precision is None else precision)
    if "input_precision" in oa:
        _input_precision(hs, oa["input_precision"], prec, notes)
    spatial, hint, links = _mapping_entry(ms, mp, layer_type, array, notes)
    to_ours = {v: k for k, v in links.items()}  # ZigZag memory operand -> our operand

    mems_raw = _req(hs, hw, "memories", "")
    if not isinstance(mems_raw, dict) or not mems_raw:
        raise _err(hs, "memories", mems_raw, "a table memory name -> description, innermost first")
    mems = []
    for mname, m in mems_raw.items():
        mems.append(_memory(hs, str(mname), m, array, to_ours, notes))
    served_ops = {o for d in mems for o in d["operands"]}
    for op in ("W", "I", "O"):
        if op not in served_ops:
            raise _err(ms, f"memory_operand_links.{op}", links[op], f"no memory of {hs} serves {links[op]}")
    desc = f"imported from ZigZag {hw_path.name} + {map_path.name} (entry {layer_type!r}) by `sweep import zigzag`"
    out: dict[str, Any] = {"name": acc_name, "description": desc, "mac_pj": mac_pj, "array": array,
                           "precision": prec}
    if spatial:
        out["spatial"] = spatial
    if hint is not None:
        out["spatial_hint"] = hint
    out["memory"] = mems
    return out


def import_zigzag(accelerator: str | Path, mapping: str | Path, out: str | Path, *, layer_type: str = "default",
                  precision: dict[str, int] | None = None, name: str | None = None) -> tuple[Any, list[str]]:
    """Translate, validate by loading with `costmodel.loopnest.arch.load_accelerator`, then write
    ``out`` atomically (temp file + rename; nothing is written on error). Returns (Accelerator, notes).

    Raises:
        ZigzagError: a YAML we cannot read or model (file, key and value named), a result that
            our loader refuses, or an ``out`` that cannot be written (source and key ``--out``: a
            directory, in a missing or unwritable folder).
    """
    from costmodel.loopnest.arch import accelerator_from_dict, load_accelerator

    notes: list[str] = []
    d = zigzag_to_dict(accelerator, mapping, layer_type=layer_type, precision=precision, name=name, notes=notes)
    try:
        accelerator_from_dict(d, str(out))
    except ValueError as e:
        raise _err(str(accelerator), "(translated accelerator)", d["name"], str(e)) from None
    out = Path(out)
    text = toml_out.dumps(d, f"Imported from ZigZag: {accelerator} + {mapping}\n"
                             f"by `sweep import zigzag` (see costmodel/importers/zigzag.py for the translation).")
    if not out.parent.is_dir():
        raise _err("--out", "--out", str(out), "directory does not exist")
    if out.is_dir():
        raise _err("--out", "--out", str(out), "is a directory; give the accelerator TOML file to write, "
                   f"e.g. {out / (d['name'] + '.toml')}")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent)
    except OSError as e:
        raise _err("--out", "--out", str(out), f"cannot write in {out.parent}: {e.strerror}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        acc = load_accelerator(tmp)
        os.replace(tmp, out)
    except BaseException as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(e, ValueError):
            raise _err(str(accelerator), "(translated accelerator)", d["name"], str(e)) from None
        if isinstance(e, OSError):
            raise _err("--out", "--out", str(out), f"cannot write: {e.strerror or e}") from None
        raise
    return acc, notes
