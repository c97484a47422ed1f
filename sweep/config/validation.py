"""What both campaign readers share: reading TOML, collecting findings, checking tables and values.

`sweep.config.campaign` (`sweep run` campaigns) and `sweep.config.tune_campaign` (`sweep tune`
campaigns) both build on this module; neither imports the other. Every check reports through a
``bad(key, value, message)`` callable (`Bad`), usually `Findings.bad`, so that one `CampaignError`
lists every finding of a file at once.
"""

from __future__ import annotations

import math
import tomllib
from pathlib import Path
from typing import Any, Callable

from sweep.common.errors import CampaignError, Finding

__all__ = ["Bad", "Findings", "NOT_FINITE", "SEED_MAX", "SEED_RULE", "read_toml", "read_toml_file", "resolve_path",
           "is_tune_campaign", "check_table", "is_int", "is_number", "is_finite", "is_seed", "check_seed", "check_seeds",
           "read_params_file"]

#: Reports one finding: ``bad(key, value, message)`` (key: the TOML key path, e.g. ``run.chunk_points``).
Bad = Callable[[str, Any, str], None]

#: The message of a NaN or infinite number where a campaign expects a finite one (TOML has ``nan``
#: and ``inf``); mapper parameters say the same through `mappers.base.Param.check`.
NOT_FINITE = "expected a finite number (NaN and infinities are refused)"

#: The largest seed, the one rule for every seed (campaign ``seeds``, ``[search] seed``, a tuning
#: campaign's seeds and ``[sampler] seed``, ``[[mappers]] params.seed``, `sweep map --seed` and
#: ``--param seed``): 0 <= seed <= 2**32 - 1. The narrowest of the places a seed goes: Optuna's
#: samplers seed ``numpy.random.RandomState``, which takes 0..2**32 - 1 (ValueError beyond); a
#: row's ``seed`` column is a signed 64-bit Parquet integer (pyarrow's OverflowError at 2**63,
#: after the task ran); `numpy.random.default_rng` / ``SeedSequence`` take any integer >= 0.
SEED_MAX = 2 ** 32 - 1
#: What `check_seed` says of a value outside the rule.
SEED_RULE = f"expected an integer >= 0 and <= {SEED_MAX} (seeds are 0 <= seed < 2**32, the range Optuna's samplers take)"


class Findings:
    """The findings of one campaign file: `bad` collects, `raise_if_any` raises them all at once."""

    def __init__(self) -> None:
        self.items: list[Finding] = []

    def bad(self, key: str, value: Any, message: str) -> None:
        """Record one finding (a `Bad`)."""
        self.items.append(Finding(key, value, message))

    def __bool__(self) -> bool:
        return bool(self.items)

    def raise_if_any(self, source: str) -> None:
        """Raise a `CampaignError` of ``source`` listing every finding, if there is one."""
        if self.items:
            raise CampaignError(source, self.items)


def read_toml(path: str | Path) -> dict[str, Any]:
    """The parsed TOML file ``path``.

    Raises:
        CampaignError: the file cannot be read or is not valid TOML (key ``<file>``).
    """
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as e:
        raise CampaignError(str(p), [Finding("<file>", str(p), f"cannot read: {e.strerror}")]) from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise CampaignError(str(p), [Finding("<file>", str(p), f"not valid TOML: {e}")]) from None


def read_toml_file(path: Path, key: str, value: Any, bad: Bad) -> dict[str, Any] | None:
    """The parsed TOML file ``path`` that a campaign names at ``key`` (as ``value``), or None with
    a finding (unreadable, not TOML)."""
    try:
        return tomllib.loads(path.read_text())
    except OSError as e:
        bad(key, value, f"cannot read {path}: {e.strerror}")
    except tomllib.TOMLDecodeError as e:
        bad(key, value, f"{path} is not valid TOML: {e}")
    return None


def resolve_path(name: str, base_dir: Path) -> Path:
    """A file name of a campaign: absolute as given, else relative to the campaign's folder."""
    return Path(name) if Path(name).is_absolute() else base_dir / name


def is_tune_campaign(data: dict) -> bool:
    """A parsed TOML file is a tuning campaign if it has a ``space`` table and a ``training`` table."""
    return isinstance(data, dict) and "space" in data and "training" in data


def check_table(value: Any, key: str, known, bad: Bad) -> dict:
    """``value`` as a table: a finding for each key not in ``known`` (and for a non-table); returns
    the known entries. ``key`` "" is the file's top level."""
    if not isinstance(value, dict):
        bad(key, value, "expected a table")
        return {}
    for k in value:
        if k not in known:
            bad(f"{key}.{k}" if key else k, value[k], f"unknown key; known: {sorted(known)}")
    return {k: x for k, x in value.items() if k in known}


def is_int(v: Any, lo: int, hi: int | None = None) -> bool:
    """``v`` is an integer (not a bool) in ``[lo, hi]``."""
    return isinstance(v, int) and not isinstance(v, bool) and v >= lo and (hi is None or v <= hi)


def is_seed(v: Any) -> bool:
    """``v`` is a seed: an integer (not a bool) in [0, `SEED_MAX`]."""
    return is_int(v, 0, SEED_MAX)


def check_seed(v: Any, key: str, bad: Bad) -> bool:
    """The one seed rule (`SEED_MAX`): True if ``v`` is a seed, else a finding at ``key`` (e.g.
    ``seeds[1]``, ``search.seed``, ``--seed``) saying the range, and False."""
    if is_seed(v):
        return True
    bad(key, v, SEED_RULE)
    return False


def check_seeds(v: Any, key: str, bad: Bad, distinct: bool = False) -> bool:
    """A list of seeds at ``key`` (e.g. ``seeds``): non-empty, each by the one seed rule
    (`check_seed`), distinct if ``distinct``; True, or one finding naming the first bad entry and
    False."""
    if not isinstance(v, list) or not v:
        bad(key, v, "expected a non-empty list of integers, e.g. [0, 1, 2]")
        return False
    first = next((i for i, s in enumerate(v) if not is_seed(s)), None)
    if first is not None:
        bad(key, v, f"{key}[{first}] = {v[first]!r}: {SEED_RULE}")
        return False
    if distinct and len(set(v)) != len(v):
        bad(key, v, "duplicate seeds: expected distinct integers")
        return False
    return True


def is_number(v: Any) -> bool:
    """``v`` is an int or a float, not a bool (NaN and infinities included: see `is_finite`)."""
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def is_finite(v: Any) -> bool:
    """``v`` is a number other than NaN and +-inf."""
    return is_number(v) and math.isfinite(v)


def read_params_file(value: Any, mapper: str, base_dir: Path, key: str, bad: Bad) -> dict[str, Any] | None:
    """The ``[mappers.<mapper>]`` table of a ``params_file`` (e.g. `sweep tune`'s best_params.toml),
    resolved against the campaign's folder; None (and a finding) if unusable. Inline ``params``
    are merged over it by the caller (inline wins)."""
    if not isinstance(value, str) or not value:
        bad(key, value, "expected a path to a TOML file with a [mappers.<name>] table")
        return None
    path = resolve_path(value, base_dir)
    data = read_toml_file(path, key, value, bad)
    if data is None:
        return None
    table = data.get("mappers", {}).get(mapper) if isinstance(data.get("mappers"), dict) else None
    if not isinstance(table, dict):
        bad(key, value, f"{path} has no [mappers.{mapper}] table")
        return None
    return dict(table)
