"""What `sweep list` shows: the network zoo, the architecture presets, the mappers."""

from __future__ import annotations

__all__ = ["catalog"]


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
        return [{"name": k, "kind": "systolic", "points": len(v["points"]),
                 "description": v.get("description", "")} for k, v in systolic_presets().items()]
    if what == "mappers":
        from mappers import MAPPER_NAMES, get_mapper
        rows = []
        for name in MAPPER_NAMES:
            m = get_mapper(name)
            rows.append({"name": name, "version": m.version,
                         "params": "; ".join(f"{p.name}={p.default!r} ({p.help})" for p in m.params),
                         "doc": (m.__doc__ or "").strip().splitlines()[0]})
        return rows
    raise ValueError(f"unknown list {what!r}; expected networks, archs or mappers")
