"""README.md is a front page and docs/ holds the rest (issue 32, item 6): every relative link of
README.md and docs/*.md resolves (files and #anchors, GitHub's heading slugs), the README stays
short, keeps the two fresh-machine commands verbatim (CI runs the test one) and links every docs
page; docs/campaigns.md's key table names every key the campaign parser takes; the README's first
campaign runs as written. The docs site (mkdocs.yml): its nav lists every page, and `mkdocs build
--strict` (warnings as errors: broken links and anchors, pages left out of the nav, griffe's
docstring warnings) builds it, the API reference generated from the docstrings, no asset fetched
from outside.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from paths import REPO

README = REPO / "README.md"
DOCS = REPO / "docs"
PAGES = sorted(DOCS.glob("*.md"))
API_PAGES = sorted((DOCS / "api").glob("*.md"))
MKDOCS = REPO / "mkdocs.yml"
MAIN_JOB = ("pip install -e . && sweep run campaigns/area16mm2.toml && sweep report results/area16mm2 "
            "--plots results/area16mm2/plots")
TESTS = 'pip install -e ".[test]" && python -m pytest'
QUICK_START = "## Quick start (fresh machine, Python >= 3.11)"

_FENCE = re.compile(r"^```.*?^```[^\n]*$", re.M | re.S)
_CODE = re.compile(r"`[^`\n]*`")
_LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")


def _prose(text: str) -> str:
    """``text`` without fenced code blocks; inline code spans emptied (links around them stay)."""
    return _CODE.sub("``", _FENCE.sub("", text))


def _slug(heading: str) -> str:
    """GitHub's anchor of a heading: link syntax reduced to its text, lower case, every character
    but letters, digits, ``_``, ``-`` and spaces dropped, spaces to ``-``."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    out = set()
    for line in _FENCE.sub("", path.read_text()).splitlines():
        m = re.match(r"#{1,6} +(.*?) *#* *$", line)
        if not m:
            continue
        slug = _slug(m.group(1))
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else f"{slug}-{n}")
    return out


def _links(path: Path) -> list[str]:
    return _LINK.findall(_prose(path.read_text()))


@pytest.mark.parametrize("path", [README, *PAGES, *API_PAGES], ids=lambda p: p.relative_to(REPO).as_posix())
def test_every_relative_link_resolves(path):
    broken = []
    for target in _links(path):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):      # http:, https:, mailto:
            continue
        file, _, anchor = target.partition("#")
        dest = (path.parent / file).resolve() if file else path
        if not dest.exists():
            broken.append(f"{target}: no file {dest}")
        elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
            broken.append(f"{target}: no heading with anchor #{anchor} in {dest.relative_to(REPO)}")
    assert not broken, broken


def test_the_readme_is_a_front_page():
    assert len(README.read_text().splitlines()) <= 260


