"""The interactive report, `sweep report DIR --html FILE`: one self-contained HTML page per result
directory, with Plotly figures (one module of this package per campaign kind, named by
`sweep.kinds.base.CampaignKind.html_module`, each ``build(directory, manifest, out_file, rep)``).

The page carries plotly.js inline (no CDN, nothing fetched: it opens from disk, offline), the
figures as JSON, the data its own scripts read (``window.SWEEP_DATA``) and one status line that
its script fills in once every figure is drawn::

    <p id="render-status" data-done="1" data-figures="3" data-points="96" data-errors="0">

(``data-points``: the scatter markers drawn, ``.scatterlayer .point``), which a headless browser
test reads back. A kind module builds a `Page` (headings, paragraphs, figures, data, a script run
after drawing) and writes it with `write_page`; the axes of its figures are set by
`sweep.reports.html.axes` (log ticks in engineering units, re-picked by the page on a zoom, padded
ranges, layer names, gaps). Plotly is the optional ``html`` extra:
`plotly_available` says whether it is installed.
"""

from __future__ import annotations

import html
import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sweep.reports.html.axes import ZOOM_TICKS

__all__ = ["COLOURS", "PLOTLY_MISSING", "Page", "plotly_available", "short", "write_page"]

#: Trace colours, one per mapper, dataflow or arch (Plotly's qualitative "D3" set), so that one
#: name keeps its colour in every panel of a figure.
COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf",
           "#d62728")

#: What `sweep report --html` says when Plotly is not installed (after "--html ").
PLOTLY_MISSING = 'needs Plotly: pip install -e ".[html]"'


def plotly_available() -> bool:
    """True if Plotly (the ``html`` extra) can be imported."""
    try:
        import plotly.io  # noqa: F401
    except ImportError:
        return False
    return True


