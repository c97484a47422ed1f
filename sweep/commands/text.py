"""The parts of the command line (`sweep.cli`) that face people, kept apart from the commands:

* `sweep list`'s tables: the zoo, the presets and the mappers, the layers of one network (zoo
  name or file) with their shapes and MACs, and one mapper's parameters. Tables are as wide as
  their content (`sweep.common.fmt.print_wide`): identifiers and numbers are never cut, prose columns
  (descriptions, docs) wrap. ``--json`` is printed by `sweep.cli` from `sweep.commands.catalog`.
* `seed_option` / `param_option`: `sweep map --seed` and ``--param seed=...`` checked by the one
  seed rule (`sweep.config.validation.check_seed`), exit 2 naming the option.
* `plain_help`: `--help` without Typer's ``<bool>`` and ``<list[str]>`` type labels, and command
  docstrings as flowing paragraphs (`unwrap`).
"""

from __future__ import annotations

import inspect

from typing import Any

import typer

from sweep.common.errors import CampaignError
from sweep.common.fmt import print_wide

__all__ = ["param_option", "plain_help", "print_catalog", "print_low_utilization", "print_mapper", "print_network",
           "print_rows", "seed_option"]


def seed_option(value: int) -> int:
    """`--seed` by the one seed rule (`sweep.config.validation.check_seed`).

    Raises:
        typer.BadParameter: outside the rule (exit 2, the message names ``--seed`` and the value).
    """
    from sweep.config.validation import SEED_RULE, is_seed
    if not is_seed(value):
        raise typer.BadParameter(f"{value}: {SEED_RULE}")
    return value


def param_option(values: list[str] | None) -> list[str] | None:
    """`--param`: a ``seed=...`` entry by the one seed rule; the other entries are checked by the
    mapper's declared parameters (`sweep map` itself).

    Raises:
        typer.BadParameter: a seed outside the rule (exit 2, naming ``--param seed`` and the value).
    """
    from sweep.config.validation import SEED_RULE, is_seed
    from sweep.commands.map_eval import parse_param
    for item in values or []:
        try:
            key, value = parse_param(item)
        except CampaignError:  # not KEY=VALUE: said by `sweep map` itself
            continue
        if key == "seed" and not is_seed(value):
            raise typer.BadParameter(f"seed={value!r}: {SEED_RULE}", param_hint="'--param seed'")
    return values


class _PlainMetavars:
    """`--help` without Typer's type labels where they say nothing: a flag (``--json``,
    ``--help``) shows no ``<bool>``, a repeatable option shows its upper-cased name, not
    ``<list[str]>``; an option's own ``metavar=`` wins."""

    def get_params(self, ctx):
        params = super().get_params(ctx)  # type: ignore[misc]
        for p in params:
            if p.metavar is None and getattr(p, "is_flag", False):
                p.metavar = ""
            elif p.metavar is None and getattr(p, "multiple", False):
                p.metavar = (p.name or "").upper()
        return params


def plain_help(t: typer.Typer) -> None:
    """Give every command and group of ``t`` (and of its sub-apps) `_PlainMetavars`; call it once
    every command is registered."""
    from typer.core import TyperCommand, TyperGroup
    from typer.models import DefaultPlaceholder

    command = type("SweepCommand", (_PlainMetavars, TyperCommand), {})
    group = type("SweepGroup", (_PlainMetavars, TyperGroup), {})
    if t.info.cls in (None, TyperGroup) or isinstance(t.info.cls, DefaultPlaceholder):
        t.info.cls = group
    for info in t.registered_commands:
        if info.cls in (None, TyperCommand):
            info.cls = command
        if info.help is None and info.callback is not None and info.callback.__doc__:
            info.help = unwrap(inspect.getdoc(info.callback) or "")
    for g in t.registered_groups:
        if g.typer_instance is not None:
            plain_help(g.typer_instance)