def test_the_readme_keeps_the_fresh_machine_commands_verbatim():
    section = README.read_text().split(f"\n{QUICK_START}\n", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```bash\n(.*?)```", section, flags=re.S)
    assert [b.strip() for b in blocks[:2]] == [MAIN_JOB, TESTS]


def test_every_docs_page_is_linked_from_the_readme():
    linked = {(README.parent / t.partition("#")[0]).resolve() for t in _links(README)}
    assert PAGES and not [p.name for p in PAGES if p.resolve() not in linked]


def test_the_docs_images_exist():
    for path in [README, *PAGES]:
        for target in re.findall(r"!\[[^\]]*\]\(([^)\s]+)\)", path.read_text()):
            assert (path.parent / target).is_file(), (path.name, target)


# -- docs/campaigns.md's key table against the parser -------------------------------------------

def _key_table() -> dict[str, set[str]]:
    table: dict[str, set[str]] = {}
    text = (DOCS / "campaigns.md").read_text().split("\n## Every key\n", 1)[1]
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[1].startswith("`"):
            table.setdefault(cells[0], set()).add(cells[1].strip("`"))
    return table


def test_the_campaign_key_table_names_every_key_the_parser_takes():
    from costmodel.systolic.points import HW_COLUMNS
    from sweep.config import archspace, designspace, networks
    from sweep.config.campaign import _MAPPER_KEYS, _RUN_KEYS, TOP_KEYS
    from sweep.kinds.registry import KINDS

    table = _key_table()
    want = {
        "top level": set(TOP_KEYS),
        "network step": {*networks.MODEL_KEYS, *networks.STEP_KEYS},
        "`[[mappers]]`": set(_MAPPER_KEYS),
        "`[architectures]` systolic": set(archspace._ARCH_KEYS),
        "`[architectures.grid]` systolic": set(HW_COLUMNS),
        "`[architectures.grid]`": set(designspace._WINDOW_KEYS),
        "`[architectures]` loopnest / npu": set(archspace._ARCHSET_KEYS),
        "`[architectures]` search": set(designspace._ARCH_KEYS),
        "`[search]`": set(designspace._SEARCH_KEYS),
        "`[workload]`": set(networks._WORKLOAD_KEYS),
        "`[system]`": set(networks.CAMPAIGN_SYSTEM_KEYS),
        "`[run]`": set(_RUN_KEYS),
        "`[report]`": {k for kind in KINDS.values() for k in kind.report_keys},
    }
    missing = {t: sorted(keys - table.get(t, set())) for t, keys in want.items() if keys - table.get(t, set())}
    assert not missing, missing
    extra = {t: sorted(table[t] - want[t]) for t in table if t in want and table[t] - want[t]}
    assert not extra, extra
    assert set(table) == set(want), sorted(set(table) ^ set(want))


# -- the README's first campaign -------------------------------------------------------------------

def test_the_first_campaign_runs_as_the_readme_says(tmp_path):
    from sweep.cli import app

    section = README.read_text().split("\n## A first campaign\n", 1)[1].split("\n## ", 1)[0]
    toml = re.search(r"```toml\n(.*?)```", section, flags=re.S).group(1)
    assert re.search(r"^sweep run first\.toml", section, re.M) and "sweep report results/first" in section
    (tmp_path / "first.toml").write_text(toml)
    runner = CliRunner()
    out = tmp_path / "results" / "first"
    res = runner.invoke(app, ["run", str(tmp_path / "first.toml"), "--out", str(out), "--executor", "local"])
    assert res.exit_code == 0, res.output
    assert "8 rows" in res.output, res.output
    rep = runner.invoke(app, ["report", str(out)], env={"COLUMNS": "200"})
    assert rep.exit_code == 0, rep.output
    assert "rows: 8 ok" in rep.output
    for layer in ("ocr1_480x48x1_k16", "ocr2_240x24x16_k32", "ocr3_120x12x32_k64", "ocr4_60x6x64_k128"):
        assert layer in rep.output
        # the energies the README quotes for the layer, salsa's and random's, are the report's
        quoted = re.search(rf"^ {layer}\s+(\S+ uJ) \(\S+\) / \S+\s+(\S+ uJ)", section, re.M)
        assert quoted, layer
        line = next(x for x in rep.output.splitlines() if layer in x)
        assert re.findall(r"\S+ uJ", line) == list(quoted.groups()), (line, quoted.groups())


# -- the docs site ---------------------------------------------------------------------------------

def _nav_pages(node) -> list[str]:
    """Every page a mkdocs ``nav`` names, depth first (entries are "page.md", {title: "page.md"} or
    {title: [entries]})."""
    if isinstance(node, str):
        return [node]
    if isinstance(node, dict):
        return [p for v in node.values() for p in _nav_pages(v)]
    return [p for v in node for p in _nav_pages(v)]


def _mkdocs_config() -> dict:
    import yaml

    class Loader(yaml.SafeLoader):
        """mkdocs.yml's ``!!python/...`` tags (the slug function) read as plain data."""

    Loader.add_multi_constructor("tag:yaml.org,2002:python/", lambda loader, suffix, node: None)
    return yaml.load(MKDOCS.read_text(), Loader=Loader)


def test_the_site_nav_lists_every_docs_page_once():
    cfg = _mkdocs_config()
    assert cfg["docs_dir"] == "docs" and cfg["strict"] is True
    nav = _nav_pages(cfg["nav"])
    pages = sorted(p.relative_to(DOCS).as_posix() for p in [*PAGES, *API_PAGES])
    assert sorted(nav) == pages and len(nav) == len(set(nav)), sorted(set(nav) ^ set(pages))


def test_the_api_pages_name_modules_that_exist():
    import importlib.util

    names = [m for p in API_PAGES for m in re.findall(r"^::: ([\w.]+)$", p.read_text(), re.M)]
    assert len(names) >= 20
    assert {n.split(".")[0] for n in names} == {"costmodel", "mappers", "sweep"}
    assert [n for n in names if importlib.util.find_spec(n) is None] == []


def _plain_prefix(doc: str) -> str:
    """The first words of a docstring's first paragraph up to its first markup (backticks,
    emphasis), as the site prints them."""
    first = doc.strip().split("\n\n", 1)[0]
    return re.split(r"[`*_]", " ".join(first.split()), maxsplit=1)[0].strip()


@pytest.mark.slow
def test_the_site_builds_strict_with_the_api_reference(tmp_path):
    """``mkdocs build --strict`` exits 0 (any warning fails it: a broken link or anchor, a page out
    of the nav, a docstring griffe cannot parse); every page is built; the API reference holds the
    docstrings' own sentences; no built page loads a script or stylesheet from outside."""
    from costmodel import workload
    from mappers import base
    from sweep import api

    site = tmp_path / "site"
    start = time.perf_counter()
    res = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
                         cwd=REPO, capture_output=True, text=True, timeout=300)
    took = time.perf_counter() - start
    assert res.returncode == 0, res.stdout + res.stderr
    assert "WARNING" not in res.stderr, res.stderr
    for page in [*PAGES, *API_PAGES]:
        rel = page.relative_to(DOCS).with_suffix("")
        built = site / ("index.html" if rel.as_posix() == "index" else rel / "index.html")
        assert built.is_file(), built
    html = {name: (site / "api" / name / "index.html").read_text() for name in ("sweep", "mappers", "costmodel")}
    for name, doc in (("sweep", api.__doc__), ("sweep", api.map_layer.__doc__), ("mappers", base.__doc__),
                      ("costmodel", workload.__doc__)):
        sentence = _plain_prefix(doc)
        assert len(sentence) > 15 and sentence in html[name], (name, sentence)
    assert 'id="sweep.api.map_layer"' in html["sweep"]
    outside = [p.relative_to(site).as_posix() for p in site.rglob("*.html")
               if re.search(r"<(?:script|link)\b[^>]*\b(?:src|href)=\"(?:https?:)?//", p.read_text())]
    assert outside == []
    assert took < 60, f"the site took {took:.1f} s to build"