def short(v: Any, digits: int = 4) -> str:
    """A number as ``digits`` significant digits (``1.245e+07``, ``0.5``, ``1344``); anything else
    as ``str``."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return str(v)
    return f"{v:.{digits}g}"


@dataclass
class Page:
    """One report page being built: ``title``, HTML fragments in order (``blocks``), the figures
    (id -> Plotly figure as JSON-able dict), ``data`` (``window.SWEEP_DATA`` in the page) and
    ``script``: JavaScript run after every figure is drawn (it may use ``SWEEP_DATA`` and
    ``Plotly``)."""

    title: str
    blocks: list[str] = field(default_factory=list)
    figures: list[dict[str, Any]] = field(default_factory=list)
    data: dict[str, Any] = field(default_factory=dict)
    script: str = ""

    def heading(self, text: str, level: int = 2) -> None:
        """A heading (``<h2>`` by default) of plain ``text``."""
        self.blocks.append(f"<h{level}>{html.escape(text)}</h{level}>")

    def text(self, text: str, cls: str = "") -> None:
        """A paragraph of plain ``text`` (``cls``: its CSS class, e.g. "note")."""
        attr = f' class="{cls}"' if cls else ""
        self.blocks.append(f"<p{attr}>{html.escape(text)}</p>")

    def pre(self, text: str, element_id: str) -> None:
        """A preformatted block of plain ``text`` with the id ``element_id`` (scripts rewrite it)."""
        self.blocks.append(f'<pre id="{html.escape(element_id)}">{html.escape(text)}</pre>')

    def figure(self, fig: Any, name: str) -> str:
        """Add the Plotly figure ``fig`` under the element id ``fig-<name>`` and return that id."""
        import plotly.io as pio

        fid = f"fig-{len(self.figures)}-{''.join(c if c.isalnum() else '-' for c in name)}"
        self.figures.append({"id": fid, "figure": json.loads(pio.to_json(fig, validate=False))})
        self.blocks.append(f'<div class="figure" id="{fid}"></div>')
        return fid

    def items(self, lines: list[str], cls: str = "") -> None:
        """A bulleted list of plain-text ``lines`` (``cls``: its CSS class)."""
        attr = f' class="{cls}"' if cls else ""
        self.blocks.append(f"<ul{attr}>" + "".join(f"<li>{html.escape(line)}</li>" for line in lines) + "</ul>")

    def table(self, header: list[str], rows: list[list[str]], caption: str = "", cls: str = "",
              marked: list[bool] | None = None) -> None:
        """A plain HTML table of text cells (``rows``: one list of cells per row, as ``header``), with
        ``caption`` above it; rows where ``marked`` is True carry the class "marked" (highlighted)."""
        attr = f' class="{cls}"' if cls else ""
        cap = f"<caption>{html.escape(caption)}</caption>" if caption else ""
        head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
        mark = ' class="marked"'
        body = "".join(f"<tr{mark if marked and marked[i] else ''}>"
                       + "".join(f"<td>{html.escape(str(c))}</td>" for c in r) + "</tr>" for i, r in enumerate(rows))
        self.blocks.append(f"<table{attr}>{cap}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")

    def answer(self, lines: list[str], element_id: str = "answer") -> None:
        """The answer of the report in a box at this point of the page: its first line as the box's
        heading, the others as paragraphs (plain text)."""
        if not lines:
            return
        paras = "".join(f"<p>{html.escape(line)}</p>" for line in lines[1:])
        self.blocks.append(f'<div class="answer" id="{html.escape(element_id)}"><p class="answer-head">'
                           f"{html.escape(lines[0])}</p>{paras}</div>")

    def summary(self, rep: dict[str, Any]) -> None:
        """The head every `sweep run` report has (`sweep.reports.summary.summary`): campaign,
        directory, code, tasks and rows stored (`head`), and what did not finish (`unfinished`)."""
        self.head(rep)
        self.unfinished(rep)

    def head(self, rep: dict[str, Any]) -> None:
        """The report's first line: campaign, directory, code, tasks and rows stored (the rows that do
        not fit a design's DRAM named as such, not as "infeasible")."""
        from sweep.reports.summary import DOES_NOT_FIT, stored_text
        status = dict(rep.get("rows") or {})
        unfit = (rep.get("does_not_fit") or {}).get("rows", 0)
        if unfit:
            status["infeasible"] = status.get("infeasible", 0) - unfit
            status = {k: n for k, n in status.items() if n} | {DOES_NOT_FIT: unfit}
        rows = ", ".join(f"{k} {v}" for k, v in status.items())
        self.text(f"{rep.get('campaign')} in {rep.get('directory')} (code {rep.get('code_version')}): "
                  f"{stored_text(rep)}; rows: {rows}.")

    def does_not_fit(self, rep: dict[str, Any]) -> None:
        """The steps not mapped on a design because they do not fit its DRAM (``rep["does_not_fit"]``,
        `sweep.reports.summary.does_not_fit`), as one neutral note of counts: an expected result,
        not an error. Nothing when every step fits."""
        from sweep.reports.summary import DOES_NOT_FIT
        d = rep.get("does_not_fit")
        if not d:
            return
        per = ", ".join(f"{k}: {n}" for k, n in d["networks"].items())
        self.text(f"{DOES_NOT_FIT}: {d['rows']:,} (design, step) pair(s) not mapped, the step's weights, KV cache "
                  f"and activations exceed the design's DRAM (expected, not an error). Per step: {per}. "
                  f"E.g. {d['example']}.", "note does-not-fit")

    def unfinished(self, rep: dict[str, Any]) -> None:
        """The rows of ``rep`` that did not finish, as `sweep report` prints them
        (`sweep.reports.summary.print_does_not_fit` and `print_failures`): the steps that do not fit
        a design's DRAM as a neutral count (`does_not_fit`); the others (error, infeasible, ...) in
        red, how many of each status, and the first reason per mapper and layer (``rep["failures"]``;
        else the first failed tasks' errors, ``rep["errors"]``). Nothing when every row is ok."""
        self.does_not_fit(rep)
        f, errors = rep.get("failures"), rep.get("errors") or []
        if f:
            from sweep.reports.summary import DOES_NOT_FIT
            status = dict(rep.get("rows") or {})
            status["infeasible"] = status.get("infeasible", 0) - (rep.get("does_not_fit") or {}).get("rows", 0)
            status = {k: n for k, n in status.items() if n and k != DOES_NOT_FIT}
            ok = status.get("ok", 0)
            kinds = ", ".join(f"{n:,} {k}" for k, n in status.items() if k != "ok")
            what = "no row finished" if not ok else f"{f['rows']:,} of {f['rows'] + ok:,} rows did not finish"
            self.text(f"{what} ({kinds}; {f['tasks']:,} task(s)); the figures cover the {ok:,} finished row(s) "
                      f"(`sweep report {rep.get('directory')} --json`: the tracebacks). First reason per mapper "
                      "and layer:", "note")
            more = [f"... and {f['more_groups']} more (mapper, layer) group(s)"] if f.get("more_groups") else []
            self.items([f"{g.get('status') or 'error'}: "
                        + " / ".join(str(g[k]) for k in ("mapper", "network", "layer") if g.get(k) is not None)
                        + f": {g['rows']:,} row(s): {g['error']}" for g in f["groups"]] + more, "errors")
        elif errors:
            self.text(f"{len(errors)} failed task(s) shown (`sweep report {rep.get('directory')}` lists "
                      "them); their rows are left out of the figures:", "note")
            self.items([f"task {e['task_id']}: {str(e['error']).splitlines()[0] if str(e['error']) else ''}"
                        for e in errors[:5]], "errors")


