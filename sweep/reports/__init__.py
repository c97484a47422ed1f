"""`sweep report`: paper-style tables and PNG plots of a result directory, one module per kind.

`build_report` reads the directory's manifest (`sweep.engine.store.Store`) and hands it to the
module of its ``config.kind``; `print_report` prints what that module built:

* ``systolic`` -- `sweep.reports.systolic`: DeepOpt's optimal hardware allocation;
* ``loopnest`` -- `sweep.reports.loopnest`: mappers compared per layer and network (SALSA, CoSA);
* ``npu`` -- `sweep.reports.npu`: the loop-nest report plus Flexer vs the best static schedule;
* ``tune`` -- `sweep.reports.tune`: a `sweep tune` study (trials, importances, held-out gap).

Each module has ``build(directory, manifest, plots_dir) -> dict`` and ``show(rep, console)``;
`sweep.reports.summary` holds the summary the first three share, `sweep.reports.plots` the one plot
helper of all four.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import Any

from sweep.engine.store import Store
from sweep.errors import StoreError
from sweep.reports import archsearch, loopnest, npu, systolic, tune

__all__ = ["KINDS", "build_report", "print_report"]

#: The report module of each ``config.kind`` of a manifest.
KINDS: dict[str, ModuleType] = {"systolic": systolic, "loopnest": loopnest, "npu": npu, "tune": tune,
                                "archsearch": archsearch}


def _kind(directory: Path, manifest: dict) -> str:
    config = manifest.get("config")
    kind = config.get("kind", "systolic") if isinstance(config, dict) else None
    if kind not in KINDS:
        raise StoreError(f"{directory / 'manifest.json'}: unknown result kind {kind!r}; expected one of {list(KINDS)}")
    return kind


def build_report(directory: str | Path, plots_dir: str | Path | None = None) -> dict[str, Any]:
    """The report of a result or tuning directory as JSON-able data; with ``plots_dir``, also
    PNG plots (their paths under ``"plots"``; a tuning directory writes them to ``DIR/plots`` by
    default).

    Raises:
        StoreError: not a result directory, an unknown kind, unreadable, or empty.
    """
    directory = Path(directory)
    manifest = Store(directory).manifest()
    return KINDS[_kind(directory, manifest)].build(directory, manifest, plots_dir)


def print_report(rep: dict[str, Any], console) -> None:
    """Print ``rep`` (from `build_report`) as Rich tables on ``console``, by the kind in the
    manifest of its directory.

    Raises:
        StoreError: the directory of ``rep`` is gone or no longer a result directory.
    """
    directory = Path(rep["directory"])
    KINDS[_kind(directory, Store(directory).manifest())].show(rep, console)