def unwrap(doc: str) -> str:
    """A docstring as help text: the lines of each paragraph joined (Rich wraps them to the
    terminal), paragraphs kept apart, an indented paragraph (an example) line by line, so `--help`
    does not break lines where the source does."""
    def para(text: str) -> str:
        lines = text.splitlines()
        if all(line.startswith(" ") for line in lines):  # an indented example: one command per line
            return "\n".join(line.strip() for line in lines)
        return " ".join(line.strip() for line in lines)
    return "\n\n".join(para(p) for p in doc.strip().split("\n\n"))


#: Columns of prose: wrapped at this many characters, never cut.
_PROSE = {"description": 60, "doc": 70, "source": 50, "parameters": 60}


def _cell(v: Any) -> str:
    """A table cell's text, Rich markup escaped (a doc's ``[spatial]`` is the TOML table's name,
    not a style tag)."""
    from rich.markup import escape
    if v is None:
        return "-"
    if isinstance(v, bool):
        return str(v).lower()
    if isinstance(v, int):
        return f"{v:,}"
    if isinstance(v, (list, tuple)):
        return escape(", ".join(str(x) for x in v))
    return escape(str(v))


def print_rows(title: str, rows: list[dict], console: Any, caption: str | None = None) -> None:
    """One Rich table of dict rows (the columns: every key of any row, in order of appearance; a
    row without one shows "-"): numbers right aligned, prose columns (`_PROSE`) wrapped, every
    other column whole."""
    from rich.table import Table

    from rich.markup import escape
    t = Table(title=escape(title), caption=None if caption is None else escape(caption), title_justify="left",
              caption_justify="left")
    keys = list(dict.fromkeys(k for r in rows for k in r))
    for k in keys:
        v = next((r[k] for r in rows if r.get(k) is not None), None)
        numeric = isinstance(v, (int, float)) and not isinstance(v, bool)
        t.add_column(k, justify="right" if numeric else "left", no_wrap=k not in _PROSE,
                     max_width=_PROSE.get(k), overflow="fold")
    for r in rows:
        t.add_row(*[_cell(r.get(k)) for k in keys])
    print_wide(console, t)


def print_catalog(what: str, rows: list[dict], console: Any) -> None:
    """`sweep list networks | archs | mappers`: one table (mappers: their parameter names; the
    parameters themselves with `sweep list mappers NAME`)."""
    if what == "mappers":
        rows = [{"name": r["name"], "kind": r["kind"], "version": r["version"], "doc": r["doc"],
                 "parameters": ", ".join(p["name"] for p in r["params"])} for r in rows]
        print_rows("mappers (the parameters of one: `sweep list mappers NAME`)", rows, console)
        return
    # the networks' sources (citations, a paragraph each) only in --json: the table fits a terminal
    drop = ("grid_parameters", "spatial", "spatial_hint") + (("source",) if what == "networks" else ())
    short = {"executed_layers": "executed", "total_macs": "MACs", "published_macs": "published MACs",
             "step": "default step", "published_params": "parameters"} if what == "networks" else {}
    print_rows(what, [{short.get(k, k): v for k, v in r.items() if k not in drop} for r in rows], console)
    if what == "archs":
        console.print("loop-nest presets are templates of architecture search: `sweep list archs --json` gives "
                      "each one's grid_parameters (array.<dim>, memory.<name>.size_bits | size_kib | word_bits), "
                      "its fixed spatial unrolling and its spatial_hint (the unrollings searched with "
                      "--param spatial=search)", soft_wrap=True, highlight=False)
    elif what == "networks":
        console.print("the layers of one: `sweep list networks NAME` (a file: `sweep list networks --file F`); "
                      "each one's source (paper, config): `sweep list networks --json`; executed: layers run "
                      "counting repeats; default step: a transformer's (others with --phase, --batch, --seq, "
                      "--context); parameters: the published count",
                      soft_wrap=True, highlight=False)


def _range(p: dict) -> str:
    if p["choices"] is not None:
        return "one of " + ", ".join(p["choices"]) if p["type"] == "str" else "any of " + ", ".join(p["choices"])
    if p["range"] is None:
        return "-"
    lo, hi = p["range"]
    return f"{'-inf' if lo is None else _cell(lo)} .. {'inf' if hi is None else _cell(hi)}"


