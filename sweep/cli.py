"""The ``sweep`` command line (Typer + Rich).

Exit codes: 0 success; 2 invalid input (campaign, option, output directory; the message names the
file, key and value, and nothing is written); 1 runtime failure (what was stored stays
resumable with ``--resume``); 130 interrupted by Ctrl-C (resumable).
"""

from __future__ import annotations

import json
from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.table import Table

from mappers import mappers_by_kind
from sweep.kinds.registry import for_mapper_kind, kind_named
from sweep.errors import CampaignError, Finding, StoreError, SweepError

app = typer.Typer(no_args_is_help=True, add_completion=False, rich_markup_mode="rich",
                  help="dse-sweep: distributed design-space exploration of DNN accelerators.\n\n"
                       "Typical use: [bold]sweep validate campaigns/area16mm2.toml[/], then "
                       "[bold]sweep run campaigns/area16mm2.toml[/], then "
                       "[bold]sweep report results/area16mm2 --plots plots/[/].")
out = Console()
err = Console(stderr=True, soft_wrap=True)


def _fail(e: Exception, code: int) -> None:
    err.print(f"error: {e}", style="red", highlight=False, markup=False)
    raise typer.Exit(code)


def _guard(fn):
    """Map our exceptions to exit codes in one place."""
    import functools

    @functools.wraps(fn)
    def wrapper(*a, **kw):
        try:
            return fn(*a, **kw)
        except (CampaignError, StoreError) as e:
            _fail(e, 2)
        except SweepError as e:
            _fail(e, 1)
    return wrapper


class ExecutorKind(str, Enum):
    ray = "ray"
    local = "local"


@app.command()
@_guard
def run(
    campaign: Annotated[Path, typer.Argument(help="Campaign TOML file, e.g. campaigns/area16mm2.toml.")],
    out_dir: Annotated[Optional[Path], typer.Option("--out", help="Output directory (default: the campaign's `output`).")] = None,
    resume: Annotated[bool, typer.Option("--resume", help="Complete an interrupted run in the same output directory; stored tasks are skipped.")] = False,
    address: Annotated[Optional[str], typer.Option("--address", help="Existing Ray cluster (host:port or 'auto'); default: RAY_ADDRESS, else a local Ray.", rich_help_panel="Execution")] = None,
    executor: Annotated[ExecutorKind, typer.Option("--executor", help="'ray' (parallel) or 'local' (in-process, same rows).", rich_help_panel="Execution")] = ExecutorKind.ray,
) -> None:
    """Run a campaign: every task of it, in parallel on Ray, results into Parquet."""
    from sweep.kinds import load_campaign

    c = load_campaign(campaign, output=out_dir)
    _execute(c, resume, executor, address,
             f"sweep run {campaign} --resume" + (f" --out {out_dir}" if out_dir else ""))


@app.command()
@_guard
def rerun(
    directory: Annotated[Path, typer.Argument(help="A result directory written by `sweep run`.")],
    out_dir: Annotated[Path, typer.Option("--out", help="New output directory for the rerun.")],
    resume: Annotated[bool, typer.Option("--resume", help="Complete an interrupted rerun in --out.")] = False,
    address: Annotated[Optional[str], typer.Option("--address", help="Existing Ray cluster; default: RAY_ADDRESS, else a local Ray.", rich_help_panel="Execution")] = None,
    executor: Annotated[ExecutorKind, typer.Option("--executor", help="'ray' or 'local' (same rows).", rich_help_panel="Execution")] = ExecutorKind.ray,
) -> None:
    """Rerun the campaign recorded in DIR/manifest.json into a new directory (same task_ids and
    rows; refused with exit 2 if its input files or mapper versions changed since)."""
    from sweep.kinds import campaign_from_manifest

    c = campaign_from_manifest(directory, out_dir)
    _execute(c, resume, executor, address, f"sweep rerun {directory} --out {out_dir} --resume")


