"""Stable identifiers: the sha256 of a value's canonical JSON.

Every id of the engine (``task_id``, ``problem_id``, a campaign's ``config_hash``) is this hash of
a plain-data document (dicts, lists, strings, numbers), so equal documents give equal ids on any
machine and in any process. ``sort_keys`` makes dict order irrelevant; ``default=str`` turns a
value JSON cannot encode (a tuple inside a set, a Path, a NumPy scalar) into its ``str``.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

__all__ = ["canonical_json", "stable_hash"]


def canonical_json(obj: Any) -> str:
    """``obj`` as JSON with sorted keys (``default=str`` for what JSON cannot encode)."""
    return json.dumps(obj, sort_keys=True, default=str)


def stable_hash(obj: Any, length: int | None = None) -> str:
    """Hex sha256 of `canonical_json` (obj), cut to ``length`` hex digits (None = all 64)."""
    h = hashlib.sha256(canonical_json(obj).encode()).hexdigest()
    return h if length is None else h[:length]
