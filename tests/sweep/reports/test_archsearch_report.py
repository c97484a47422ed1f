"""`sweep report` of an architecture search on a hand-made result directory: Pareto fronts, best
design per area budget, parameter effects and top designs known by hand; design files that load;
the exact `sweep map` command of a design; the Pareto function against a brute-force oracle."""

import hashlib
import json
import shlex
import shutil

import numpy as np
import pyarrow as pa
import pytest
from typer.testing import CliRunner

from costmodel.loopnest.arch import load_accelerator
from sweep.cli import app
from sweep.engine.store import Store
from sweep.kinds import build_report
from sweep.reports.archsearch import best_per_budget, design_table, map_command, toml_literal
from sweep.reports.pareto import even_budgets, pareto_front

from paths import DATA

runner = CliRunner()
P1, P2 = "array.D1", "memory.sram_1M.size_kib"
#: design -> (array.D1, size_kib, area mm2, energy pJ, latency cycles) on resnet18; EDP = energy x latency
DESIGNS = {
    "d0": (8, 256, 1.0, 10.0, 100.0),    # EDP 1000  front
    "d1": (8, 512, 1.5, 9.0, 100.0),     # 900       front
    "d2": (8, 1024, 2.5, 9.0, 120.0),    # 1080      dominated by d1
    "d3": (8, 2048, 4.0, 8.0, 100.0),    # 800       dominated by d9 (on tiny_net: EDP 100, front)
    "d4": (16, 256, 2.0, 6.0, 100.0),    # 600       front
    "d5": (16, 512, 2.5, 6.0, 90.0),     # 540       front
    "d6": (16, 1024, 3.5, 5.0, 100.0),   # 500       dominated by d9 (same area)
    "d7": (16, 2048, 5.0, 5.0, 110.0),   # 550       dominated by d10
    "d8": (32, 256, 3.0, 4.0, 100.0),    # 400       front
    "d9": (32, 512, 3.5, 4.0, 90.0),     # 360       front
    "d10": (32, 1024, 5.0, 3.0, 100.0),  # 300       front (on tiny_net dominated by d3)
    "d11": (32, 2048, 6.0, 3.0, 110.0),  # 330       dominated by d10
}
FRONT_RESNET = ["d0", "d1", "d4", "d5", "d8", "d9", "d10"]
FRONT_TINY = ["d0", "d1", "d4", "d5", "d8", "d9", "d3"]
PARAMS = {"iterations": 20, "chains": 1, "engine": "auto", "lockstep": False, "rho": 0.956, "seed": 7}


def did(name: str) -> str:
    return hashlib.sha256(name.encode()).hexdigest()[:16]


def _values(net: str, name: str) -> tuple:
    d1, kib, area, e, lat = DESIGNS[name]
    if net == "tiny_net" and name == "d3":
        e = 1.0  # EDP 100: the best design of tiny_net
    return d1, kib, area, e, lat


def _task(task_id: str, name: str, nets: list[str], arch: dict, *, status="ok", override=None) -> tuple:
    drows, rrows = [], []
    for net in nets:
        d1, kib, area, e, lat = _values(net, name) if override is None else override
        if status != "ok":
            area = e = lat = float("nan")
        drows.append({"task_id": task_id, "status": status, "design_id": did(name), "network": net,
                      "area_mm2": area, "energy_pj": e, "latency_cycles": lat, "edp": e * lat, "layers": 2,
                      "macs": 68992, "evaluations": 40, "wall_s": 0.1, "seed": 7, "mapper": "salsa",
                      "objective": "edp", P1: d1, P2: kib})
        for layer in ("conv_a", "conv_b"):
            rrows.append({"task_id": task_id, "status": status, "design_id": did(name), "network": net,
                          "layer": layer, "repeat": 1, "energy_pj": e / 2, "latency_cycles": lat / 2,
                          "edp": e * lat / 4, "error": None if status == "ok" else "boom"})
    a = dict(arch, name=f"cand_{name}")
    archs = pa.Table.from_pylist([{"task_id": task_id, "design_id": did(name),
                                   "arch": json.dumps(a, sort_keys=True, separators=(",", ":"))}])
    return task_id, {"archs": archs, "totals": pa.Table.from_pylist(drows), "rows": pa.Table.from_pylist(rrows)}


