"""The ``[report]`` table of a campaign: options of `sweep report`, checked like every other table.

The run stores the table in the result directory's manifest and `sweep report` reads it from there
(`sweep.reports.systolic`, `sweep.reports.loopnest`, `sweep.reports.npu`; this package may not
import them). The keys they read depend on the architecture kind:

* systolic: ``fs_point`` (the hardware point of the fixed-scheduling penalty table, a partial
  ``{J, K, fsram_kib, isram_kib, psram_kib}`` over DeepOpt's Table 3 point) and
  ``worst_case_window`` (the area window under the budget, a fraction in [0, 1], default 0.10);
* loopnest: ``baseline`` (the mapper the others are compared with, default ``random``) and
  ``network`` (the network of the per-layer plots, default the first);
* npu: ``baseline`` (default ``static``), ``mapper`` (the mapper compared with it, default
  ``flexer``) and ``network``;
* archsearch: ``area_budgets`` (mm^2, the best design under each), ``top_k`` (rows of the top
  table, default 10), ``network`` and ``slo`` (service-level targets of a search over systems of
  chips, seconds: ``ttft_s``, ``time_per_token_s``; `sweep.reports.systems`).

None of it is part of the configuration hash: the report table changes no result row.
"""

from __future__ import annotations

from typing import Any

from costmodel.systolic.points import HW_COLUMNS
from sweep.config.validation import NOT_FINITE, Bad, is_finite, is_int, is_number

__all__ = ["parse_report", "SLO_KEYS"]

#: The service-level targets ``[report] slo`` may set (seconds; `sweep.reports.systems`).
SLO_KEYS = ("ttft_s", "time_per_token_s")


def parse_report(value: Any, kind: str, known: tuple[str, ...], networks: list[str], mappers: list[str],
                 bad: Bad) -> dict[str, Any]:
    """Check the ``[report]`` table of a campaign of ``kind``, whose report reads the keys ``known``
    (`sweep.kinds.base.CampaignKind.report_keys`) and whose networks and mappers have the names
    ``networks`` and ``mappers`` (empty: not known, not checked); returns the table (unchanged) or
    {} if it is not a table. Findings go to ``bad``."""
    if not isinstance(value, dict):
        bad("report", value, "expected a table")
        return {}
    for k, v in value.items():
        key = f"report.{k}"
        if k not in known:
            bad(key, v, f"unknown key for kind {kind!r}; known: {sorted(known)}")
        elif k == "fs_point":
            _check_fs_point(v, key, bad)
        elif k == "worst_case_window":
            if is_number(v) and not is_finite(v):
                bad(key, v, NOT_FINITE)
            elif not is_number(v) or not 0 <= v <= 1:
                bad(key, v, "expected a fraction of the area budget in [0, 1], e.g. 0.1")
        elif k in ("baseline", "mapper"):
            if not isinstance(v, str) or (mappers and v not in mappers):
                bad(key, v, f"expected the name of one of the campaign's mappers {mappers}")
        elif k == "area_budgets":
            if not isinstance(v, list) or not v or not all(is_finite(x) and x > 0 for x in v):
                bad(key, v, "expected a non-empty list of positive areas in mm^2")
        elif k == "top_k":
            if not is_int(v, 1, 10_000):
                bad(key, v, "expected a positive integer")
        elif k == "slo":
            if not isinstance(v, dict) or not v:
                bad(key, v, f"expected a table of targets in seconds with keys {list(SLO_KEYS)}")
            for sk, sv in (v.items() if isinstance(v, dict) else ()):
                if sk not in SLO_KEYS:
                    bad(f"{key}.{sk}", sv, f"unknown target; known: {list(SLO_KEYS)}")
                elif not is_finite(sv) or sv <= 0:
                    bad(f"{key}.{sk}", sv, "expected a positive number of seconds")
        elif k == "network":
            if not isinstance(v, str) or (networks and v not in networks):
                bad(key, v, f"expected the name of one of the campaign's networks {networks}")
    return value


def _check_fs_point(value: Any, key: str, bad: Bad) -> None:
    """``fs_point``: some of J, K, fsram_kib, isram_kib, psram_kib as positive integers (the rest
    are DeepOpt Table 3's)."""
    if not isinstance(value, dict):
        bad(key, value, f"expected a table with some of {list(HW_COLUMNS)} (the others: DeepOpt's Table 3 point)")
        return
    for k, v in value.items():
        if k not in HW_COLUMNS:
            bad(f"{key}.{k}", v, f"unknown key; known: {list(HW_COLUMNS)}")
        elif not is_int(v, 1):
            bad(f"{key}.{k}", v, "expected a positive integer")
