"""The Python API (`sweep.api`, issue 23 item 12): the same numbers as the command line's ``--json``
(``sweep map`` on a loop-nest accelerator and a multi-NPU arch, a whole network, ``sweep eval``), a
campaign from a dict equal to the same campaign from a TOML file (task_ids and rows), result
directories as DataFrames whose shapes are counted by hand, the Pareto helper on points drawn by
hand, the loaders, the errors, and the CLI going through the API."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from costmodel.loopnest.arch import load_accelerator as load_toml_accelerator
from costmodel.npu import load_npu
from paths import DATA
from sweep import api
from sweep.cli import app
from sweep.common.errors import CampaignError, StoreError

runner = CliRunner()
TINY_NET = DATA / "tiny_net.csv"   # conv_a 8x4x14x14 3x3 (x1), conv_b 16x8x7x7 1x1 (x2): 2 unique layers
LAYER = "K=16,C=8,OY=14,OX=14,FY=3,FX=3"


def _cli_json(args: list[str]) -> dict:
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def _jsonable(d: dict) -> dict:
    """``d`` as the CLI prints it (tuples as lists, other objects as strings)."""
    return json.loads(json.dumps(d, default=str))


def _no_time(d: dict) -> dict:
    """``d`` without wall times (the only figure that differs between two equal runs)."""
    out = {k: v for k, v in d.items() if k not in ("wall_s", "loop_nest")}
    for k in ("layers",):
        if isinstance(out.get(k), list):
            out[k] = [_no_time(r) for r in out[k]]
    if isinstance(out.get("total"), dict):
        out["total"] = _no_time(out["total"])
    return out


# -- map / eval: the same numbers as the command line ---------------------------------------------

@pytest.mark.parametrize("arch, mapper, params", [
    ("eyeriss_like", "salsa", {"iterations": 60, "chains": 2}),
    ("eyeriss_like", "loma", {"lpf_limit": 4}),
    ("arch5", "flexer", {}),
])
def test_map_layer_equals_sweep_map_json(arch, mapper, params):
    layer = api.load_layer(dims=LAYER)
    res = api.map_layer(layer, arch, mapper, seed=3, **params)
    cli = _cli_json(["map", "--dims", LAYER, "--arch", arch, "--mapper", mapper, "--seed", "3", "--json"]
                    + [a for k, v in params.items() for a in ("--param", f"{k}={v}")])
    assert _no_time(_jsonable(res.to_dict())) == _no_time(cli)
    assert (res.energy_pj, res.latency_cycles, res.edp, res.evaluations) == \
        (cli["energy_pj"], cli["latency_cycles"], cli["edp"], cli["evaluations"])
    assert res.layer == "dims" and res.mapper == mapper
    if mapper == "salsa":
        assert res.params["seed"] == 3 and res.params["iterations"] == 60
    if arch == "arch5":  # the multi-NPU model has no energy: None (null in JSON), no mapping
        assert res.energy_pj is None and res.edp is None and res.mapping is None
        assert res.objective == "latency_bytes" and res.details["transferred_bytes"] == cli["transferred_bytes"]
    else:
        assert res.objective == "energy" and res.value == res.energy_pj
        assert res.edp == pytest.approx(res.energy_pj * res.latency_cycles, rel=1e-12)
        assert res.loop_nest.startswith("# dims on eyeriss_like")


def test_the_mapping_found_evaluates_to_its_cost():
    """The search's own figures (the ordering kernel) equal the reference model's on its mapping."""
    layer = api.load_layer(dims=LAYER)
    res = api.map_layer(layer, "eyeriss_like", "salsa", iterations=60, chains=2)
    cost = api.evaluate(layer, "eyeriss_like", res)
    assert cost.valid and cost.reason == ""
    assert cost.energy_pj == pytest.approx(res.energy_pj, rel=1e-9)
    assert cost.latency_cycles == pytest.approx(res.latency_cycles, rel=1e-9)
    b = cost.breakdown  # energy = MACs + every operand's every level (pJ)
    assert b["macs"] == 16 * 8 * 14 * 14 * 3 * 3
    assert cost.energy_pj == pytest.approx(b["mac_energy_pj"] + sum(
        lv["energy_pj"] for levels in b["operands"].values() for lv in levels), rel=1e-9)


def test_evaluate_equals_sweep_eval_json_for_a_file_a_dict_and_a_result(tmp_path):
    layer = api.load_layer(dims=LAYER)
    res = api.map_layer(layer, "eyeriss_like", "loma", lpf_limit=4)
    path = tmp_path / "m.json"
    path.write_text(json.dumps(res.mapping))
    cli = _cli_json(["eval", "--dims", LAYER, "--arch", "eyeriss_like", "--mapping", str(path), "--json"])
    from_file = api.evaluate(layer, "eyeriss_like", path)
    assert _no_time(_jsonable(from_file.to_dict())) == cli
    for given in (res.mapping, res, str(path)):
        assert api.evaluate(layer, "eyeriss_like", given) == from_file
    assert from_file.loop_nest == res.loop_nest


def test_map_network_equals_sweep_map_network_json():
    net = api.load_network(str(TINY_NET))
    res = api.map_network(net, "eyeriss_like", "loma", lpf_limit=4)
    cli = _cli_json(["map", "--network", str(TINY_NET), "--arch", "eyeriss_like", "--mapper", "loma",
                     "--param", "lpf_limit=4", "--json"])
    assert _no_time(_jsonable(res.to_dict())) == _no_time(cli)
    df = res.layers
    assert df.shape[0] == 2 and list(df["layer"]) == ["conv_a", "conv_b"] and list(df["repeat"]) == [1, 2]
    # totals by hand: conv_a once, conv_b twice, one after another
    e = df["energy_pj"].to_numpy()
    t = df["latency_cycles"].to_numpy()
    assert res.energy_pj == pytest.approx(e[0] + 2 * e[1], rel=1e-12)
    assert res.latency_cycles == pytest.approx(t[0] + 2 * t[1], rel=1e-12)
    assert res.edp == pytest.approx((e[0] + 2 * e[1]) * (t[0] + 2 * t[1]), rel=1e-12)
    assert res.total["macs"] == 8 * 4 * 14 * 14 * 9 + 2 * 16 * 8 * 7 * 7


def test_a_deepopt_hardware_point_maps_as_sweep_map_point_does():
    """``load_accelerator(preset, point=I)`` is ``sweep map --arch preset --point I``: one point
    (J x K PEs, SRAMs) mapped by DeepOpt gives the CLI's JSON, and its total energy is the sum of
    the per-layer energies times repeats."""
    pt = api.load_accelerator("deepopt_table5", point=2)
    assert len(pt) == 1
    res = api.map_network("alexnet_deepopt", pt, "deepopt", objective="ED")
    cli = _cli_json(["map", "--network", "alexnet_deepopt", "--arch", "deepopt_table5", "--point", "2",
                     "--mapper", "deepopt", "--objective", "ED", "--json"])
    assert _no_time(_jsonable(res.to_dict())) == _no_time(cli)
    df = res.layers
    assert res.energy_pj == pytest.approx(float((df["energy_pj"] * df["repeat"]).sum()), rel=1e-12)
    with pytest.raises(CampaignError, match="--point"):
        api.load_accelerator("deepopt_table5", point=99)


def test_map_network_progress_and_keyword_parameters_win():
    calls = []
    res = api.map_network(TINY_NET, "eyeriss_like", "salsa", params={"iterations": 50, "chains": 1},
                          iterations=40, progress=lambda d, n, name: calls.append((d, n, name)))
    assert calls == [(0, 2, "conv_a"), (1, 2, "conv_b"), (2, 2, "")]
    one = api.map_layer(api.load_layer(TINY_NET, "conv_a"), "eyeriss_like", "salsa", chains=1, iterations=40)
    assert one.params["iterations"] == 40 and res.rows[0]["energy_pj"] == one.energy_pj


# -- loaders ---------------------------------------------------------------------------------------

def test_load_accelerator_preset_file_object_and_zigzag_yaml(tmp_path):
    acc = api.load_accelerator("eyeriss_like")
    assert acc == load_toml_accelerator("eyeriss_like") and api.load_accelerator(acc) is acc
    npu = api.load_accelerator("arch5")
    assert npu == load_npu("arch5")
    hw = DATA / "zigzag" / "inputs" / "hardware" / "tpu_like.yaml"
    mp = DATA / "zigzag" / "inputs" / "mapping" / "tpu_like.yaml"
    out = tmp_path / "tpu.toml"
    res = runner.invoke(app, ["import", "zigzag", "--accelerator", str(hw), "--mapping", str(mp), "--out", str(out)])
    assert res.exit_code == 0, res.output
    from_yaml = api.load_accelerator(hw, mapping=mp)
    assert from_yaml == api.load_accelerator(out)  # the same accelerator as the imported TOML
    assert from_yaml.name == "tpu_like" and dict(from_yaml.array) == {"D1": 32, "D2": 32}


def test_load_network_and_layer():
    net = api.load_network("resnet18")
    assert len(net) == 21 and api.load_network(net) is net
    assert len(api.load_network(TINY_NET)) == 2
    by_name = api.load_layer("resnet18", "layer1.0.conv1")
    assert by_name == api.load_layer("resnet18", 1) == net.layers[1]
    assert (by_name.K, by_name.C, by_name.OY, by_name.FY) == (64, 64, 56, 3)
    d = api.load_layer(dims="K=64,C=3")
    assert (d.K, d.C, d.OY, d.FX) == (64, 3, 1, 1)


@pytest.mark.parametrize("call, key", [
    (lambda: api.load_accelerator("no_such_arch"), "--arch"),
    (lambda: api.load_network("no_such_net"), "--network"),
    (lambda: api.load_layer("resnet18", "no_such_layer"), "--layer"),
    (lambda: api.load_layer("resnet18", "conv1", dims="K=1"), "--dims"),
    (lambda: api.map_layer(api.load_layer(dims=LAYER), "eyeriss_like", "no_such_mapper"), "--mapper"),
    (lambda: api.map_layer(api.load_layer(dims=LAYER), "eyeriss_like", "flexer"), "--mapper"),
    (lambda: api.map_layer(api.load_layer(dims=LAYER), "eyeriss_like", "salsa", objective="bytes"), "--objective"),
    (lambda: api.map_layer(api.load_layer(dims=LAYER), "eyeriss_like", "salsa", iterations=-1), "--param iterations"),
    (lambda: api.evaluate(api.load_layer(dims=LAYER), "eyeriss_like", {"spatial": 3}), "--mapping"),
    (lambda: api.evaluate(api.load_layer(dims=LAYER), "arch5", {}), "accelerator"),
])
def test_bad_arguments_raise_campaign_error_naming_the_key(call, key):
    with pytest.raises(CampaignError) as e:
        call()
    assert any(p.key == key for p in e.value.problems), e.value


def test_an_object_of_no_architecture_kind_is_a_type_error():
    with pytest.raises(TypeError, match="dict"):
        api.load_accelerator({"name": "x"})  # type: ignore[arg-type]


# -- campaigns and results -------------------------------------------------------------------------

SEARCH_TOML = f"""
name = "api_search"
networks = [{{file = "{TINY_NET.as_posix()}"}}]
objectives = ["edp"]
[architectures]
kind = "loopnest"
template = "eyeriss_like"
[architectures.grid]
array.D1 = [7, 14]
memory.sram_1M.size_kib = [128, 1024]
[[mappers]]
name = "salsa"
params = {{chains = 1, iterations = 40, descent = false}}
"""
#: The same campaign as a dict, written by hand (TOML's dotted keys are nested tables; a dict with
#: keys "array.D1" is the TOML file with quoted keys, the same designs under another config hash).
SEARCH_DICT = {
    "name": "api_search", "networks": [{"file": TINY_NET.as_posix()}], "objectives": ["edp"],
    "architectures": {"kind": "loopnest", "template": "eyeriss_like",
                      "grid": {"array": {"D1": [7, 14]}, "memory": {"sram_1M": {"size_kib": [128, 1024]}}}},
    "mappers": [{"name": "salsa", "params": {"chains": 1, "iterations": 40, "descent": False}}],
}
COMPARE_DICT = {
    "name": "api_compare", "networks": [{"file": TINY_NET.as_posix()}], "objectives": ["energy"],
    "architectures": {"kind": "loopnest", "presets": ["eyeriss_like"]},
    "mappers": [{"name": "loma", "params": {"lpf_limit": 4}}, {"name": "random", "params": {"max_samples": 50}}],
}


def _sorted_rows(df: pd.DataFrame) -> pd.DataFrame:
    keys = [c for c in ("task_id", "design_id", "problem_id", "layer_index", "unit_index") if c in df]
    return df.drop(columns=["wall_s"]).sort_values(keys).reset_index(drop=True)


@pytest.fixture(scope="module")
def search_runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("api_search")
    toml = tmp / "c.toml"
    toml.write_text(SEARCH_TOML)
    calls: list[tuple[int, int]] = []
    from_dict = api.run_campaign(SEARCH_DICT, tmp / "from_dict", progress=lambda d, n: calls.append((d, n)))
    from_file = api.run_campaign(toml, tmp / "from_file")
    return from_dict, from_file, calls


def test_run_campaign_from_a_dict_equals_the_toml_file(search_runs):
    from_dict, from_file, calls = search_runs
    assert from_dict.ok and from_file.ok
    a, b = api.load_results(from_dict.output), api.load_results(from_file.output)
    assert a.manifest["config_hash"] == b.manifest["config_hash"]
    assert set(a.rows["task_id"]) == set(b.rows["task_id"])
    pd.testing.assert_frame_equal(_sorted_rows(a.rows), _sorted_rows(b.rows))
    pd.testing.assert_frame_equal(_sorted_rows(a.totals), _sorted_rows(b.totals))
    s = from_dict.summary
    assert calls[0] == (0, s.tasks_total) and calls[-1] == (s.tasks_total, s.tasks_total)
    assert s.tasks_run == s.tasks_total and s.tasks_failed == 0


def test_search_results_shapes_by_hand(search_runs):
    from_dict = search_runs[0]
    res = api.load_results(from_dict.output)
    # 2 x 2 grid points, no constraint: 4 designs; tiny_net has 2 unique layers
    assert res.kind == "archsearch" and res.manifest["name"] == "api_search"
    assert len(res.rows) == 4 * 2 and len(res.totals) == 4 and res.layers is None
    assert sorted(zip(res.totals["array.D1"], res.totals["memory.sram_1M.size_kib"])) == \
        [(7, 128), (7, 1024), (14, 128), (14, 1024)]
    # a design's totals: its two layers, conv_b twice (energy pJ, latency cycles)
    for t in res.totals.itertuples():
        lay = res.rows[res.rows["design_id"] == t.design_id].set_index("layer")
        e = lay.loc["conv_a", "energy_pj"] + 2 * lay.loc["conv_b", "energy_pj"]
        d = lay.loc["conv_a", "latency_cycles"] + 2 * lay.loc["conv_b", "latency_cycles"]
        assert t.energy_pj == pytest.approx(e, rel=1e-12) and t.edp == pytest.approx(e * d, rel=1e-12)


def test_rerunning_into_the_same_directory_needs_resume(search_runs):
    from_dict = search_runs[0]
    with pytest.raises(StoreError, match="--resume"):
        api.run_campaign(SEARCH_DICT, from_dict.output)
    again = api.run_campaign(SEARCH_DICT, from_dict.output, resume=True)
    assert again.summary.tasks_run == 0 and again.summary.tasks_skipped == from_dict.summary.tasks_total


def test_an_interrupted_run_resumes_to_the_rows_of_a_clean_run(tmp_path):
    """Ctrl-C (here raised by the progress callback after the second of four tasks) raises
    `Interrupted` with the finished tasks stored; ``resume=True`` completes them."""
    one_per_task = dict(SEARCH_DICT, run={"designs_per_task": 1})

    def stop(done: int, total: int) -> None:
        if done == 2:
            raise KeyboardInterrupt
    with pytest.raises(api.Interrupted) as e:
        api.run_campaign(one_per_task, tmp_path / "cut", progress=stop)
    assert e.value.summary.tasks_run == 2 and e.value.summary.tasks_total == 4
    resumed = api.run_campaign(one_per_task, tmp_path / "cut", resume=True)
    assert resumed.summary.tasks_skipped == 2 and resumed.summary.tasks_run == 2
    clean = api.run_campaign(api.load_campaign(one_per_task), tmp_path / "clean")
    a, b = api.load_results(resumed.output), api.load_results(clean.output)
    pd.testing.assert_frame_equal(_sorted_rows(a.rows), _sorted_rows(b.rows))
    pd.testing.assert_frame_equal(_sorted_rows(a.totals), _sorted_rows(b.totals))
    with pytest.raises(CampaignError, match="executor"):
        api.run_campaign(one_per_task, tmp_path / "x", executor="threads")
    assert not (tmp_path / "x").exists()


def test_loopnest_results_layers_by_hand(tmp_path):
    run = api.run_campaign(COMPARE_DICT, tmp_path / "out")
    res = api.load_results(run.output)
    assert res.kind == "loopnest" and res.totals is None
    # 2 unique layers x 1 accelerator x 2 mappers x 1 objective x 1 seed = 4 problems, one unit each
    assert len(res.rows) == 4 and (res.rows["status"] == "ok").all()
    lay = res.layers
    assert lay.shape[0] == 2 * 2 and set(lay["label"]) == {"loma", "random"}
    assert list(lay.drop_duplicates("layer")["layer"]) == ["conv_a", "conv_b"]
    # each (layer, mapper) entry is that problem's row (one seed, one unit), as `sweep map` finds it
    loma_a = lay[(lay["layer"] == "conv_a") & (lay["label"] == "loma")].iloc[0]
    one = api.map_layer(api.load_layer(TINY_NET, "conv_a"), "eyeriss_like", "loma", lpf_limit=4)
    assert loma_a["energy_pj"] == one.energy_pj and loma_a["latency_cycles"] == one.latency_cycles
    pivot = lay.pivot_table(index="layer", columns="label", values="energy_pj")
    assert pivot.shape == (2, 2)


def test_an_invalid_dict_campaign_names_the_key_and_writes_nothing(tmp_path):
    bad = dict(SEARCH_DICT, objectives=["edp", "energy"])
    with pytest.raises(CampaignError) as e:
        api.run_campaign(bad, tmp_path / "out")
    assert "objectives" in {p.key for p in e.value.problems}
    assert not (tmp_path / "out").exists()


def test_load_results_of_a_non_result_directory(tmp_path):
    with pytest.raises(StoreError, match="not a dse-sweep result directory"):
        api.load_results(tmp_path)
    with pytest.raises(StoreError, match="no such directory"):
        api.load_results(tmp_path / "missing")


# -- the Pareto helper -----------------------------------------------------------------------------

def test_pareto_front_by_hand():
    df = pd.DataFrame({"area": [4.0, 1.0, 2.0, 3.0, 2.0, np.nan, 5.0],
                       "edp": [1.0, 5.0, 3.0, 4.0, 3.0, 0.1, 1.0]}, index=list("abcdefg"))
    # b (1, 5); c and e (2, 3) tie, both kept; d (3, 4) dominated by c; a (4, 1); g (5, 1) dominated
    # by a; f has a NaN: never on the front
    front = api.pareto_front(df, "area", "edp")
    assert list(front.index) == ["b", "c", "e", "a"]
    with pytest.raises(KeyError, match="nope"):
        api.pareto_front(df, "area", "nope")


# -- the command line goes through the API ---------------------------------------------------------

def test_the_cli_calls_the_api(monkeypatch, tmp_path):
    called: list[str] = []

    def spy(name):
        real = getattr(api, name)

        def wrapper(*a, **kw):
            called.append(name)
            return real(*a, **kw)
        monkeypatch.setattr(api, name, wrapper)
    for name in ("load_layer", "load_accelerator", "map_layer", "evaluate", "load_campaign"):
        spy(name)
    m = _cli_json(["map", "--dims", LAYER, "--arch", "eyeriss_like", "--mapper", "loma", "--json"])
    path = tmp_path / "m.json"
    path.write_text(json.dumps(m["mapping"]))
    _cli_json(["eval", "--dims", LAYER, "--arch", "eyeriss_like", "--mapping", str(path), "--json"])
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "x"\nnetworks = ["no_such_net"]\n')
    assert runner.invoke(app, ["run", str(bad), "--executor", "local"]).exit_code == 2
    assert [c for c in called if c in ("map_layer", "evaluate", "load_campaign")] == \
        ["map_layer", "evaluate", "load_campaign"]
    assert called[:2] == ["load_layer", "load_accelerator"]  # what `sweep map` reads, by the API too