def _manifest(camp_dir, report: dict) -> dict:
    return {"name": "archsearch_test", "source": str(camp_dir / "as.toml"), "config_hash": "0" * 64, "tasks": 14,
            "base_dir": str(camp_dir), "report": {},
            "campaign": {"name": "archsearch_test", "networks": ["resnet18", {"file": "nets/tiny_net.csv"}]},
            "config": {"kind": "archsearch", "name": "archsearch_test",
                       "networks": [{"name": "resnet18"}, {"name": "tiny_net"}],
                       "objectives": ["edp"], "seeds": [7], "mappers": [{"name": "salsa", "params": PARAMS}],
                       "architectures": {"template": "eyeriss_like", "params": [P1, P2],
                                         "template_values": {P1: 14, P2: 1024}, "designs": 13},
                       "search": {"sampler": "grid", "trials": None, "seed": 0, "objectives": ["edp", "area_mm2"]},
                       "report": report}}


def make_dir(tmp_path, report: dict | None = None):
    camp = tmp_path / "camp"
    (camp / "nets").mkdir(parents=True)
    shutil.copy(DATA / "tiny_net.csv", camp / "nets" / "tiny_net.csv")
    out = tmp_path / "out"
    store = Store(out)
    store.create(_manifest(camp, {"area_budgets": [0.5, 2.2, 3.5, 10.0], "top_k": 3} if report is None else report))
    arch = load_accelerator("eyeriss_like").to_dict()
    nets = ["resnet18", "tiny_net"]
    tasks = [_task(f"t{i:02d}", n, nets, arch) for i, n in enumerate(DESIGNS)]
    DESIGNS["d12"] = (64, 256, 0.1, 1.0, 1.0)
    try:
        tasks.append(_task("t12", "d12", nets, arch, status="error"))  # failed: left out
    finally:
        del DESIGNS["d12"]
    tasks.append(_task("t13", "d0", ["resnet18"], arch, override=(8, 256, 0.1, 0.1, 0.1)))  # repeat: first kept
    store.write_batch(tasks)
    return out, camp


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("archsearch")
    out, camp = make_dir(tmp)
    return out, camp, build_report(out, tmp / "plots")


def test_pareto_fronts_by_hand(built):
    _, _, rep = built
    nets = rep["networks"]
    assert list(nets) == ["resnet18", "tiny_net"]
    assert [r["design_id"] for r in nets["resnet18"]["pareto_area_edp"]] == [did(n) for n in FRONT_RESNET]
    assert [r["design_id"] for r in nets["tiny_net"]["pareto_area_edp"]] == [did(n) for n in FRONT_TINY]
    # energy-latency: d9 (4 pJ, 90 cycles) dominates all but d10 (3 pJ, 100 cycles); sorted by area
    assert [r["design_id"] for r in nets["resnet18"]["pareto_energy_latency"]] == [did("d9"), did("d10")]
    d5 = nets["resnet18"]["pareto_area_edp"][3]
    # eyeriss_like's 200 MHz clock (its TOML, the archs table's JSON): 90 cycles = 0.45 us, 6 pJ x 0.45 us
    assert d5 == {"design_id": did("d5"), "area_mm2": 2.5, "energy_pj": 6.0, "latency_cycles": 90.0,
                  "edp": 540.0, "latency_s": pytest.approx(90 / 200e6), "edp_js": pytest.approx(6e-12 * 90 / 200e6),
                  "params": {P1: 16, P2: 512}}
    assert nets["resnet18"]["designs"] == 12 and nets["resnet18"]["best_edp"] == 300.0
    assert rep["design_rows"] == {"ok": 24, "error": 2} and rep["designs_evaluated"] == 13
    assert rep["rows"] == {"ok": 50, "error": 4}


