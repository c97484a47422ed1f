"""The interactive pages of `sweep report --html` in a real browser: Debian's chromium, headless,
opens each kind's page from disk (offline) and must draw every figure without a JavaScript error,
the expected number of scatter markers (the page's status line, filled in by its own script once
every figure is drawn), select a design by the page address as a click does, and give a
screenshot that is not blank.

CI installs chromium (.ci/run); without it these tests fail. ``DSE_SWEEP_NO_BROWSER=1`` skips them.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from sweep.engine.store import Store
from test_html import KINDS, expected_markers, page_data, run_kind, write_html

pytestmark = pytest.mark.slow

FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--enable-logging=stderr", "--v=0", "--virtual-time-budget=20000")


def chromium() -> str:
    """The chromium executable (the test fails without one unless DSE_SWEEP_NO_BROWSER=1)."""
    if os.environ.get("DSE_SWEEP_NO_BROWSER") == "1":
        pytest.skip("DSE_SWEEP_NO_BROWSER=1")
    path = shutil.which("chromium") or ("/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None)
    assert path, "chromium not found: `apt-get install chromium` (as .ci/run does), or DSE_SWEEP_NO_BROWSER=1 to skip"
    return path


def browse(page: Path, tmp: Path, *args: str, fragment: str = "") -> subprocess.CompletedProcess:
    """Open ``page`` (a file URL, plus ``fragment``) in headless chromium with ``args``."""
    profile = tmp / f"profile{len(list(tmp.glob('profile*')))}"
    res = subprocess.run([chromium(), *FLAGS, f"--user-data-dir={profile}", *args, page.as_uri() + fragment],
                         capture_output=True, text=True, timeout=240)
    assert res.returncode == 0, res.stderr[-2000:]
    return res


def console_errors(stderr: str) -> list[str]:
    """The page's console messages that are errors (uncaught exceptions, console.error)."""
    return [line for line in stderr.splitlines() if "CONSOLE" in line and re.search(r"Uncaught|Error", line)]


def status(dom: str) -> dict[str, str]:
    """The data attributes of the page's status line in the dumped DOM."""
    m = re.search(r'<p id="render-status"([^>]*)>', dom)
    assert m, "no status line in the rendered page"
    return dict(re.findall(r'data-([a-z]+)="([^"]*)"', m.group(1)))


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    out = {}
    for kind in KINDS:
        tmp = tmp_path_factory.mktemp(f"browser_{kind}")
        d = run_kind(kind, tmp)
        write_html(d, tmp / "report.html")
        out[kind] = (d, tmp / "report.html")
    return out


@pytest.mark.parametrize("kind", KINDS)
def test_page_draws_every_point_without_a_javascript_error(pages, kind, tmp_path):
    directory, page = pages[kind]
    res = browse(page, tmp_path, "--dump-dom")
    assert not console_errors(res.stderr), console_errors(res.stderr)
    s = status(res.stdout)
    assert s["done"] == "1" and s["errors"] == "0", s
    assert int(s["points"]) == expected_markers(kind, directory) > 0


def test_archsearch_selection_shows_the_design_and_the_screenshot_is_not_blank(pages, tmp_path):
    directory, page = pages["archsearch"]
    t = Store(directory).read("totals")
    best = t[t["network"] == "alexnet"].sort_values("edp")["design_id"].iloc[0]
    pick = t[(t["network"] == "alexnet") & (t["design_id"] != best)]["design_id"].iloc[0]
    res = browse(page, tmp_path, "--dump-dom", fragment=f"#select=alexnet/{pick}")
    assert not console_errors(res.stderr)
    detail = page_data(page.read_text())["networks"]["alexnet"]["detail"]
    m = re.search(rf'<pre id="{detail}"([^>]*)>([^<]*)', res.stdout)
    assert f'data-design="{pick}"' in m.group(1) and m.group(2).startswith(f"design {pick}\n")
    # the breakdown's title names the selected design (Plotly.relayout ran), and the design is
    # marked in both panels of its network (the best design of tiny_net, shown first, in its own)
    assert f"alexnet on design {pick}: energy per layer by memory level" in res.stdout
    assert res.stdout.count(">selected<") == 2 * 2

    shot = tmp_path / "page.png"
    browse(page, tmp_path, "--window-size=1300,1800", f"--screenshot={shot}")
    import matplotlib.pyplot as plt
    img = plt.imread(shot)[..., :3]
    assert img.shape[:2] == (1800, 1300)
    grey = img.mean(axis=2)
    assert grey.std() > 0.05                      # not one flat colour
    assert (grey < 0.9).mean() > 0.02             # ink: axes, points, bars, text
    colourful = (img.max(axis=2) - img.min(axis=2)) > 0.3
    assert colourful.mean() > 0.002               # the coloured markers and bars were drawn
    assert np.isfinite(img).all()