_STYLE = """
body { font-family: system-ui, sans-serif; margin: 1.5em auto; max-width: 1280px; color: #222; padding: 0 1em; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 1.6em; border-bottom: 1px solid #ddd; }
.figure { width: 100%; min-height: 300px; }
.note { color: #555; font-size: 0.92em; }
.errors { color: #a40000; font-size: 0.9em; }
pre { background: #f6f6f6; padding: 0.6em; white-space: pre-wrap; word-break: break-all; font-size: 0.85em; }
#render-status { color: #888; font-size: 0.8em; }
.answer { border: 2px solid #2ca02c; background: #f3faf3; padding: 0.4em 1em; margin: 1em 0; }
.answer p { margin: 0.35em 0; } .answer-head { font-weight: bold; }
table { border-collapse: collapse; font-size: 0.88em; margin: 0.6em 0 1em; }
th, td { border: 1px solid #ddd; padding: 0.2em 0.6em; text-align: right; } th { background: #f2f2f2; }
td:first-child, th:first-child { text-align: left; } caption { text-align: left; font-weight: bold; padding: 0.3em 0; }
tr.marked td { background: #fff3c4; font-weight: bold; }
"""

#: Draw every figure, run the page's script, then fill in the status line (module docstring).
_MAIN = """
(function () {
  var status = document.getElementById("render-status");
  var errors = 0;
  window.addEventListener("error", function (e) {
    errors += 1; status.dataset.errors = errors; status.textContent = "error: " + e.message;
  });
  var figures = JSON.parse(document.getElementById("sweep-figures").textContent);
  window.SWEEP_DATA = JSON.parse(document.getElementById("sweep-data").textContent);
  Promise.all(figures.map(function (f) {
    return Plotly.newPlot(f.id, f.figure.data, f.figure.layout, {responsive: true, displaylogo: false})
      .then(sweepZoomTicks);
  })).then(function () {
    if (typeof window.sweepAfterDraw === "function") { window.sweepAfterDraw(); }
    var points = document.querySelectorAll(".scatterlayer .point").length;
    status.dataset.points = points; status.dataset.figures = figures.length;
    status.dataset.errors = errors; status.dataset.done = "1";
    status.textContent = figures.length + " figure(s), " + points + " point(s) drawn";
  }).catch(function (e) {
    errors += 1; status.dataset.errors = errors; status.textContent = "error: " + e;
    console.error("Error while drawing the report: " + e);
  });
})();
"""


def _json_script(element_id: str, value: Any) -> str:
    """``value`` as JSON inside a non-executed ``<script>`` (``</`` escaped so it cannot end it)."""
    text = json.dumps(value, separators=(",", ":"), allow_nan=False).replace("</", "<\\/")
    return f'<script type="application/json" id="{element_id}">{text}</script>'


def write_page(page: Page, out_file: str | Path) -> Path:
    """Write ``page`` as one self-contained HTML file (plotly.js inline) to ``out_file``,
    atomically (a temporary file renamed into place; parent folders made). Returns its path.

    Raises:
        ImportError: Plotly is not installed.
        ValueError: the page's data holds NaN or infinity (not JSON).
        OSError: the file cannot be written (e.g. ``out_file`` is a directory).
    """
    from plotly.offline import get_plotlyjs

    out = Path(out_file)
    out.parent.mkdir(parents=True, exist_ok=True)
    doc = "\n".join([
        "<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
        f"<title>{html.escape(page.title)}</title>", f"<style>{_STYLE}</style>",
        f'<script type="text/javascript">{get_plotlyjs()}</script>', "</head>", "<body>",
        f"<h1>{html.escape(page.title)}</h1>", *page.blocks,
        '<p id="render-status" data-done="0">drawing the figures ...</p>',
        _json_script("sweep-figures", page.figures), _json_script("sweep-data", page.data),
        f"<script>{page.script}</script>", f"<script>{ZOOM_TICKS}{_MAIN}</script>", "</body>", "</html>", ""])
    fd, tmp = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(doc)
        os.chmod(tmp, 0o644)  # a page to share, not mkstemp's owner-only mode
        os.replace(tmp, out)
    finally:
        Path(tmp).unlink(missing_ok=True)
    return out