def test_best_per_budget_by_hand(built, tmp_path):
    _, _, rep = built
    got = [(b["budget_mm2"], b["feasible"], b["design_id"]) for b in rep["networks"]["resnet18"]["best_per_budget"]]
    assert got == [(0.5, 0, None), (2.2, 3, did("d4")), (3.5, 8, did("d9")), (10.0, 12, did("d10"))]
    tiny = rep["networks"]["tiny_net"]["best_per_budget"]
    assert [b["design_id"] for b in tiny] == [None, did("d4"), did("d9"), did("d3")]
    # default: 6 budgets evenly spaced from the smallest to the largest area, 1 .. 6 mm2
    out, _ = make_dir(tmp_path, report={})
    rep2 = build_report(out)
    res = rep2["networks"]["resnet18"]["best_per_budget"]
    assert [b["budget_mm2"] for b in res] == pytest.approx([1, 2, 3, 4, 5, 6])
    assert [b["design_id"] for b in res] == [did(n) for n in ("d0", "d4", "d8", "d9", "d10", "d10")]
    assert len(rep2["networks"]["resnet18"]["top"]) == 10


def test_parameter_effects_by_hand(built):
    _, _, rep = built
    eff = rep["networks"]["resnet18"]["parameter_effects"][P1]
    assert [(e["value"], e["designs"], e["best_edp"], e["median_edp"]) for e in eff] == [
        (8, 4, 800.0, 950.0), (16, 4, 500.0, 545.0), (32, 4, 300.0, 345.0)]
    assert [e["best_vs_best"] for e in eff] == pytest.approx([800 / 300, 500 / 300, 1.0])
    assert [e["median_vs_best"] for e in eff] == pytest.approx([950 / 300, 545 / 300, 345 / 300])
    assert [e["best_design_id"] for e in eff] == [did("d3"), did("d6"), did("d10")]
    assert [e["value"] for e in rep["networks"]["resnet18"]["parameter_effects"][P2]] == [256, 512, 1024, 2048]


def test_top_designs_by_first_search_objective(built):
    _, _, rep = built
    assert [r["design_id"] for r in rep["networks"]["resnet18"]["top"]] == [did("d10"), did("d11"), did("d9")]
    assert rep["top_objective"] == "edp"


def test_design_files_load_and_commands(built):
    out, camp, rep = built
    entries = rep["designs"]
    assert [(e["network"], e["design_id"]) for e in entries] == \
        [("resnet18", did(n)) for n in FRONT_RESNET] + [("tiny_net", did(n)) for n in FRONT_TINY]
    files = sorted((out / "designs").glob("*.toml"))
    assert sorted(f.stem for f in files) == sorted(did(n) for n in set(FRONT_RESNET) | set(FRONT_TINY))
    ref = load_accelerator("eyeriss_like")
    for f in files:
        acc = load_accelerator(f)
        assert acc.name == f"design_{f.stem}"
        assert acc.array == ref.array and len(acc.memories) == len(ref.memories)
    head = (out / "designs" / f"{did('d9')}.toml").read_text()
    assert "archsearch_test" in head and "resnet18, tiny_net" in head and f"{P2} = 512" in head
    e = next(e for e in entries if e["network"] == "tiny_net" and e["design_id"] == did("d4"))
    arch = (out / "designs" / f"{did('d4')}.toml").resolve()
    csv = (camp / "nets" / "tiny_net.csv").resolve()
    assert e["file"] == str(arch)
    assert (e["energy_pj"], e["latency_cycles"], e["edp"], e["area_mm2"]) == (6.0, 100.0, 600.0, 2.0)
    assert e["command"] == (f"sweep map --network {shlex.quote(str(csv))} --arch {shlex.quote(str(arch))} "
                            "--mapper salsa --objective edp --seed 7 --param chains=1 --param 'engine=\"auto\"' "
                            "--param iterations=20 --param lockstep=false --param rho=0.956")
    zoo = next(e for e in entries if e["network"] == "resnet18")
    assert shlex.split(zoo["command"])[3] == "resnet18"