def _execute(c, resume: bool, executor: ExecutorKind, address: str | None, resume_hint: str) -> None:
    """Run campaign ``c`` with a progress bar; exit 130 if interrupted, 1 if a task failed."""
    from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn,
                               TimeElapsedColumn, TimeRemainingColumn)

    from sweep.engine.runner import Interrupted, run_campaign

    err.print(f"campaign [bold]{c.name}[/]: {len(c.networks)} network(s) x {c.plan.describe_archs(c)} x {len(c.mappers)} mapper(s) x {len(c.objectives)} objective(s) "
              f"-> {c.output}")
    with Progress(TextColumn("[progress.description]{task.description}"), BarColumn(),
                  MofNCompleteColumn(), TextColumn("tasks"), TimeElapsedColumn(),
                  TimeRemainingColumn(), console=err, transient=False) as prog:
        bar = prog.add_task("running", total=None)

        def progress(done, total):
            prog.update(bar, completed=done, total=total)
        try:
            s = run_campaign(c, resume=resume, executor=executor.value, address=address,
                             progress=progress)
        except Interrupted as i:
            prog.stop()
            err.print(f"interrupted: {i.summary.tasks_run} task(s) stored in {c.output}; "
                      f"complete it with: {resume_hint}")
            raise typer.Exit(130)
    skipped = "suggested design(s) told their stored figures" if c.plan.runs_study(c) else "already stored"
    err.print(f"done: {s.tasks_run} task(s) run, {s.tasks_skipped} {skipped}, "
              f"{s.tasks_failed} failed, {s.rows_written:,} rows in {s.seconds:.1f} s "
              f"(executor start {s.executor_start_s:.1f} s) -> {s.output}")
    if s.tasks_failed:
        err.print(f"[yellow]{s.tasks_failed} task(s) failed; their rows have status 'error' "
                  f"(see `sweep report {s.output}`)[/]")
        raise typer.Exit(1)


@app.command()
@_guard
def validate(campaign: Annotated[Path, typer.Argument(help="Campaign TOML file.")]) -> None:
    """Check a campaign file (or a tuning campaign) and say what it would run; writes nothing."""
    from sweep.kinds import load_any

    kind, c = load_any(campaign)
    out.print(kind.describe_valid(c, campaign), highlight=False)


_LAYER_PANEL = "Layer (zoo / file / ONNX layer, a whole network, or explicit dimensions)"
#: The options naming one layer, shared by `map` and `eval`.
NetworkOpt = Annotated[Optional[str], typer.Option("--network", help="Zoo network, e.g. resnet34 (see `sweep list networks`), or a network file: .csv (zoo format) or .onnx (Conv, Gemm, MatMul nodes; `sweep list networks --file F`). `sweep map` without --layer maps every unique layer.", rich_help_panel=_LAYER_PANEL)]
LayerOpt = Annotated[Optional[str], typer.Option("--layer", help="Layer name or 0-based index of the network's layers (its CSV rows or ONNX Conv/Gemm/MatMul nodes, as `sweep list networks --file`); omit it in `sweep map` to map the whole network.", rich_help_panel=_LAYER_PANEL)]
DimsOpt = Annotated[Optional[str], typer.Option("--dims", help="Explicit layer, e.g. K=64,C=64,OY=56,OX=56,FY=3,FX=3 (unlisted dims 1; B, G, SY, SX allowed).", rich_help_panel=_LAYER_PANEL)]
_MAPPER_HELP = "Mapper, by the kind of architecture it maps: " + "; ".join(
    f"{', '.join(names)} ({kind}: {for_mapper_kind(kind).arch_help})" for kind, names in mappers_by_kind().items() if names
) + ". Parameters: `sweep list mappers`."
ArchOpt = Annotated[str, typer.Option("--arch", help="Accelerator preset (see `sweep list archs`) or TOML file.")]


