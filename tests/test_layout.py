"""The shape of the code (DESIGN.md): three layers with imports only going down, no import cycle
(function-level imports included), no function over 100 lines (Numba kernels included), no package
folder with more than 12 modules, no loose module at `sweep/`'s root but the entry points. Read from
the source with `ast`, so it holds for every module, imported or not."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from paths import REPO

PACKAGES = ("costmodel", "mappers", "sweep")
LAYER = {"costmodel": 0, "mappers": 1, "sweep": 2}
MAX_FUNCTION_LINES = 100
MAX_MODULES_PER_PACKAGE = 12


def _modules() -> dict[str, Path]:
    out = {}
    for pkg in PACKAGES:
        for f in sorted((REPO / pkg).rglob("*.py")):
            parts = list(f.relative_to(REPO).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out[".".join(parts)] = f
    return out


MODULES = _modules()


def _imports(name: str, path: Path) -> set[str]:
    """Project modules that ``name`` imports anywhere in its body (module or function level)."""
    tree = ast.parse(path.read_text())
    is_pkg = path.name == "__init__.py"
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = name.split(".") if is_pkg else name.split(".")[:-1]
                anchor = anchor[:len(anchor) - node.level + 1]
                base = ".".join(anchor + ([node.module] if node.module else []))
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names]
        else:
            continue
        for t in targets:
            while t and t not in MODULES:   # `import a.b.c` of a name inside a module
                t = t.rpartition(".")[0]
            if t and t != name:
                out.add(t)
    return out


GRAPH = {name: _imports(name, path) for name, path in MODULES.items()}


def test_imports_only_go_down():
    bad = [(a, b) for a, deps in GRAPH.items() for b in deps
           if LAYER[b.split(".")[0]] > LAYER[a.split(".")[0]]]
    assert not bad, f"upward imports: {bad}"


def test_no_import_cycle():
    """Tarjan-free check: a depth-first search that reports the first cycle it meets."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(n: str) -> list[str] | None:
        state[n] = 1
        stack.append(n)
        for m in sorted(GRAPH[n]):
            if m.startswith(n + "."):   # a package importing its own submodule (re-export) is no cycle
                continue
            if state.get(m) == 1 and not n.startswith(m + "."):
                return stack[stack.index(m):] + [m]
            if m not in state:
                cyc = visit(m)
                if cyc:
                    return cyc
        stack.pop()
        state[n] = 2
        return None

    for n in sorted(GRAPH):
        if n not in state:
            cyc = visit(n)
            assert cyc is None, "import cycle: " + " -> ".join(cyc)


@pytest.mark.parametrize("name", sorted(MODULES))
def test_no_function_over_100_lines(name):
    tree = ast.parse(MODULES[name].read_text())
    long = [(n.name, n.end_lineno - n.lineno + 1) for n in ast.walk(tree)
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
            and n.end_lineno - n.lineno + 1 > MAX_FUNCTION_LINES]
    assert not long, f"{name}: functions over {MAX_FUNCTION_LINES} lines: {long}"


def test_no_package_folder_over_12_modules():
    folders: dict[Path, int] = {}
    for path in MODULES.values():
        if path.name != "__init__.py":
            folders[path.parent] = folders.get(path.parent, 0) + 1
    big = {str(f.relative_to(REPO)): n for f, n in folders.items() if n > MAX_MODULES_PER_PACKAGE}
    assert not big, f"package folders with more than {MAX_MODULES_PER_PACKAGE} modules: {big}"


#: The modules `sweep/`'s root may hold: the entry points (the command line, the Python API, the one
#: Optuna driver) and the package's own files; everything else lives in a room named for what it holds
#: (commands/, common/, config/, engine/, kinds/, reports/, search/, tune/).
SWEEP_ROOT_MODULES = {"__init__.py", "__main__.py", "cli.py", "api.py", "study.py"}


def loose_modules(root: Path) -> list[str]:
    """The ``*.py`` files directly in ``root`` (`sweep/`) that are not entry points."""
    return sorted(f.name for f in root.glob("*.py") if f.name not in SWEEP_ROOT_MODULES)


def test_no_loose_module_at_the_sweep_root():
    loose = loose_modules(REPO / "sweep")
    assert not loose, (f"loose module(s) at sweep/'s root: {', '.join('sweep/' + n for n in loose)}; only "
                       f"{', '.join(sorted(SWEEP_ROOT_MODULES - {'__init__.py', '__main__.py'}))} live there: "
                       "move each into the room named for what it holds (commands/, common/, config/, engine/, ...)")


def test_the_loose_module_check_sees_a_loose_module(tmp_path):
    """The checker itself, on the old layout's shape: helpers beside the entry points."""
    for name in ("__init__.py", "cli.py", "api.py", "study.py", "fmt.py", "single.py"):
        (tmp_path / name).write_text("")
    assert loose_modules(tmp_path) == ["fmt.py", "single.py"]


