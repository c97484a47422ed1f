"""The kind registry: every campaign kind, which kind a campaign file, a result directory or an
architecture is of, and the report of a result directory (`sweep report`).

A new kind is a `sweep.kinds.base.CampaignKind` subclass in a module of this package plus one entry
of `KINDS`. Nothing outside this package compares a campaign kind's name (`tests/test_layout.py`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sweep.common.errors import StoreError
from sweep.kinds.archsearch import ArchsearchKind
from sweep.kinds.base import CampaignKind
from sweep.kinds.layers import LayerKind
from sweep.kinds.loopnest import LoopnestKind
from sweep.kinds.npu import NPUKind
from sweep.kinds.serving import ServingKind
from sweep.kinds.systolic import SystolicKind
from sweep.kinds.tune import TuneKind

__all__ = ["KINDS", "kind_named", "detect", "arch_kinds", "for_arch", "for_mapper_kind", "of_directory",
           "build_report", "print_report", "build_html"]

#: Every kind by name, in the order `detect` asks them (kinds recognised by other tables than
#: ``[architectures] kind`` first).
KINDS: dict[str, CampaignKind] = {k.name: k for k in (
    TuneKind(), ArchsearchKind(), SystolicKind(), LoopnestKind(), NPUKind(), ServingKind())}


def kind_named(name: str) -> CampaignKind:
    """The kind called ``name``.

    Raises:
        KeyError: no such kind.
    """
    return KINDS[name]


def arch_kinds() -> list[str]:
    """The values ``[architectures] kind`` may take, in registry order of first use."""
    return list(dict.fromkeys(k.arch_kind for k in KINDS.values() if k.arch_kind is not None))


def detect(data: dict[str, Any]) -> CampaignKind | None:
    """The kind of the parsed campaign file ``data``: the first of `KINDS` that `matches` it; None
    if its ``[architectures] kind`` names none (the caller reports ``architectures.kind``)."""
    return next((k for k in KINDS.values() if k.matches(data)), None)


def unknown_kind_message() -> str:
    """What a campaign with an unknown ``[architectures] kind`` is told."""
    return f"expected one of {arch_kinds()}"


def for_arch(arch: Any) -> LayerKind | SystolicKind:
    """The kind that `sweep map` / `sweep.commands.map_eval` asks about ``arch``: a `LayerKind` for an
    `costmodel.loopnest.arch.Accelerator` or a `costmodel.npu.NPUArch` (layers mapped one by one),
    the `SystolicKind` for `costmodel.systolic.points.SystolicPoints` (a network scheduled on a
    hardware point: `SystolicKind.map_network`).

    Raises:
        TypeError: ``arch`` is of no such kind.
    """
    for k in KINDS.values():
        if isinstance(k, (LayerKind, SystolicKind)) and isinstance(arch, k.arch_type()):
            return k
    raise TypeError(f"no campaign kind maps layers on a {type(arch).__name__}")


def for_mapper_kind(mapper_kind: str) -> CampaignKind:
    """The first kind (registry order: `KINDS`, named architectures before design spaces) whose
    mappers are of ``mapper_kind``, for messages of `sweep map`.

    Raises:
        KeyError: no kind runs such mappers.
    """
    found = [k for k in KINDS.values() if k.mapper_kind == mapper_kind and k.arch_kind is not None]
    if not found:
        raise KeyError(mapper_kind)
    return found[0]


def of_directory(directory: Path, manifest: dict[str, Any]) -> CampaignKind:
    """The kind that wrote the result or tuning directory ``directory`` (its manifest's
    ``config.kind``; "systolic" if absent: directories written before kinds were recorded).

    Raises:
        StoreError: an unknown kind.
    """
    config = manifest.get("config")
    name = config.get("kind", "systolic") if isinstance(config, dict) else None
    if name not in KINDS:
        raise StoreError(f"{directory / 'manifest.json'}: unknown result kind {name!r}; expected one of {list(KINDS)}")
    return KINDS[name]


def build_report(directory: str | Path, plots_dir: str | Path | None = None) -> dict[str, Any]:
    """The report of a result or tuning directory as JSON-able data, built by its kind's report
    module (`CampaignKind.report`); with ``plots_dir``, also PNG plots (their paths under
    ``"plots"``; a tuning directory writes them to ``DIR/plots`` by default).

    Raises:
        StoreError: not a result directory, an unknown kind, unreadable, or empty; or ``plots_dir``
            cannot be created or written (named as ``--plots``).
    """
    from sweep.engine.store import Store  # (pandas: not at import, `sweep --help` stays quick)
    directory = Path(directory)
    store = Store(directory)
    manifest = store.manifest()
    store.recover_if_free()   # a commit a killed command left: finished first, for every reader
    kind = of_directory(directory, manifest)
    try:
        return kind.report().build(directory, manifest, plots_dir)
    except OSError as e:  # the plots folder cannot be made or written (a report only reads otherwise)
        if plots_dir is None or not str(e.filename or "").startswith(str(plots_dir)):
            raise
        raise StoreError(f"--plots {plots_dir}: cannot write the plots there ({e.strerror or e})") from None


def build_html(directory: str | Path, out_file: str | Path, rep: dict[str, Any] | None = None) -> Path:
    """Write the interactive report of a result or tuning directory to ``out_file``: one
    self-contained HTML page (Plotly, its JavaScript inline) built by its kind's `html_module`
    from ``rep`` (`build_report` of ``directory``; built here when None). Returns the path written.

    Raises:
        StoreError: not a result directory, an unknown kind, a kind without an HTML report,
            unreadable, or empty; or ``out_file`` cannot be written (named as ``--html``).
        ImportError: Plotly is not installed (the `html` extra).
    """
    import importlib

    from sweep.engine.store import Store
    directory = Path(directory)
    manifest = Store(directory).manifest()
    kind = of_directory(directory, manifest)
    if not kind.html_module:
        raise StoreError(f"{directory}: `sweep report --html` has no interactive report of {kind.name} results")
    if rep is None:
        rep = build_report(directory)
    try:
        return importlib.import_module(kind.html_module).build(directory, manifest, out_file, rep)
    except OSError as e:  # the page (or its folder) cannot be written there
        raise StoreError(f"--html {out_file}: cannot write the report ({e.strerror or e})") from None


def print_report(rep: dict[str, Any], console: Any) -> None:
    """Print ``rep`` (from `build_report`) as Rich tables on ``console``, by the kind of its directory.

    Raises:
        StoreError: the directory of ``rep`` is gone or no longer a result directory.
    """
    from sweep.engine.store import Store
    directory = Path(rep["directory"])
    of_directory(directory, Store(directory).manifest()).report().show(rep, console)