def print_mapper(row: dict, console: Any) -> None:
    """`sweep list mappers NAME`: one row per declared parameter (name, type, default, range or
    choices, doc)."""
    rows = [{"parameter": p["name"], "type": p["type"], "default": _cell(p["default"]) if p["default"] is not None
             else "(absent)", "range / choices": _range(p), "doc": p["doc"]} for p in row["params"]]
    print_rows(f"{row['name']} ({row['kind']} mapper, version {row['version']}): {row['doc']}", rows, console,
               caption="set them with `sweep map --param NAME=VALUE` or a campaign's [[mappers]] params")


def print_network(doc: dict, console: Any) -> None:
    """`sweep list networks NAME` / ``--file F``: the layers (shapes, strides, paddings, repeats,
    MACs) and, for ONNX, the nodes not costed and why (the vector operations: `sweep.commands.llm_step`)."""
    published = doc.get("published_macs")
    print_rows(f"{doc['network']} ({doc['path']}): {len(doc['layers'])} layer(s), {doc['unique_layers']} unique, "
               f"{doc['total_macs']:,} MACs" + (f" (published {published:,})" if published else ""),
               doc["layers"], console)
    if doc["ignored"]:
        print_rows(f"{len(doc['ignored'])} node(s) not costed (data movement, or no layer or vector operation "
                   "of theirs)", doc["ignored"], console)
    if doc.get("params"):  # a transformer: its parameters and cache, and a config.json's fields
        pub = doc.get("published_params")
        line = (f"parameters: {doc['params']:,} ({doc['params'] / 1e9:.2f} B)"
                + (f", published {pub:,}" if pub else "") + f"; activated per token {doc['activated_params']:,}")
        if doc.get("kv_cache_values_per_token"):
            line += f"; KV cache {doc['kv_cache_values_per_token']:,} values per token and block"
        console.print(line, highlight=False, markup=False, soft_wrap=True)
    if doc.get("architecture"):
        left = ", ".join(doc.get("defaulted") or []) or "none"
        console.print(f"{doc['architecture']}: {len(doc.get('read') or {})} config field(s) read; left to the "
                      f"class's default: {left}", highlight=False, markup=False, soft_wrap=True)


def print_low_utilization(console: Any, rows: list, acc: Any, res: dict) -> None:
    """`sweep map`'s warning when a mapped layer keeps few PEs busy
    (`sweep.commands.map_eval.low_utilization_note`), in yellow; nothing otherwise."""
    from sweep.commands.map_eval import low_utilization_note
    searched = any(r.get("spatial_candidates", 1) > 1 for r in rows) or \
        (res.get("params") or {}).get("spatial") == "search"
    note = low_utilization_note(rows, acc, searched)
    if note:
        console.print(note, style="yellow", soft_wrap=True, highlight=False, markup=False)


def exit_if_infeasible(rows: list[dict], console: Any, total: dict | None = None) -> None:
    """`sweep map`'s end when a layer has no valid mapping (status "infeasible", `sweep.commands.map_eval.map_layer`),
    or a network on a hardware point has none (``total``'s status): one red line per such layer
    with its reason on ``console`` (stderr), then exit 1; nothing when everything was mapped."""
    bad = [r for r in rows + ([total] if total else []) if r.get("status") == "infeasible"]
    if not bad:
        return
    for r in bad:
        console.print(f"no valid mapping of {r.get('layer')}: {r.get('reason')}", style="red", soft_wrap=True,
                      highlight=False, markup=False)
    if len(rows) > 1:
        console.print(f"{len(bad)} of {len(rows)} layer(s) have no valid mapping: the totals are inf",
                      style="red", highlight=False, markup=False)
    raise typer.Exit(1)