def test_the_graph_sees_function_level_imports():
    """The checker itself: sweep.cli imports sweep.commands.map_eval inside a command function."""
    assert "sweep.commands.map_eval" in GRAPH["sweep.cli"]


TOML_WRITER = "costmodel.importers.toml_out"
TOML_WRITER_LIBRARIES = {"tomli_w", "tomlkit", "toml", "pytoml", "qtoml", "rtoml"}  # tomllib (reading) is fine


def test_one_toml_writer():
    """One TOML writer: `costmodel.importers.toml_out` (through tomli-w) writes every TOML text.

    Checked from the source, two ways a second writer would show: (1) only that module imports a
    TOML-writing library; (2) no other module defines a function whose name says ``toml`` and that
    returns a string (annotated ``-> str`` or not annotated) unless its body calls the one writer
    (``toml_out``), as `sweep.reports.archsearch.toml_literal` does; readers (``read_toml`` ->
    dict) pass. A hand-made writer under another name (``f"{k} = {v}"`` lines) is not caught: the
    rule is what reviewers hold to, this test the tripwire for the usual shape of one."""
    importers, writers = [], []
    for name, path in MODULES.items():
        if name == TOML_WRITER:
            continue
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                mods = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level:
                mods = [node.module or ""]
            else:
                mods = []
            importers += [(name, m) for m in mods if m.split(".")[0] in TOML_WRITER_LIBRARIES]
            if (isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and "toml" in node.name.lower()
                    and (node.returns is None or ast.unparse(node.returns) == "str")
                    and "toml_out" not in ast.unparse(node)):
                writers.append((name, node.name))
    assert not importers, f"only {TOML_WRITER} imports a TOML writer library: {importers}"
    assert not writers, f"TOML written by hand (use {TOML_WRITER}): {writers}"
    assert TOML_WRITER in MODULES and "tomli_w" in MODULES[TOML_WRITER].read_text()


#: Library modules that import optuna besides the study driver `sweep.study`, each with its reason.
OPTUNA_EXEMPT: dict[str, str] = {}


def _imports_optuna(path: Path) -> bool:
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import) and any(a.name.split(".")[0] == "optuna" for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").split(".")[0] == "optuna":
            return True
    return False


def test_only_the_study_driver_imports_optuna():
    """One Optuna driver (DESIGN.md): storage, seeding, samplers, crash recovery live in sweep.study."""
    users = {name for name, path in MODULES.items() if _imports_optuna(path)}
    assert "sweep.study" in users
    assert users - {"sweep.study"} - set(OPTUNA_EXEMPT) == set(), "modules importing optuna outside sweep.study"
    assert set(OPTUNA_EXEMPT) <= users, "an exemption that is no longer needed"


def test_the_study_driver_stays_below_the_runner_and_kinds():
    """sweep.study never imports the runner (DESIGN.md); the engine imports no campaign kind, no
    search and no tuning module (issue 32, item 3: the kinds own their study loops, the engine
    reaches them through ``campaign.plan.run_study``)."""
    assert not any(m == "sweep.engine.runner" or m.startswith("sweep.kinds") for m in GRAPH["sweep.study"])
    upward = ("sweep.kinds", "sweep.search", "sweep.tune")
    bad = sorted(f"{n} imports {m}" for n, deps in GRAPH.items() if n.startswith("sweep.engine")
                 for m in deps if m.startswith(upward))
    assert not bad, bad


#: The campaign kinds' names, which only the kind registry (`sweep.kinds`) may compare.
CAMPAIGN_KINDS = {"systolic", "loopnest", "npu", "archsearch", "tune", "serving"}


def _kind_literals(node: ast.AST) -> set[str]:
    """Campaign kind names written as literals in ``node`` (a string, or a tuple / list / set of them)."""
    if isinstance(node, ast.Constant) and node.value in CAMPAIGN_KINDS:
        return {node.value}
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return {e.value for e in node.elts if isinstance(e, ast.Constant) and e.value in CAMPAIGN_KINDS}
    return set()


def kind_dispatch(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, source) of every dispatch on a campaign kind's name in ``tree``: a comparison (``==``,
    ``!=``, ``in``, ``not in``) with a kind name, a ``match`` case on one, or a table keyed by two or
    more kind names (a registry of its own)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare) and any(_kind_literals(o) for o in (node.left, *node.comparators)):
            found.append((node.lineno, ast.unparse(node)))
        elif isinstance(node, ast.MatchValue) and _kind_literals(node.value):
            found.append((node.lineno, ast.unparse(node.value)))
        elif isinstance(node, ast.Dict) and len(set().union(*map(_kind_literals, filter(None, node.keys)))) >= 2:
            found.append((node.lineno, ast.unparse(node)[:80]))
    return found


