"""`sweep.api`'s reading side: a result directory as DataFrames (`Results`, `load_results`) and the
Pareto front of a table's columns (`pareto_front`). ``sweep report`` builds its tables from the
same functions (`sweep.reports.loopnest.layer_report`, `sweep.reports.llm.llm_steps`).

Units as in `sweep.api`: energy in pJ, latency in cycles, EDP in pJ x cycles, area in mm^2.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["Results", "load_results", "pareto_front"]


@dataclass(frozen=True)
class Results:
    """A result directory written by ``sweep run`` (or `run_campaign`), read as DataFrames; each
    table is read on first use and kept.

    Attributes:
        directory: the result directory; manifest: its ``manifest.json`` (campaign name,
            ``config`` = the resolved configuration, ``config_hash``, ``tasks``, ``code_version``).
        kind: the campaign kind that wrote it (``config.kind``).
    """

    directory: Path
    manifest: dict[str, Any] = field(repr=False)
    kind: str

    def _table(self, name: str) -> pd.DataFrame | None:
        from sweep.engine.store import Store
        from sweep.kinds.registry import kind_named
        return Store(self.directory).read(name) if name in kind_named(self.kind).tables else None

    @cached_property
    def rows(self) -> pd.DataFrame:
        """Every stored row (n_rows x columns): one per work unit of a layer (loop-nest, multi-NPU),
        per (design, layer) (architecture search) or per hardware point and layer (systolic), with
        ``status`` ("ok" / "error"), ``error``, ``energy_pj`` (pJ), ``latency_cycles`` (cycles),
        ``edp`` (pJ x cycles) and the kind's own columns (see docs/operations.md, "Results")."""
        from sweep.engine.store import Store
        return Store(self.directory).read("rows")

    @cached_property
    def totals(self) -> pd.DataFrame | None:
        """Architecture search: one row per (design, network) with the network totals per inference
        (``energy_pj``, ``latency_cycles``, ``edp``), the design's ``area_mm2`` (mm^2), its
        ``design_id`` and one column per searched parameter (``array.D1``, ...). None for other kinds."""
        return self._table("totals")

    @cached_property
    def rates(self) -> pd.DataFrame | None:
        """Serving campaigns: one row per (design, scheduler setting, offered rate) with the served
        load's figures (``ttft_p50_s``, ``tpot_p90_s``, ``e2e_p99_s``, ``slo_attainment``, ...; the
        per-design goodput rows are `rows`). None for other kinds."""
        return self._table("rates")

    @cached_property
    def layers(self) -> pd.DataFrame | None:
        """Loop-nest and multi-NPU campaigns: per (network, layer, arch, objective, mapper
        configuration ``label``) the best unit of each problem, averaged over seeds: ``value``,
        ``energy_pj``, ``latency_cycles``, ``evaluations``, ``search_s`` (seconds), ``seeds``,
        ``repeat`` and ``vs_baseline`` (baseline value / value) when the baseline mapper ran:
        the per-layer table of ``sweep report`` (`sweep.reports.loopnest.layer_report`). None
        for kinds without a problems table; empty if no row is "ok"."""
        import pandas as pd

        from sweep.reports.loopnest import layer_report
        problems = self._table("problems")
        if problems is None:
            return None
        rows = self.rows
        if rows.empty or problems.empty:
            return pd.DataFrame()
        baseline = (self.manifest.get("report") or {}).get("baseline", "random")
        return pd.DataFrame(layer_report(rows, problems, baseline)["layers"])


    @cached_property
    def steps(self) -> pd.DataFrame | None:
        """Loop-nest campaigns of transformer steps: one row per (step, arch, objective, mapper
        label) with the step's parameters (``model``, ``phase``, ``batch``, ``seq``, ``context``),
        ``matmul_energy_pj``, ``vector_energy_pj``, ``energy_pj`` (pJ), ``latency_cycles``,
        ``ttft_s`` / ``time_per_token_s`` (s), ``tokens_per_s`` and ``energy_per_token_j`` (J):
        the step table of ``sweep report`` (`sweep.reports.llm.llm_steps`). None for other kinds;
        empty for a campaign without transformer steps."""
        import pandas as pd

        from sweep.reports.llm import llm_steps
        from sweep.reports.loopnest import best_units
        layers = self.layers
        if layers is None:
            return None
        problems = self._table("problems")
        best = best_units(self.rows, problems) if problems is not None and not problems.empty else None
        return pd.DataFrame(llm_steps(self.directory, self.manifest, layers.to_dict("records"), best)["steps"])


def load_results(directory: str | Path) -> Results:
    """The result directory ``directory`` as `Results` (``.rows``, ``.totals``, ``.layers``,
    ``.manifest``).

    Raises:
        StoreError: not a dse-sweep result directory, an unknown kind, or (on reading a table) an
            unreadable fragment.
    """
    from sweep.engine.store import Store
    from sweep.kinds.registry import of_directory
    d = Path(directory)
    manifest = Store(d).manifest()
    return Results(directory=d, manifest=manifest, kind=of_directory(d, manifest).name)


def pareto_front(df: pd.DataFrame, x: str, y: str, *more: str) -> pd.DataFrame:
    """The rows of ``df`` no other row dominates in columns ``x``, ``y`` (and ``more``), every
    column minimised (`sweep.reports.pareto.pareto_front`: no worse in all and better in one;
    rows with NaN or infinite values never on the front), sorted by ``x``, then ``y``, ...;
    the index of ``df`` is kept. E.g. ``pareto_front(results.totals, "area_mm2", "edp")``.

    Raises:
        KeyError: a column is missing. ValueError: a column is not numeric.
    """
    from sweep.reports.pareto import pareto_front as _front
    cols = [x, y, *more]
    missing = [c for c in cols if c not in df.columns]
    if missing:
        raise KeyError(f"pareto_front: no column(s) {missing}; columns: {list(df.columns)}")
    return df.iloc[_front(df[cols].to_numpy(dtype=float))]