@app.command("map")
@_guard
def map_(
    arch: ArchOpt,
    mapper: Annotated[str, typer.Option("--mapper", help=_MAPPER_HELP)],
    network: NetworkOpt = None,
    layer: LayerOpt = None,
    dims: DimsOpt = None,
    objective: Annotated[Optional[str], typer.Option("--objective", help="What to minimise: energy (pJ), latency (cycles) or edp (default energy); on the multi-NPU archs arch1..arch8: latency_bytes (default), latency or bytes.")] = None,
    seed: Annotated[int, typer.Option("--seed", help="Seed of stochastic mappers.")] = 0,
    param: Annotated[Optional[list[str]], typer.Option("--param", help="Mapper parameter KEY=VALUE (repeatable), e.g. --param iterations=2000 --param engine=sa.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Map one layer on one accelerator and print the best mapping as a loop nest; with --network
    and no --layer, map every unique layer of the network and print a per-layer table and totals."""
    from sweep.single import load_arch, map_layer, parse_param, resolve_layer

    if network and layer is None and not dims:
        _map_network(network, arch, mapper, objective, seed, param or [], as_json)
        return
    lay = resolve_layer(network, layer, dims)
    acc = load_arch(arch)
    params = dict(parse_param(p) for p in (param or []))
    res = map_layer(lay, acc, mapper, objective, seed, params)
    if as_json:
        typer.echo(json.dumps({k: v for k, v in res.items() if k != "loop_nest"}, indent=1, default=str))
        return
    wide = Console(width=max(out.width, 160), soft_wrap=True)
    wide.print(res.get("loop_nest", ""), highlight=False, markup=False)
    if "transferred_bytes" in res:  # multi-NPU schedule
        wide.print(f"{mapper} ({res['engine']}): tiling {res.get('tiling')} {res.get('dataflow')}, latency "
                   f"{res['latency_cycles']:,.0f} cycles, {res['transferred_bytes']:,.0f} bytes transferred "
                   f"{res.get('bytes_by_type')}, {res['objective']} {res['value']:.4g}; {res['evaluations']:,} "
                   f"schedules in {res['wall_s']:.3f} s")
        return
    if res.get("spatial_candidates", 1) > 1:
        wide.print(f"spatial unrolling {_spatial_text(res['spatial'])}: best of {res['spatial_candidates']} "
                   f"candidates under the hint of {acc.name}")
    wide.print(f"{mapper} ({res['engine']}): energy {res['energy_pj']:,.1f} pJ, latency "
              f"{res['latency_cycles']:,.0f} cycles, EDP {res['edp']:.4g}; {res['evaluations']:,} "
              f"evaluations in {res['wall_s']:.3f} s")


def _spatial_text(spatial: dict | None) -> str:
    """``D1: OX 14 | D2: FY 3 x K 4`` for a spatial unrolling dict (array dim -> [[dim, factor]])."""
    if not spatial:
        return "-"
    return " | ".join(f"{a}: " + " x ".join(f"{d} {f}" for d, f in loops) for a, loops in spatial.items())


def _map_network(network: str, arch: str, mapper: str, objective: str | None, seed: int,
                 param: list[str], as_json: bool) -> None:
    """`sweep map --network N` without --layer: every unique layer, a Rich progress bar on stderr,
    then the per-layer table and the totals (or one JSON object)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from sweep.single import load_arch, map_network, parse_param, resolve_network

    net = resolve_network(network)
    acc = load_arch(arch)
    params = dict(parse_param(p) for p in param)
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=err, transient=True) as bar:
        task = bar.add_task(f"mapping {net.name}", total=len(net.unique()))

        def progress(done: int, total: int, name: str) -> None:
            bar.update(task, completed=done, description=f"mapping {net.name}: {name}" if name else "done")

        res = map_network(net, acc, mapper, objective, seed, params, progress)
    if as_json:
        typer.echo(json.dumps(res, indent=1, default=str))
        return
    t = Table(title=f"{res['network']} on {arch}: {mapper}, objective {res['objective']}")
    searched = any(r.get("spatial_candidates", 1) > 1 for r in res["layers"])
    cols = ("layer", "repeats", "energy pJ", "latency cycles", "EDP", "evaluations", "wall s") + \
        (("spatial unrolling",) if searched else ())
    for c in cols:
        t.add_column(c, justify="left" if c in ("layer", "spatial unrolling") else "right")

    def fmt(v, spec: str) -> str:
        return "n/a" if v is None else format(v, spec)

    for r in res["layers"]:
        t.add_row(r["layer"], f"{r['repeat']:,}", fmt(r["energy_pj"], ",.1f"), fmt(r["latency_cycles"], ",.0f"),
                  fmt(r["edp"], ".4g"), f"{r['evaluations']:,}", f"{r['wall_s']:.3f}",
                  *((_spatial_text(r.get("spatial")),) if searched else ()))
    tot = res["total"]
    t.add_row("total (x repeats)", f"{tot['executed_layers']:,}", fmt(tot["energy_pj"], ",.1f"),
              fmt(tot["latency_cycles"], ",.0f"), fmt(tot["edp"], ".4g"), f"{tot['evaluations']:,}",
              f"{tot['wall_s']:.3f}", style="bold")
    wide = Console(width=max(out.width, 160), soft_wrap=True)
    wide.print(t)
    wide.print(f"network {res['network']}: {len(res['layers'])} unique layer(s), {tot['executed_layers']} executed; "
               f"energy {fmt(tot['energy_pj'], ',.1f')} pJ, latency {fmt(tot['latency_cycles'], ',.0f')} cycles "
               "(layers one after another), EDP = total energy x total latency "
               f"{fmt(tot['edp'], '.4g')}", highlight=False)
    if not kind_named(res["arch_kind"]).energy_model:
        wide.print("multi-NPU archs have no energy model: energy and EDP are n/a (NaN); "
                   f"{tot.get('transferred_bytes', 0):,} bytes transferred in total", highlight=False)


@app.command("eval")
@_guard
def eval_(
    arch: ArchOpt,
    mapping: Annotated[Path, typer.Option("--mapping", help="Mapping file (JSON or TOML): spatial, temporal loops innermost first, per-operand boundaries (see costmodel.loopnest.mapping).")],
    network: NetworkOpt = None,
    layer: LayerOpt = None,
    dims: DimsOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the cost report as JSON.")] = False,
) -> None:
    """Evaluate a given mapping: accesses and energy per operand and memory level, latency split."""
    from sweep.single import eval_mapping, load_arch, resolve_layer

    rep = eval_mapping(resolve_layer(network, layer, dims), load_arch(arch), mapping)
    if as_json:
        typer.echo(json.dumps({k: v for k, v in rep.items() if k != "loop_nest"}, indent=1, default=str))
        return
    wide = Console(width=max(out.width, 160), soft_wrap=True)
    wide.print(rep.pop("loop_nest", ""), highlight=False, markup=False)
    _print_cost_report(rep, wide)


def _print_cost_report(rep: dict, console: Console) -> None:
    """Per operand and memory level accesses and energy, then the latency split."""
    if not rep.get("valid", True):
        console.print(f"invalid mapping: {rep.get('reason')}", style="red")
        return
    b = rep.get("breakdown", {})
    t = Table(title="Accesses and energy per operand and memory level")
    for c in ("operand", "memory", "reads", "writes", "fills", "psum read-backs", "tile bits",
              "instances", "energy pJ"):
        t.add_column(c, justify="left" if c in ("operand", "memory") else "right")
    for op, levels in b.get("operands", {}).items():
        for lv in levels:
            t.add_row(op, lv["memory"], f"{lv['reads']:,}", f"{lv['writes']:,}", f"{lv['fills']:,}",
                      f"{lv['readbacks']:,}", f"{lv['tile_bits']:,}", f"{lv['instances']:,}",
                      f"{lv['energy_pj']:,.1f}")
    t.add_row("MAC", "", f"{b.get('macs', 0):,}", "", "", "", "", "", f"{b.get('mac_energy_pj', 0):,.1f}")
    console.print(t)
    stalls = {k: v for k, v in b.get("stall_cycles", {}).items() if v}
    console.print(f"energy {rep['energy_pj']:,.1f} pJ; latency {rep['latency_cycles']:,.0f} cycles = "
                  f"compute {b.get('compute_cycles', 0):,} + stall (largest of "
                  f"{', '.join(f'{k} {v:,.0f}' for k, v in stalls.items()) or 'none'}); "
                  f"utilisation {b.get('utilization', 1):.1%}; EDP {rep['edp']:.4g}")


class ListWhat(str, Enum):
    networks = "networks"
    archs = "archs"
    mappers = "mappers"


@app.command("list")
@_guard
def list_(what: Annotated[ListWhat, typer.Argument(help="networks | archs | mappers")],
          as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
          file: Annotated[Optional[str], typer.Option("--file", help="With `networks`: the layers of one network file (.csv or .onnx) and, for ONNX, the nodes ignored.")] = None) -> None:
    """List the networks of the zoo, the architecture presets or the mappers."""
    from sweep.catalog import catalog
    if file is not None:
        _list_network_file(what.value, file, as_json)
        return
    rows = catalog(what.value)
    if as_json:
        typer.echo(json.dumps(rows, indent=1))
        return
    _print_rows(what.value, [{k: v for k, v in r.items() if k not in ("grid_parameters", "spatial", "spatial_hint")}
                             for r in rows])
    if what.value == "archs":
        out.print("loop-nest presets are templates of architecture search: `sweep list archs --json` gives "
                  "each one's grid_parameters (array.<dim>, memory.<name>.size_bits | size_kib | word_bits), "
                  "its fixed spatial unrolling and its spatial_hint (the unrollings searched with "
                  "--param spatial=search)", soft_wrap=True)


def _list_network_file(what: str, file: str, as_json: bool) -> None:
    """`sweep list networks --file F`: the layers found and the nodes ignored."""
    from sweep.catalog import network_file
    if what != "networks":
        raise CampaignError("--file", [Finding("--file", file, f"only `sweep list networks` takes --file, not {what}")])
    doc = network_file(file)
    if as_json:
        typer.echo(json.dumps(doc, indent=1))
        return
    _print_rows(f"{doc['network']} ({doc['path']}): {len(doc['layers'])} layer(s), {doc['unique_layers']} unique, "
                f"{doc['total_macs']:,} MACs", doc["layers"], width=230)
    if doc["ignored"]:
        _print_rows(f"{len(doc['ignored'])} node(s) ignored (not Conv, Gemm or MatMul)", doc["ignored"])


def _print_rows(title: str, rows: list[dict], width: int = 150) -> None:
    """One Rich table of dict rows (the keys of the first row are the columns), at least ``width``
    characters wide."""
    t = Table(title=title)
    for k in rows[0]:
        numeric = isinstance(rows[0][k], (int, float))
        t.add_column(k, justify="right" if numeric else "left", no_wrap=True,
                     overflow="ellipsis", max_width=None if numeric or k == "name" else 60)
    for r in rows:
        t.add_row(*[f"{v:,}" if isinstance(v, int) else ("-" if v is None else str(v)) for v in r.values()])
    Console(width=max(out.width, width)).print(t)


@app.command()
@_guard
def report(
    directory: Annotated[Path, typer.Argument(help="A result directory written by `sweep run`.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
    plots: Annotated[Optional[Path], typer.Option("--plots", help="Write PNG plots into this directory.")] = None,
) -> None:
    """Summarise a result directory: paper-style tables, and PNG plots with --plots.

    On a `sweep tune` directory: optimisation history and parameter importances (PNGs, default
    DIR/plots) and the held-out gap of the tuned vs the default schedule."""
    from sweep.kinds import build_report, print_report

    rep = build_report(directory, plots)
    if as_json:
        typer.echo(json.dumps(rep, indent=1, default=float))
    else:
        print_report(rep, Console(width=max(out.width, 150)))


@app.command()
@_guard
def compact(directory: Annotated[Path, typer.Argument(help="A result directory written by `sweep run`.")]) -> None:
    """Merge a result directory's Parquet fragments into few files (same rows; crash-safe).
    `sweep run` does it by itself when a run ends with many fragments."""
    from sweep.engine.store import Store

    done = Store(directory).compact()
    for name, (before, after) in done.items():
        out.print(f"{name}: {before} -> {after} fragment(s)")
    if not done:
        out.print(f"{directory}: nothing to compact")


@app.command()
@_guard
def tune(
    campaign: Annotated[Path, typer.Argument(help="Tuning campaign TOML, e.g. campaigns/tune_salsa_eyeriss.toml (mapper, budget, tables space, training, heldout, sampler).")],
    out_dir: Annotated[Optional[Path], typer.Option("--out", help="Output directory: study journal, trial rows, best_params.toml (default: the campaign's `output`).")] = None,
    trials: Annotated[Optional[int], typer.Option("--trials", min=1, help="End with this many finished (complete + pruned) trials in the study (default: the campaign's `trials`).")] = None,
    parallel: Annotated[Optional[int], typer.Option("--parallel", min=1, help="Trials evaluated at once, one Ray task each (default: the campaign's `parallel`).")] = None,
    resume: Annotated[bool, typer.Option("--resume", help="Continue the study in an existing output directory (after Ctrl-C or a kill), or join it from another driver.")] = False,
    address: Annotated[Optional[str], typer.Option("--address", help="Existing Ray cluster; default: RAY_ADDRESS, else a local Ray.", rich_help_panel="Execution")] = None,
    executor: Annotated[ExecutorKind, typer.Option("--executor", help="'ray' (parallel) or 'local' (in-process, the same trials).", rich_help_panel="Execution")] = ExecutorKind.ray,
    num_cpus: Annotated[Optional[int], typer.Option("--num-cpus", min=1, help="CPUs of a new local Ray (default: all cores).", rich_help_panel="Execution")] = None,
) -> None:
    """Tune an annealer's schedule (T0, rho, restarts, ...) with Optuna, trials as Ray tasks.

    Each trial runs the mapper at a fixed budget of proposals on the training layers and seeds and
    scores the mean relative gap to the layers' reference optima; the best schedule is written to
    OUT/best_params.toml for campaigns' `params_file`, and compared with the default schedule on
    the held-out layers. Then: [bold]sweep report OUT[/]."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from sweep.tune.driver import Interrupted, run_tune
    from sweep.campaigns.tune_campaign import load_tune_campaign

    c = load_tune_campaign(campaign, output=out_dir)
    n = trials or c.trials
    err.print(f"tuning [bold]{c.mapper}[/] on {len(c.training[1])} {c.training[0]} layer(s) x {len(c.seeds)} seed(s) "
              f"at {c.budget} proposals, {len(c.space)} parameter(s), {c.sampler['name']} sampler: {n} trial(s), "
              f"{parallel or c.parallel} at a time -> {c.output}")
    with Progress(TextColumn("[progress.description]{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TextColumn("trials"), TimeElapsedColumn(), console=err) as prog:
        bar = prog.add_task("tuning", total=n)
        try:
            s = run_tune(c, trials=trials, parallel=parallel, resume=resume, executor=executor.value,
                         address=address, num_cpus=num_cpus,
                         progress=lambda done, total: prog.update(bar, completed=done, total=total))
        except Interrupted as i:
            prog.stop()
            err.print(f"interrupted after {i.summary.run_here} trial(s) in this driver; running trials stay in the "
                      f"study and the next driver finishes them. Continue with: sweep tune {campaign} --resume"
                      + (f" --out {out_dir}" if out_dir else ""))
            raise typer.Exit(130)
    err.print(f"done: {s.complete} complete + {s.pruned} pruned trial(s) ({s.run_here} here, {s.orphans} orphan(s) "
              f"of a stopped driver taken over) in {s.seconds:.1f} s (references {s.reference_s:.1f} s) -> {s.output}")
    if s.best:
        err.print(f"best trial {s.best['trial']}: mean gap {100 * s.best['values'][0]:.4f} %, {s.best['full']}")
    for k, v in s.heldout.items():
        err.print(f"held-out ({k}): mean gap {100 * v['mean_gap']:.4f} %, reach {100 * v['reach_rate']:.1f} %, "
                  f"{v['mean_evals_to_optimum']:.0f} proposals to the optimum, seeds {v['seeds']}")


import_app = typer.Typer(no_args_is_help=True, add_completion=False, rich_markup_mode="rich",
                         help="Bring other tools' inputs in: [bold]sweep import zigzag[/] turns a ZigZag hardware "
                              "YAML + mapping YAML into an accelerator TOML for --arch and campaigns.")
app.add_typer(import_app, name="import")


@import_app.command("zigzag")
@_guard
def import_zigzag_(
    accelerator: Annotated[Path, typer.Option("--accelerator", help="ZigZag hardware YAML, e.g. zigzag/inputs/hardware/tpu_like.yaml.")],
    mapping: Annotated[Path, typer.Option("--mapping", help="ZigZag mapping YAML: the entry 'default' (or --layer-type) gives the spatial unrolling and the memory operand links (W/I -> I1/I2).")],
    out_file: Annotated[Path, typer.Option("--out", help="Accelerator TOML to write (replaced atomically; nothing is written on error).")],
    layer_type: Annotated[str, typer.Option("--layer-type", help="Mapping entry to import (ZigZag picks per layer name, then type, then 'default').")] = "default",
    name: Annotated[Optional[str], typer.Option("--name", help="Accelerator name (default: the YAML's name).")] = None,
    precision: Annotated[Optional[str], typer.Option("--precision", help="Datapath precisions in bits, e.g. W=8,I=8,O=16,O_final=8 (default: ZigZag's ONNX defaults, these).")] = None,
) -> None:
    """Translate a ZigZag accelerator into our TOML: memories innermost first as in the YAML, served_dimensions -> private_to (its complement), r_cost/w_cost (ZigZag: per bandwidth_max-bit access) -> energy per bandwidth_min-bit word r_cost x min / max, read_write port -> shared_port, no accumulator in the MAC (ZigZag's MAC has none).

    In-memory compute (is_imc, imc_type ...), several cores, CACTI cost extraction and bad operand links are refused with exit 2 naming the YAML key. Example:

        sweep import zigzag --accelerator tpu_like.yaml --mapping tpu_like_map.yaml --out tpu_zz.toml
        sweep map --arch tpu_zz.toml --network resnet18 --layer conv1 --mapper loma --param lpf_limit=6
    """
    from costmodel.importers.zigzag import ZigzagError, import_zigzag
    prec = None
    if precision:
        prec = {}
        for item in precision.split(","):
            k, sep, v = item.strip().partition("=")
            if not sep or k not in ("W", "I", "O", "O_final") or not v.strip().isdigit() or int(v) < 1:
                raise CampaignError("--precision", [Finding("--precision", item, "expected W|I|O|O_final=BITS, e.g. O=16")])
            prec[k] = int(v)
    try:
        acc, notes = import_zigzag(accelerator, mapping, out_file, layer_type=layer_type, precision=prec, name=name)
    except ZigzagError as e:  # the importer's error -> ours (exit 2), same text
        raise CampaignError(e.source, [Finding(e.key, e.value, e.message)]) from None
    for n in notes:
        err.print(f"note: {n}", highlight=False, markup=False)
    out.print(f"{out_file}: accelerator {acc.name!r}, array {acc.array}, {len(acc.memories)} memories "
              f"({', '.join(m.name for m in acc.memories)}), spatial {acc.spatial.to_dict()}; "
              f"use it with --arch {out_file}", highlight=False, markup=False)


def main() -> None:  # console-script entry point
    app()


if __name__ == "__main__":  # pragma: no cover
    main()
