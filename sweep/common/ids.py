"""Stable identifiers: the sha256 of a value's canonical JSON.

Every id of the engine (``task_id``, ``problem_id``, a campaign's ``config_hash``) is this hash of
a plain-data document (dicts, lists, strings, numbers), so equal documents give equal ids on any
machine and in any process. ``sort_keys`` makes dict order irrelevant; ``default=str`` turns a
value JSON cannot encode (a tuple inside a set, a Path, a NumPy scalar) into its ``str``.
These ids are left as they are (a NaN or an infinity in hashed data keeps its old id).

`strict_json` is the JSON people and tools read (``--json`` output, manifest.json, JSON columns):
strict RFC 8259, an infinite or NaN number written ``null``.
"""

from __future__ import annotations

import hashlib
import json
import math
from typing import Any, Callable

__all__ = ["canonical_json", "finite", "stable_hash", "strict_json"]


def canonical_json(obj: Any) -> str:
    """``obj`` as JSON with sorted keys (``default=str`` for what JSON cannot encode)."""
    return json.dumps(obj, sort_keys=True, default=str)


def stable_hash(obj: Any, length: int | None = None) -> str:
    """Hex sha256 of `canonical_json` (obj), cut to ``length`` hex digits (None = all 64)."""
    h = hashlib.sha256(canonical_json(obj).encode()).hexdigest()
    return h if length is None else h[:length]


def finite(obj: Any, default: Callable[[Any], Any] = str) -> Any:
    """``obj`` as plain JSON data with every NaN or infinite float replaced by None.

    Dicts, lists and tuples are walked; a value JSON cannot encode goes through ``default`` (as
    `json.dumps` would call it) and its result is walked in turn.
    """
    if obj is None or isinstance(obj, (str, bool, int)):
        return obj
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: finite(v, default) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [finite(v, default) for v in obj]
    return finite(default(obj), default)


def strict_json(obj: Any, default: Callable[[Any], Any] = str, **kwargs: Any) -> str:
    """``obj`` as strict JSON (RFC 8259: no ``NaN`` / ``Infinity``; such numbers are ``null``).

    ``default`` as in `json.dumps`; ``kwargs`` (indent, sort_keys, separators) passed on.
    """
    return json.dumps(finite(obj, default), allow_nan=False, **kwargs)
