"""What `sweep list` shows: the network zoo, the architecture presets, the mappers with their
declared parameters, and the layers of one zoo network or network file (CSV or ONNX)."""

from __future__ import annotations

__all__ = ["catalog", "mapper_params", "network_file", "zoo_network"]

_LAYER_COLUMNS = ("K", "C", "OY", "OX", "FY", "FX", "B", "G", "SY", "SX", "DY", "DX", "PY", "PX", "kind")


def _layers_doc(net, path: str, source: str, ops: list[str], ignored: list[dict]) -> dict:
    """The `network_file` / `zoo_network` dict of ``net`` (its layers with ``ops``)."""
    layers = [{"name": l.name, "op": op, **{k: getattr(l, k) for k in _LAYER_COLUMNS}, "repeat": r,
               "macs": l.macs} for (l, r), op in zip(net, ops)]
    return {"network": net.name, "path": str(path), "source": source, "layers": layers,
            "ignored": ignored, "total_macs": net.macs, "unique_layers": len(net.unique())}


def network_file(path: str, workload: dict | None = None) -> dict:
    """The layers of a network file (``*.csv`` zoo format or ``*.onnx``) for `sweep list networks
    --file`: ``{"network", "path", "source", "layers": [...], "ignored": [...], "total_macs",
    "unique_layers"}``. Each layer row has ``name``, ``op`` (the ONNX op type; ``csv`` for CSV
    files), the loop dims, strides, dilations, paddings, ``kind``, ``repeat`` and ``macs``; each
    ignored row the ONNX ``node``, ``op`` and ``reason`` (none for CSV); an ONNX file's vector
    operations (`costmodel.importers.onnx_vector`) under ``vector_ops`` with the ``nodes`` they
    came from. A Hugging Face config.json is one step of that model (``workload``: its parameters,
    as `zoo_network`), with the transformer's fields (`_transformer_doc`) plus ``architecture``,
    ``read`` (the config fields read and their values) and ``defaulted`` (those left to the
    Hugging Face class's default).

    Raises:
        CampaignError: the file cannot be read or is invalid; the message names the file (and,
            for ONNX, the node; for config.json, the field).
    """
    from pathlib import Path

    from costmodel.zoo import load_network_file, network_file_info
    from sweep.common.errors import CampaignError, Finding

    if not Path(path).is_file():
        raise CampaignError(path, [Finding("--file", path, "no such file")])
    from costmodel.transformer import is_config_file
    if is_config_file(path):
        from sweep.commands.map_eval import resolve_network
        net = resolve_network(path, workload)
        info = network_file_info(path)
        doc = _layers_doc(net, path, info.get("source", ""), ["config"] * len(net), [])
        doc.update(_transformer_doc(net, info), architecture=info["architecture"], read=info["read"],
                   defaulted=info["defaulted"], notes=info.get("notes", []))
        return doc
    try:
        net = load_network_file(path)
        info = network_file_info(path)
    except (OSError, ValueError) as e:
        raise CampaignError(path, [Finding("--file", path, str(e))]) from None
    ops = [op for _, op in info.get("nodes", [])] or ["csv"] * len(net)
    reasons = info.get("reasons") or [""] * len(info.get("ignored", []))
    ignored = [{"node": n, "op": op, "reason": why} for (n, op), why in zip(info.get("ignored", []), reasons)]
    doc = _layers_doc(net, path, info.get("source", ""), ops, ignored)
    if net.vector_ops:  # ONNX: the nodes costed as vector operations
        from_nodes = dict(info.get("vector_nodes") or [])
        doc["vector_ops"] = [{**v.to_dict(), "repeat": r, "nodes": from_nodes.get(v.name, "")}
                             for v, r in zip(net.vector_ops, net.vector_repeats)]
        doc["total_vector_elements"] = sum(v.elements * r for v, r in zip(net.vector_ops, net.vector_repeats))
    return doc


def zoo_network(name: str, workload: dict | None = None) -> dict:
    """The layers of the zoo network ``name`` for `sweep list networks NAME`: the dict of
    `network_file` (``op`` is ``zoo``; ``path`` the zoo's CSV file; no ``ignored`` rows), plus
    ``published_macs`` (None if the zoo states none). A transformer (``workload``: the step's
    parameters, `sweep.commands.map_eval.WORKLOAD_OPTIONS`; its defaults where not given) adds ``workload``
    (the step as built), ``vector_ops`` (name, op, elements, inputs, rows, repeat),
    ``total_vector_elements``, ``not_costed``, ``params`` (parameters computed from the shapes)
    and ``published_params``.

    Raises:
        CampaignError: no zoo network of that name (key ``NAME``; the message lists the zoo), or
            a step option the network does not take or a bad value (the option named).
    """
    from costmodel.zoo import list_networks, network_info
    from sweep.common.errors import CampaignError, Finding
    from sweep.commands.map_eval import resolve_network

    if name not in list_networks():
        raise CampaignError("sweep list networks", [Finding(
            "NAME", name, f"no zoo network of that name; the zoo: {', '.join(list_networks())} "
                          "(a network file: `sweep list networks --file F`)")])
    net, info = resolve_network(name, workload), network_info(name)
    doc = _layers_doc(net, info.get("path", ""), info.get("source", ""), ["zoo"] * len(net), [])
    doc["published_macs"] = int(info["published_macs"]) if info.get("published_macs") else None
    if net.workload:
        doc.update(_transformer_doc(net, info))
    return doc


