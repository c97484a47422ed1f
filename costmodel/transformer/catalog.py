"""Which transformer a name, a file or a step means: the bundled models (``models/<name>.json``, the
Hugging Face config.json of each, with ``models/zoo.toml``'s description, source, published
parameter count and default step), a user's config.json, and the model a built step records.

A step of a bundled model records its name (``workload["model"]``); a step of a model read from a
file records its name and its shapes too (``workload["config"]``, `TransformerConfig.shape`), so
that the step can be rebuilt, sized and split anywhere (a worker of another machine does not need
the file) and its task ids follow the shapes, not where the file was.
"""

from __future__ import annotations

import functools
import importlib.resources
import os
import tomllib
from pathlib import Path
from typing import Any

from costmodel.transformer.config import TransformerConfig
from costmodel.transformer.hf import config_from_hf, read_hf_config

__all__ = ["list_transformers", "transformer_config", "transformer_info", "config_of", "resolve_model",
           "is_config_file", "file_info"]

_META_KEYS = ("description", "source", "published_params", "published_params_source", "seq", "context", "batch",
              "note")


def _models_dir():
    return importlib.resources.files(__package__ or "costmodel.transformer") / "models"


@functools.lru_cache(maxsize=None)
def _bundled() -> dict[str, TransformerConfig]:
    import json
    meta = tomllib.loads((_models_dir() / "zoo.toml").read_text(encoding="utf-8"))
    out = {}
    for name, table in meta.items():
        unknown = sorted(set(table) - set(_META_KEYS))
        if unknown:
            raise ValueError(f"transformer {name!r}: {unknown[0]} is not a key of models/zoo.toml ({_META_KEYS})")
        where = f"models/{name}.json"
        cfg, _ = config_from_hf(json.loads((_models_dir() / f"{name}.json").read_text(encoding="utf-8")), name, where)
        out[name] = cfg.replace(**{k: v for k, v in table.items() if k != "note"})
    return out


def list_transformers() -> list[str]:
    """Names of the bundled transformer models, sorted."""
    return sorted(_bundled())


def transformer_config(name: str) -> TransformerConfig:
    """The validated `TransformerConfig` of bundled model ``name``.

    Raises:
        KeyError: no such model; the message lists the models.
    """
    try:
        return _bundled()[name]
    except KeyError:
        raise KeyError(f"unknown transformer {name!r}; models: {', '.join(list_transformers())}") from None


def is_config_file(spec: Any) -> bool:
    """Whether ``spec`` names a ``.json`` file (a Hugging Face config.json)."""
    return isinstance(spec, (str, os.PathLike)) and Path(spec).suffix.lower() == ".json"


def resolve_model(spec: str | os.PathLike | TransformerConfig) -> TransformerConfig:
    """The model ``spec`` means: a `TransformerConfig` as is, a bundled model's name, or a config.json
    path (`costmodel.transformer.hf.read_hf_config`).

    Raises:
        KeyError: a name that is neither bundled nor a .json file.
        HfConfigError: (a ValueError) an unreadable or unmodellable config.json.
    """
    if isinstance(spec, TransformerConfig):
        return spec
    if is_config_file(spec):
        return read_hf_config(spec)[0]
    return transformer_config(str(spec))


def is_bundled(cfg: TransformerConfig) -> bool:
    """Whether ``cfg`` is the bundled model of its name (its steps record the name only)."""
    return _bundled().get(cfg.name) == cfg


def config_of(workload: dict[str, Any]) -> TransformerConfig:
    """The whole model a step was built from (``workload`` its `Network.workload`): the recorded
    shapes of a model read from a file, else the bundled model named ``workload["model"]``.

    Raises:
        KeyError: the step records neither shapes nor a bundled model's name.
    """
    shape = workload.get("config")
    if shape:
        return TransformerConfig.from_shape(str(workload["model"]), dict(shape))
    return transformer_config(str(workload["model"]))


def transformer_info(spec: str | os.PathLike | TransformerConfig) -> dict:
    """Metadata of a model (a bundled name, a config.json path or a config; a fresh dict): ``name``,
    ``description``, ``source``, ``published_params`` (int; 0 when not known), ``published_params_source``,
    ``kind``, ``path`` (the config file), ``defaults`` (``phase``, ``batch``, ``seq``, ``context``: None
    where the phase has none), ``config`` (every field of its `TransformerConfig`). Raises as
    `resolve_model`."""
    import dataclasses
    c = resolve_model(spec)
    defaults = {"phase": c.default_phase, "batch": c.batch, "seq": c.seq,
                "context": c.context if c.kind == "decoder" else None}
    path = f"transformer/models/{c.name}.json" if is_bundled(c) else c.source
    return {"name": c.name, "description": c.description, "source": c.source,
            "published_params": c.published_params, "published_params_source": c.published_params_source,
            "kind": c.kind, "path": path, "defaults": defaults, "config": dataclasses.asdict(c)}


def file_info(path: str | os.PathLike) -> dict:
    """What a config.json gives (`sweep list networks --file`): `transformer_info` plus ``read`` (the
    config fields read, with their values), ``defaulted`` (those the file left to the class's
    default), ``notes`` (`costmodel.transformer.hf`'s, one line each) and ``architecture``. Raises as
    `read_hf_config`."""
    cfg, read = read_hf_config(path)
    return {**transformer_info(cfg), "architecture": cfg.architecture, **read}
