"""The layering of `sweep.config`: every import (module- or function-level) goes down, never in a
cycle, and never up to the engine, the reports, the tuner or the CLI."""

import ast
from pathlib import Path

import sweep.config
import sweep.common.errors

PKG = Path(sweep.config.__file__).parent
FORBIDDEN = ("sweep.engine", "sweep.reports", "sweep.tune", "sweep.cli")


def _imports(path: Path) -> set[str]:
    """Every module ``path`` imports, at any level of nesting."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module)
            out |= {f"{node.module}.{a.name}" for a in node.names}
    return out


def _graph() -> dict[str, set[str]]:
    mods = {f"sweep.config.{p.stem}": p for p in PKG.glob("*.py") if p.stem != "__init__"}
    return {m: {i for i in _imports(p) if i in mods} for m, p in mods.items()}


def test_no_module_imports_upwards():
    for p in PKG.glob("*.py"):
        bad = sorted(i for i in _imports(p) if i.startswith(FORBIDDEN))
        assert not bad, (p.name, bad)


def test_campaign_readers_share_common_and_not_each_other():
    g = _graph()
    assert "sweep.config.tune_campaign" not in g["sweep.config.campaign"]
    assert "sweep.config.campaign" not in g["sweep.config.tune_campaign"]
    assert "sweep.config.validation" in g["sweep.config.campaign"] & g["sweep.config.tune_campaign"]


def test_no_import_cycle():
    g = _graph()

    def reach(m, seen):
        for n in g[m]:
            if n not in seen:
                seen.add(n)
                reach(n, seen)
        return seen
    for m in g:
        assert m not in reach(m, set()), m


def test_finding_is_the_one_name():
    assert hasattr(sweep.common.errors, "Finding") and not hasattr(sweep.common.errors, "Problem")
    f = sweep.common.errors.Finding("run.x", 1, "bad")
    assert str(sweep.common.errors.CampaignError("c.toml", [f])) == "c.toml: 1 problem(s):\n  - run.x = 1: bad"