def print_run_outcome(s: Any, console: Any) -> None:
    """After `sweep run`'s done line (``s``: `sweep.engine.runner.RunSummary`): the rows that are
    not "ok" by status with the first reason of each (infeasible: nothing valid found; skipped:
    declined by the mapper; error: the code failed); exit 1 if a task failed or if nothing run
    was feasible, else return."""
    others = {k: v for k, v in s.rows_by_status.items() if k not in ("ok", "pruned") and v}  # pruned: said above
    for st, n in sorted(others.items()):
        why = s.first_reason.get(st) or "(no reason given)"
        mine = " written by this run" if s.resumed else ""
        console.print(f"{n:,} row(s) {st}{mine}; the first: {why}", style="yellow", soft_wrap=True, markup=False,
                      highlight=False)
    if s.tasks_failed:
        console.print(f"{s.tasks_failed} task(s) failed; their rows have status 'error' (what failed, first "
                      f"error per mapper and layer: `sweep report {s.output}`)", style="red", markup=False,
                      highlight=False)
        raise typer.Exit(1)
    left = sum(getattr(s, "errors_stored", {}).values())
    if left:   # a resume that leaves errors (earlier runs' rows) does not end as a success
        kinds = ", ".join(f"{n:,} {'whose worker crashed again' if k == 'crash' else 'whose code raised'}"
                          for k, n in sorted(s.errors_stored.items()))
        console.print(f"{left:,} task(s) of {s.output} have status 'error' ({kinds}); what failed: "
                      f"`sweep report {s.output}`", style="red", markup=False, highlight=False)
        raise typer.Exit(1)
    if others:
        console.print(f"per mapper and layer, with reasons: `sweep report {s.output}`", style="yellow",
                      soft_wrap=True, markup=False, highlight=False)
    if s.nothing_feasible:
        console.print("nothing feasible: no row of this run found a valid result (reasons above)", style="red",
                      markup=False, highlight=False)
        raise typer.Exit(1)


def spatial_text(spatial: dict | None) -> str:
    """``D1: OX 14 | D2: FY 3 x K 4`` for a spatial unrolling dict (array dim -> [[dim, factor]])."""
    if not spatial:
        return "-"
    return " | ".join(f"{a}: " + " x ".join(f"{d} {f}" for d, f in loops) for a, loops in spatial.items())


def num(v: Any, spec: str) -> str:
    """``v`` formatted by ``spec``, "n/a" for None (no figure: no energy model, or no schedule fits)."""
    return "n/a" if v is None else format(v, spec)


class ProgressLines:
    """A run's progress callback (done, total): updates the bar (``update``) and, when the console
    is not a terminal (a file, nohup, CI: the bar is not drawn), prints a line ``progress: done /
    total <unit>, elapsed, about N left`` every ``every_s`` seconds (and at the end)."""

    def __init__(self, update, console, unit: str = "tasks", every_s: float = 30.0):
        import time
        self.update, self.console, self.unit, self.every_s = update, console, unit, every_s
        self.t0 = self.last = time.monotonic()
        self.first: int | None = None

    def __call__(self, done: int, total: int) -> None:
        import time
        self.update(done, total)
        if self.first is None:
            self.first = done
        now = time.monotonic()
        if self.console.is_terminal or (now - self.last < self.every_s and done != total):
            return
        self.last = now
        el = now - self.t0
        rate = (done - self.first) / el if el > 0 else 0.0
        left = f", about {_dur((total - done) / rate)} left" if rate > 0 and total and done < total else ""
        self.console.print(f"progress: {done:,} / {total:,} {self.unit}, {_dur(el)} elapsed{left}",
                           markup=False, highlight=False)


def _dur(s: float) -> str:
    """Seconds as ``42 s``, ``3.5 min`` or ``1.2 h``."""
    return f"{s:.0f} s" if s < 120 else f"{s / 60:.1f} min" if s < 7200 else f"{s / 3600:.1f} h"


def print_search_outcome(search: dict, console) -> None:
    """What an architecture search that decides as it goes did (`RunSummary.search`): the pruned
    grid's designs mapped and pruned, or the study's designs and why it stopped early."""
    if not search:
        return
    if "pruned" in search:
        console.print(f"grid: {search['designs']:,} designs: {search['mapped']:,} mapped, {search['pruned']:,} pruned "
                      f"by bound in {search['rounds']:,} rounds (the bounds of every design {search['bounds_s']:.1f} s, "
                      f"the rounds' own work {search.get('driver_s', 0.0):.1f} s)", markup=False, highlight=False)
    elif search.get("stopped"):
        console.print(f"stopped early: {search['stopped']}", markup=False, highlight=False)
    else:
        console.print(f"study: {search['designs']:,} designs of {search['trials']:,} evaluated, "
                      f"{search['repeats']:,} of {search['asked']:,} suggestions repeats or invalid"
                      + (f"; the sampler kept repeating itself ({search['why_explored']})" if search.get("explored") else ""),
                      markup=False, highlight=False)


