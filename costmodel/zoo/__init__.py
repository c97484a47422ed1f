"""The network zoo: canonical DNN layer tables shipped as CSV data files
(``costmodel/zoo/<name>.csv``), and the loader of user network files.

The files' format and its reader are in `costmodel.importers.zoo_csv`; user files may also be ONNX
models (``*.onnx``), read by `costmodel.importers.onnx`. This package is the data and a registry:
a zoo file's ``# name:`` must equal its stem and it must carry the metadata of
`costmodel.importers.zoo_csv.REQUIRED_META` (``description``, ``source``, ``published_macs`` ...).

Transformer models are data too (`costmodel.transformer`: each bundled model's Hugging Face
config.json), built into the operations of one prefill or decode step by
`costmodel.transformer.build_transformer`; their names are in `list_networks` and `load_network`
takes the step's parameters (``phase``, ``batch``, ``seq``, ``context``, ``weight_bits``, ...). A
user's config.json is a network file (`load_network_file`, with the same parameters).

Public API: `list_networks`, `load_network`, `load_network_file`, `network_info`,
`network_file_info`, `is_transformer`.
"""

from __future__ import annotations

import functools
import importlib.resources
import os
from pathlib import Path

from costmodel.importers.errors import ZooCsvError
from costmodel.importers.zoo_csv import (
    COLUMNS,
    DEFAULT_TOLERANCE,
    REQUIRED_META,
    ParsedNetwork,
    parse_network_text,
    read_network_csv,
)
from costmodel.workload import Network
from costmodel.transformer import (
    WORKLOAD_PARAMS,
    build_transformer,
    file_info,
    is_config_file,
    list_transformers,
    transformer_info,
)

__all__ = [
    "list_networks",
    "load_network",
    "load_network_file",
    "network_info",
    "network_file_info",
    "is_transformer",
    "DEFAULT_TOLERANCE",
    "COLUMNS",
]


def _zoo_dir():
    return importlib.resources.files(__name__)


@functools.lru_cache(maxsize=None)
def _csv_networks() -> list[str]:
    """Names of the CSV networks (layer tables) of the zoo, sorted."""
    return sorted(
        e.name[: -len(".csv")] for e in _zoo_dir().iterdir() if e.is_file() and e.name.endswith(".csv")
    )


@functools.lru_cache(maxsize=None)
def list_networks() -> list[str]:
    """Names of the networks in the zoo, sorted: the CSV layer tables and the transformer models
    (`is_transformer`)."""
    return sorted(_csv_networks() + list_transformers())


def is_transformer(name: str) -> bool:
    """Whether ``name`` is a transformer model of the zoo (`costmodel.transformer`)."""
    return name in list_transformers()


@functools.lru_cache(maxsize=None)
def _load_zoo(name: str) -> ParsedNetwork:
    if name not in _csv_networks():
        raise KeyError(f"unknown network {name!r}; available networks: {', '.join(list_networks())}")
    res = _zoo_dir() / f"{name}.csv"
    parsed = parse_network_text(res.read_text(encoding="utf-8"), f"zoo/{name}.csv", name)
    missing = [k for k in REQUIRED_META if k not in parsed.info]
    if missing:
        raise ZooCsvError(f"zoo/{name}.csv: metadata lacks {', '.join(missing)}")
    if parsed.network.name != name:
        raise ZooCsvError(f"zoo/{name}.csv: '# name: {parsed.network.name}' does not match the file name")
    return parsed


def load_network(name: str, **workload_params) -> Network:
    """The zoo network ``name`` (see `list_networks`). For a transformer model, the operations of
    one step, ``build_transformer(name, **workload_params)`` (``phase``, ``batch``, ``seq``,
    ``context``, ``weight_bits``, ``act_bits``, ``kv_bits``; omitted: the model's defaults).

    Raises:
        KeyError: if there is no such network; the message lists the available ones.
        ValueError: a workload parameter the network does not take (every one, for a CSV network)
            or a bad value; the message starts with the parameter's name (``phase: ...``).
    """
    if is_transformer(name):
        return _build_step(name, name, workload_params)
    net = _load_zoo(name).network
    if workload_params:
        raise ValueError(f"{next(iter(workload_params))}: the network {name} has no such parameter "
                         "(workload parameters apply to the zoo's transformer models)")
    return net


def _build_step(model, label: str, workload_params: dict) -> Network:
    """`build_transformer` of ``model`` (a bundled name or a config.json path) with the parameters
    checked by name (ValueError naming the first unknown one)."""
    unknown = [k for k in workload_params if k not in WORKLOAD_PARAMS]
    if unknown:
        raise ValueError(f"{unknown[0]}: the network {label} has no such parameter; "
                         f"it takes {', '.join(WORKLOAD_PARAMS)}")
    return build_transformer(model, **workload_params)


def network_info(name: str) -> dict:
    """Metadata of a zoo network: the file's ``# key: value`` entries, with ``published_macs``
    as an int, ``tolerance`` as a float (default `DEFAULT_TOLERANCE`) and ``path``; for a
    transformer model, `costmodel.transformer.transformer_info` (``description``, ``source``,
    ``published_params``, ``published_params_source``, ``kind``, ``defaults``, ...; no
    ``published_macs``).

    Raises:
        KeyError: if there is no such network.
    """
    if is_transformer(name):
        return transformer_info(name)
    return dict(_load_zoo(name).info)


def _is_onnx(path: str | os.PathLike) -> bool:
    return Path(path).suffix.lower() == ".onnx"


def load_network_file(path: str | os.PathLike, **workload_params) -> Network:
    """Load a network from a user file: a CSV file in the zoo format (metadata lines optional;
    the network's name defaults to the file's stem), an ONNX model (``*.onnx``, read by
    `costmodel.importers.onnx`: one layer per Conv / Gemm / MatMul node, named after it), or a
    Hugging Face ``config.json`` (``*.json``, `costmodel.transformer.hf`): one step of that model,
    built with ``workload_params`` as `load_network` does for a bundled transformer.

    Raises:
        ValueError: (`costmodel.importers.errors.InputFormatError`) for an unreadable file or a bad
            header or row; the message names the file, line number and, for a bad cell, the column
            and value (for ONNX: the file and node; for config.json: the file, field and value); a
            workload parameter for a file that is no config.json, or a bad one (named first).
    """
    if is_config_file(path):
        return _build_step(path, str(path), workload_params)
    if workload_params:
        raise ValueError(f"{next(iter(workload_params))}: the network file {path} has no such parameter "
                         "(workload parameters apply to transformer models: a zoo name or a config.json)")
    if _is_onnx(path):
        from costmodel.importers.onnx import load_onnx
        return load_onnx(path)
    return read_network_csv(path).network


def network_file_info(path: str | os.PathLike) -> dict:
    """The metadata of a user network file, like `network_info` (for ONNX: name, source, path,
    ``ignored``, the ``(node, op type)`` of the nodes not costed, ``reasons`` why (one each), and
    ``vector_nodes``, the ``(vector op, op types)`` of the nodes costed as vector operations)."""
    if is_config_file(path):
        return file_info(path)
    if _is_onnx(path):
        from costmodel.importers.onnx import read_onnx
        r = read_onnx(path)
        return {"name": r.network.name, "source": r.network.source, "path": str(path),
                "tolerance": DEFAULT_TOLERANCE, "nodes": list(r.nodes), "ignored": list(r.ignored),
                "reasons": list(r.reasons), "vector_nodes": list(r.vector_nodes)}
    return dict(read_network_csv(path).info)
