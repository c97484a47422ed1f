"""What `sweep list` shows: the network zoo, the architecture presets, the mappers, and the
layers of one network file (CSV or ONNX)."""

from __future__ import annotations

__all__ = ["catalog", "network_file"]

_LAYER_COLUMNS = ("K", "C", "OY", "OX", "FY", "FX", "B", "G", "SY", "SX", "DY", "DX", "PY", "PX", "kind")


def network_file(path: str) -> dict:
    """The layers of a network file (``*.csv`` zoo format or ``*.onnx``) for `sweep list networks
    --file`: ``{"network", "path", "source", "layers": [...], "ignored": [...], "total_macs",
    "unique_layers"}``. Each layer row has ``name``, ``op`` (the ONNX op type; ``csv`` for CSV
    files), the loop dims, strides, dilations, paddings, ``kind``, ``repeat`` and ``macs``; each
    ignored row the ONNX ``node`` and ``op`` (none for CSV).

    Raises:
        CampaignError: the file cannot be read or is invalid; the message names the file (and,
            for ONNX, the node).
    """
    from pathlib import Path

    from costmodel.zoo import load_network_file, network_file_info
    from sweep.errors import CampaignError, Finding

    if not Path(path).is_file():
        raise CampaignError(path, [Finding("--file", path, "no such file")])
    try:
        net = load_network_file(path)
        info = network_file_info(path)
    except (OSError, ValueError) as e:
        raise CampaignError(path, [Finding("--file", path, str(e))]) from None
    ops = [op for _, op in info.get("nodes", [])] or ["csv"] * len(net)
    layers = [{"name": l.name, "op": op, **{k: getattr(l, k) for k in _LAYER_COLUMNS}, "repeat": r,
               "macs": l.macs} for (l, r), op in zip(net, ops)]
    ignored = [{"node": n, "op": op} for n, op in info.get("ignored", [])]
    return {"network": net.name, "path": str(path), "source": info.get("source", ""), "layers": layers,
            "ignored": ignored, "total_macs": net.macs, "unique_layers": len(net.unique())}


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
            rows.append({"name": name, "layers": len(net), "executed_layers": net.layer_count,
                         "total_macs": net.macs,
                         "published_macs": int(info["published_macs"]) if info.get("published_macs") else None,
                         "source": info.get("source", "")})
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
            rows.append({"name": name, "kind": "loopnest", "size": dims,
                         "description": f"memories: {mems}; {design_area_mm2(acc):.2f} mm^2",
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
                         "params": "; ".join(f"{p.name}={p.default!r} ({p.help})" for p in m.params),
                         "doc": (m.__doc__ or "").strip().splitlines()[0]})
        return rows
    raise ValueError(f"unknown list {what!r}; expected networks, archs or mappers")