def _transformer_doc(net, info: dict) -> dict:
    """A transformer step's part of `zoo_network` / `network_file`: ``workload``, ``vector_ops``,
    ``total_vector_elements``, ``not_costed``, ``params`` (from the shapes), ``activated_params``
    (per token: top_k of the routed experts), ``published_params`` (None where not known),
    ``kv_cache_values_per_token`` (per block: 2 x kv_heads x head_dim, or MLA's latent + RoPE key)."""
    from costmodel.transformer import activated_params, config_of, param_count
    cfg = config_of(net.workload)
    return {"workload": dict(net.workload),
            "vector_ops": [{**v.to_dict(), "repeat": r} for v, r in zip(net.vector_ops, net.vector_repeats)],
            "total_vector_elements": sum(v.elements * r for v, r in zip(net.vector_ops, net.vector_repeats)),
            "not_costed": list(net.workload.get("not_costed") or []), "params": param_count(cfg)["total"],
            "activated_params": activated_params(cfg), "published_params": info.get("published_params") or None,
            "kv_cache_values_per_token": cfg.cache_width if cfg.kind == "decoder" else None}


def mapper_params(name: str) -> list[dict]:
    """The declared parameters (`mappers.base.Param`) of mapper ``name``, one dict each: ``name``,
    ``type`` (int, float, str, bool, list[str], int|all), ``default`` (None: optional, absent by
    default), ``range`` ([low, high], inclusive, either None if unbounded; None for non-numbers;
    ``seed``: the one seed rule's [0, 2**32 - 1]), ``choices`` (None or the allowed strings) and
    ``doc``.

    Raises:
        KeyError: unknown mapper.
    """
    from mappers import get_mapper
    from sweep.config.validation import SEED_MAX

    out = []
    for p in get_mapper(name).params:
        numeric = p.type in ("int", "float", "int|all")
        high = SEED_MAX if p.name == "seed" and p.high is None else p.high
        out.append({"name": p.name, "type": p.type, "default": p.default,
                    "range": [p.low, high] if numeric and (p.low is not None or high is not None) else None,
                    "choices": list(p.choices) if p.choices is not None else None, "doc": p.help})
    return out


def catalog(what: str) -> list[dict]:
    """Rows describing ``what`` ("networks", "archs" or "mappers").

    Raises:
        ValueError: unknown ``what``.
    """
    if what == "networks":
        from costmodel.zoo import list_networks, load_network, network_info
        rows = []
        for name in list_networks():
            net = load_network(name)
            info = network_info(name)
            row = {"name": name, "layers": len(net), "executed_layers": net.layer_count,
                   "total_macs": net.macs,
                   "published_macs": int(info["published_macs"]) if info.get("published_macs") else None,
                   "source": info.get("source", "")}
            if net.workload:  # a transformer: its default step, and its parameters
                row["step"] = net.name
                row["published_params"] = info.get("published_params")
            rows.append(row)
        return rows
    if what == "archs":
        from costmodel.presets import systolic_presets
        rows = [{"name": k, "kind": "systolic", "size": f"{len(v['points'])} point(s)",
                 "description": v.get("description", "")} for k, v in systolic_presets().items()]
        try:
            from costmodel.loopnest.arch import list_accelerators, load_accelerator
        except ImportError:  # pragma: no cover - loop-nest model not installed
            return rows
        from costmodel.loopnest.physics import design_area_mm2
        from costmodel.loopnest.template import ArchTemplate
        for name in list_accelerators():
            acc = load_accelerator(name)
            dims = " x ".join(f"{d}={n}" for d, n in acc.array.items())
            mems = ", ".join(m.name for m in acc.memories)
            desc = f"memories: {mems}; {design_area_mm2(acc):.2f} mm^2"
            if acc.power is not None:   # a chip's preset: the part, its figures' sources in its TOML
                desc = (f"{acc.description.split(':')[0]} (figures and sources: costmodel/presets/{name}.toml); "
                        + desc)
            rows.append({"name": name, "kind": "loopnest", "size": dims, "description": desc,
                         # the names an architecture search's [architectures.grid] can vary
                         "grid_parameters": ArchTemplate(acc).parameter_names(),
                         # the fixed unrolling and the ones the interconnect supports (searched per
                         # layer by the loop-order mappers with spatial = "search")
                         "spatial": acc.spatial.to_dict(),
                         "spatial_hint": acc.spatial_hint.to_dict() if acc.spatial_hint else None})
        from costmodel.npu import list_npus, load_npu
        for name in list_npus():
            a = load_npu(name)
            rows.append({"name": name, "kind": "npu", "size": f"{a.cores} x {a.rows}x{a.cols} PEs",
                         "description": f"global buffer {a.buffer_bytes // 1024} KiB, DRAM {a.bandwidth} B/cycle "
                                        "(Flexer Table 1)"})
        return rows
    if what == "mappers":
        from mappers import MAPPER_NAMES, get_mapper
        rows = []
        for name in MAPPER_NAMES:
            m = get_mapper(name)
            rows.append({"name": name, "kind": m.kind, "version": m.version,
                         "doc": (m.__doc__ or "").strip().splitlines()[0], "params": mapper_params(name)})
        return rows
    raise ValueError(f"unknown list {what!r}; expected networks, archs or mappers")