def test_the_checker_finds_kind_dispatch():
    """The checker itself, on the shapes the kinds replaced (in the CLI, the engine's task expansion,
    the reports' dispatch and the ``[report]`` table's reader before the kind registry), and not on
    what is not a dispatch."""
    caught = ['c.kind == "archsearch"', 'campaign.kind in ("loopnest", "archsearch")', 'kind != "systolic"',
              'match kind:\n    case "npu":\n        pass',
              'KINDS = {"systolic": systolic, "loopnest": loopnest}']
    passed = ['row = {"name": k, "kind": "systolic"}', 'runs_study(s.sampler, "archsearch")',
              'if sp.kind == "categorical": pass', 'x = {"npu": 1}']
    assert all(kind_dispatch(ast.parse(src)) for src in caught)
    assert not any(kind_dispatch(ast.parse(src)) for src in passed)


def test_only_the_kind_registry_dispatches_on_campaign_kinds():
    """Campaign kinds as a protocol (DESIGN.md): every question about a kind goes to its class in
    `sweep.kinds` (``campaign.plan`` in the engine, `sweep.kinds.registry` elsewhere); no module
    outside that package compares a kind's name or keeps a table keyed by kind names."""
    from sweep.kinds import KINDS
    assert set(KINDS) == CAMPAIGN_KINDS
    bad = {name: found for name, path in MODULES.items() if not name.startswith("sweep.kinds")
           if (found := kind_dispatch(ast.parse(path.read_text())))}
    assert not bad, f"campaign-kind dispatch outside sweep.kinds: {bad}"


#: The module through which every path maps a problem (issue 32: one spine).
SPINE = "sweep.engine.problem"
#: What only the spine asks of a mapper: a problem built, the seed entered, units listed or counted,
#: a unit run (``run(problem, unit, params)``: three arguments), units reduced, a whole search.
SPINE_CALLS = {"make_problem", "with_seed", "units", "unit_count", "reduce", "search"}


def spine_bypasses(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, source) of every call in ``tree`` that asks a mapper what only the spine asks:
    ``x.units(problem, params)``, ``x.make_problem(...)``, ... (`SPINE_CALLS`, with arguments: a
    `Problem`'s own ``units()`` takes none) or ``x.run(problem, unit, params)``."""
    found = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        name, n = node.func.attr, len(node.args) + len(node.keywords)
        if (name in SPINE_CALLS and n) or (name == "run" and n == 3):
            found.append((node.lineno, ast.unparse(node)[:90]))
    return found


def test_only_the_spine_builds_a_problems_units():
    """No module of sweep/ but `sweep.engine.problem` builds a problem, lists its units, runs one
    or reduces them (issue 32: ``sweep map``, campaigns of every kind, architecture search and
    tuning all go through `Problem`)."""
    bad = [f"{name}:{line}: {src}" for name, path in MODULES.items()
           if name.startswith("sweep.") and name != SPINE
           for line, src in spine_bypasses(ast.parse(path.read_text()))]
    assert not bad, "a mapper asked outside the spine (use sweep.engine.problem.Problem):\n" + "\n".join(bad)
    assert spine_bypasses(ast.parse(MODULES[SPINE].read_text()))


def test_the_spine_check_sees_the_old_paths():
    """The checker itself, on the shapes the spine replaced (``sweep map``, the design tasks, the
    systolic kind, tuning) and not on calls that are no mapper's (a task's or a study's ``run``)."""
    caught = ["best = mapper.reduce([mapper.run(prob, u, params) for u in mapper.units(prob, params)])",
              "p = mapper.with_seed(spec.params, seed)", "prob = mapper.make_problem(layer, acc, None, obj)",
              "n = mapper.unit_count(prob, params)"]
    passed = ["out = task.run()", "drv.run(objective)", "ex.run(tasks, on_result)", "sol = prob.solve()",
              "units = prob.units()", "n = prob.unit_count()"]
    assert all(spine_bypasses(ast.parse(src)) for src in caught)
    assert not any(spine_bypasses(ast.parse(src)) for src in passed)


def test_the_kinds_own_their_study_loops():
    """The Optuna loops of an architecture search and of a tuning campaign are run by their kinds
    (`ArchsearchKind.run_study`, `TuneKind.run_study`, issue 32), on `sweep.study`: no module outside
    `sweep.kinds` and the loops' own rooms calls them (the CLI's ``sweep tune`` goes through the kind)."""
    loops = {"run_search", "run_tune"}
    own = ("sweep.kinds.", "sweep.search.", "sweep.tune.")
    bad = sorted(f"{name}: {n.id if isinstance(n, ast.Name) else n.attr}" for name, path in MODULES.items()
                 if name.startswith("sweep.") and not name.startswith(own)
                 for n in ast.walk(ast.parse(path.read_text()))
                 if (isinstance(n, ast.Name) and n.id in loops) or (isinstance(n, ast.Attribute) and n.attr in loops)
                 or (isinstance(n, ast.alias) and n.name in loops))
    assert not bad, bad
    assert all(any(f"{loop}(" in MODULES[k].read_text() for k in ("sweep.kinds.archsearch", "sweep.kinds.tune"))
               for loop in loops)