def print_arch(doc: dict, console: Any) -> None:
    """`sweep list archs NAME`: one accelerator (`catalog.arch_detail`): clock, PEs, peak, area,
    the DRAM and the vector unit on a line each, then one row per memory."""
    from rich.table import Table

    from sweep.common import fmt
    arr = " x ".join(f"{d}={n}" for d, n in doc["array"].items())
    tech = (f" (CACTI 22 nm SRAM, PEs scaled to 22 nm: tech = {doc['tech']!r})" if doc.get("tech") else
            " (the 65 nm tables: DeepOpt's PE and SRAM areas, not scaled to the chip's process"
            + (f"; with tech = \"cacti22\" {fmt.area(doc['area_cacti22_mm2'])})" if doc.get("area_cacti22_mm2") else ")"))
    console.print(f"{doc['name']}: {arr} = {doc['pes']:,} PEs at {doc['clock_mhz']:g} MHz, peak "
                  f"{doc['peak_macs_per_s'] / 1e12:.3g} TMAC/s; area {fmt.area(doc['area_mm2'])}{tech}",
                  markup=False, highlight=False, soft_wrap=True)
    d = doc["dram"]
    if d is not None:
        console.print(f"DRAM: {d['units']} x {d['kind']}, {d['gbs']:.1f} GB/s, {fmt.bits(d['capacity_bytes'] * 8)}",
                      markup=False, highlight=False)
    console.print(f"vector unit: {doc['vector_lanes']:,} lanes" if doc["vector_lanes"] else "vector unit: none",
                  markup=False, highlight=False)
    _chip_lines(console, doc)
    t = Table(title="memories, innermost first (bandwidth of all instances at the clock)")
    for c in ("memory", "operands", "size", "instances", "word bits", "read GB/s", "write GB/s", "port"):
        t.add_column(c, justify="left" if c in ("memory", "operands", "port") else "right")
    for m in doc["memories"]:
        size = "unbounded" if m["size_bits"] is None else fmt.bits(m["size_bits"])
        t.add_row(m["name"], " ".join(m["operands"]), size, f"{m['instances']:,}", f"{m['word_bits']:,}",
                  f"{m['read_gbs']:,.1f}", f"{m['write_gbs']:,.1f}", "shared" if m["shared_port"] else "read + write")
    console.print(t)


def _chip_lines(console, doc: dict) -> None:
    """A chip preset's part, power, link and GPU execution figures (`sweep.commands.catalog.arch_detail`)."""
    if doc.get("power"):
        p = doc["power"]
        base = f", base clock {p['base_clock_mhz']:g} MHz (tensor-bound kernels)" if p.get("base_clock_mhz") else ""
        idle = f", idle {p['idle_w']:g} W" if p.get("idle_w") is not None else ""
        console.print(f"part: {doc.get('description', '')}", markup=False, highlight=False, soft_wrap=True)
        console.print(f"power: TDP {p['tdp_w']:g} W{idle}{base}; link: {doc.get('interconnect') or 'none'}",
                      markup=False, highlight=False)
    if doc.get("gpu"):
        g = doc["gpu"]
        console.print(f"GPU kernels: {g['kernel_us']:g} us on the device per kernel, CUDA graphs in "
                      f"{', '.join(g.get('graph_phases') or []) or 'no phase'}"
                      + (f", {g['sm_dram_gbps']:g} GB/s of DRAM per CTA" if g.get("sm_dram_gbps") else "")
                      + (f", GEMMs stream weights at {g['gemm_dram_fraction']:g} of the peak"
                         if g.get("gemm_dram_fraction") else ""), markup=False, highlight=False, soft_wrap=True)