def arch_detail(name: str) -> dict:
    """One loop-nest accelerator (a preset's name or a TOML file): its clock (MHz), PEs and peak
    MACs/s, each memory (operands, size in bits, port width, read / write bandwidth in bits per
    cycle and GB/s at the clock, instances), its DRAM (kind, units, GB/s, capacity in bytes), the
    vector unit's lanes and the area (mm^2, `costmodel.loopnest.physics.design_area_mm2`) with the
    ``tech`` it comes from (None: the 65 nm tables) and, for the 65 nm tables, ``area_cacti22_mm2``
    (the same silicon under ``tech = "cacti22"``; None where a memory is outside CACTI's range).

    Raises:
        ValueError: ``name`` is no loop-nest preset nor file (naming the known ones), or a systolic
            or NPU preset (those have no memory hierarchy of this form: `sweep list archs --json`).
    """
    import math

    from costmodel.loopnest.arch import list_accelerators, load_accelerator
    from costmodel.loopnest.physics import design_area_mm2
    from costmodel.tech.dram import dram_capacity_bytes
    if name not in list_accelerators() and not name.endswith(".toml"):
        others = {r["name"] for r in catalog("archs")} - set(list_accelerators())   # systolic points, NPUs
        if name in others:
            raise ValueError(f"{name} is not a loop-nest accelerator; its figures: `sweep list archs --json`")
        raise ValueError(f"unknown accelerator; loop-nest presets: {list_accelerators()}, or a .toml file")
    acc = load_accelerator(name)
    hz = acc.clock_mhz * 1e6

    def gbs(bits_per_cycle: float) -> float:
        return bits_per_cycle * hz / 8 / 1e9
    mems = []
    for m in acc.memories:
        inst = math.prod(acc.array[a] for a in m.private_to)
        mems.append({"name": m.name, "operands": list(m.operands), "size_bits": m.size_bits, "word_bits": m.word_bits,
                     "read_bits_per_cycle": m.read_bw, "write_bits_per_cycle": m.write_bw,
                     "read_gbs": gbs(m.read_bw) * inst, "write_gbs": gbs(m.write_bw) * inst,
                     "shared_port": m.shared_port, "instances": inst})
    doc = {"name": acc.name, "clock_mhz": acc.clock_mhz, "array": dict(acc.array), "pes": acc.pe_count,
           "peak_macs_per_s": acc.pe_count * hz, "memories": mems, "area_mm2": design_area_mm2(acc),
           "vector_lanes": acc.vector.lanes if acc.vector is not None else None, "dram": None,
           "tech": acc.tech, "area_cacti22_mm2": None}
    if acc.tech is None:  # the 65 nm tables: say what the 22 nm model gives for the same silicon
        import dataclasses
        try:
            doc["area_cacti22_mm2"] = design_area_mm2(dataclasses.replace(acc, tech="cacti22"))
        except ValueError:  # a memory outside CACTI's range
            pass
    doc["description"] = acc.description
    doc["interconnect"] = acc.interconnect
    doc["gpu"] = acc.gpu.to_dict() if acc.gpu is not None else None      # costmodel.gpu.spec
    doc["power"] = acc.power.to_dict() if acc.power is not None else None
    if acc.dram is not None:
        kind, units = acc.dram
        top = acc.memories[-1]
        doc["dram"] = {"kind": kind, "units": units, "gbs": gbs(top.read_bw),
                       "capacity_bytes": dram_capacity_bytes(kind, units, acc.dram_gib_per_unit)}
    return doc
