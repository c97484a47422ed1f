"""Architecture presets shipped as TOML data files in this folder."""

from __future__ import annotations

import tomllib
from pathlib import Path

__all__ = ["systolic_presets"]

_DIR = Path(__file__).parent


def systolic_presets() -> dict[str, dict]:
    """Named sets of J x K systolic hardware points: name -> {description, points}."""
    return tomllib.loads((_DIR / "systolic.toml").read_text())