def test_command_runs(built):
    """The command of a design file maps the network on it (here the two layers of tiny_net)."""
    _, _, rep = built
    e = next(e for e in rep["designs"] if e["network"] == "tiny_net")
    args = shlex.split(e["command"])
    assert args[:2] == ["sweep", "map"]
    res = runner.invoke(app, args[1:] + ["--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["network"] == "tiny_net" and len(data["layers"]) == 2


def test_rebuild_with_existing_design_files(built):
    out, _, rep = built
    again = build_report(out)
    assert again["designs"] == rep["designs"] and again["design_file_problems"] == []
    assert not [p for p in (out / "designs").iterdir() if p.name.startswith(".")]  # no temp file left


def test_design_files_have_their_own_folder(tmp_path):
    """DIR/designs holds only the design files: the per-design totals are the ``totals`` table,
    so the folder is no Parquet dataset and compaction never touches it."""
    out, _ = make_dir(tmp_path)
    rep = build_report(out)
    assert len(Store(out).read("totals")) == 27
    Store(out).write_batch([_task("t20", "d11", ["resnet18"], load_accelerator("eyeriss_like").to_dict())])
    assert Store(out).compact()["totals"] == (2, 1)
    assert len(Store(out).read("totals")) == 28
    assert sorted(str(p) for p in (out / "designs").iterdir()) == sorted({e["file"] for e in rep["designs"]})


def test_plots_written(built):
    _, _, rep = built
    assert len(rep["plots"]) == 4
    for f in rep["plots"]:
        with open(f, "rb") as fh:
            assert fh.read(8) == b"\x89PNG\r\n\x1a\n"


def test_cli_json_and_text(built):
    out, _, rep = built
    res = runner.invoke(app, ["report", str(out), "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    assert data["designs"] == rep["designs"]
    assert data["networks"]["resnet18"]["pareto_area_edp"][0]["design_id"] == did("d0")
    res = runner.invoke(app, ["report", str(out)])
    assert res.exit_code == 0, res.output
    assert "Pareto front of area and EDP" in res.output and "sweep map --network" in res.output
    assert "effect of each parameter" in res.output


def test_dedupe_keeps_first_and_drops_failures(built):
    out, _, _ = built
    df = design_table(Store(out).read("totals"))
    assert len(df) == 24
    assert df[(df["design_id"] == did("d0")) & (df["network"] == "resnet18")]["area_mm2"].tolist() == [1.0]
    assert best_per_budget(df[df["network"] == "resnet18"], [P1], [1.0])[0]["design_id"] == did("d0")


def test_toml_literals_and_command_quoting():
    assert [toml_literal(v) for v in (True, False, 3, np.int64(4), 0.5, 1e-05, "a b", ["x", 1])] == \
        ["true", "false", "3", "4", "0.5", "1e-05", '"a b"', '["x", 1]']
    cmd = map_command("my net.csv", "/d/x.toml", "salsa", "edp", 1, {"seed": 3, "b": None, "a": "s"})
    assert cmd == "sweep map --network 'my net.csv' --arch /d/x.toml --mapper salsa --objective edp --seed 1 " \
                  "--param 'a=\"s\"'"


def _brute_force(p: np.ndarray) -> set[int]:
    n = len(p)
    ok = np.isfinite(p).all(axis=1)
    out = set()
    for i in range(n):
        if not ok[i]:
            continue
        if not any(ok[j] and (p[j] <= p[i]).all() and (p[j] < p[i]).any() for j in range(n) if j != i):
            out.add(i)
    return out


@pytest.mark.parametrize("k", [2, 3])
@pytest.mark.parametrize("seed", range(6))
def test_pareto_front_matches_brute_force(k, seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 150))
    pts = rng.integers(0, 12, size=(n, k)).astype(float)  # many ties and duplicates
    if seed % 2:
        pts[rng.random(n) < 0.1, 0] = np.nan
    front = pareto_front(pts)
    assert set(front.tolist()) == _brute_force(pts)
    assert len(set(front.tolist())) == len(front)
    assert (np.diff(pts[front, 0]) >= 0).all()  # sorted by the first column


def test_pareto_front_continuous_and_edges():
    rng = np.random.default_rng(42)
    pts = rng.random((400, 2))
    assert set(pareto_front(pts).tolist()) == _brute_force(pts)
    assert pareto_front(np.zeros((0, 2))).tolist() == []
    assert pareto_front([[1.0, 1.0], [1.0, 1.0]]).tolist() == [0, 1]
    assert even_budgets([2.0, 2.0]) == [2.0] and even_budgets([]) == []
    assert even_budgets([1.0, 6.0, 3.3]) == pytest.approx([1, 2, 3, 4, 5, 6])
