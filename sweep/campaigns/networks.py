"""The ``networks`` key of a campaign: zoo names or user files (CSV in the zoo format, or ONNX
models read by `costmodel.importers.onnx`) -> `Network` objects."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from costmodel.workload import Network

__all__ = ["parse_networks"]


def parse_networks(value: Any, base_dir: Path, bad: Callable[[str, Any, str], None]) -> list[Network]:
    """Resolve ``networks = ["resnet50", {file = "my_net.csv"}, {file = "model.onnx"}]`` (relative
    paths against ``base_dir``); report problems through ``bad`` (a bad ONNX file: the file and node)."""
    from costmodel.zoo import list_networks, load_network, load_network_file

    if not isinstance(value, list) or not value:
        bad("networks", value, "required: a non-empty list of zoo names (see `sweep list networks`) "
            "or tables {file = \"path.csv\"} / {file = \"model.onnx\"}")
        return []
    known = list_networks()
    nets: list[Network] = []
    for i, item in enumerate(value):
        key = f"networks[{i}]"
        if isinstance(item, str):
            if item not in known:
                bad(key, item, f"unknown network; known: {known}")
                continue
            nets.append(load_network(item))
        elif isinstance(item, dict):
            extra = set(item) - {"file"}
            if extra or "file" not in item or not isinstance(item["file"], str):
                bad(key, item, "expected {file = \"path.csv\"} or {file = \"model.onnx\"}")
                continue
            path = (base_dir / item["file"]) if not Path(item["file"]).is_absolute() else Path(item["file"])
            try:
                nets.append(load_network_file(path))
            except (OSError, ValueError) as e:
                bad(f"{key}.file", item["file"], str(e))
        else:
            bad(key, item, "expected a zoo name or {file = \"path.csv\"} / {file = \"model.onnx\"}")
    names = [n.name for n in nets]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        bad("networks", value, f"network listed twice: {sorted(dup)}")
    return nets
