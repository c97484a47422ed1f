"""Spatial search in campaigns: candidates are work units (Ray = local), rows record the unrolling,
bad hints exit 2 naming the key with nothing written."""

import json
import re

import pandas as pd
import pytest
from typer.testing import CliRunner

from costmodel.workload import Layer
from mappers.spatial import spatial_candidates
from paths import DATA, REPO as ROOT
from sweep.kinds import load_campaign
from sweep.cli import app
from sweep.engine.runner import run_campaign
from sweep.engine.store import Store

runner = CliRunner()

CAMPAIGN = """
name = "tiny_spatial"
output = "{out}"
networks = [{{ file = "{net}" }}]
objectives = ["energy"]

[architectures]
kind = "loopnest"
files = ["hint_only.toml"]

[[mappers]]
name = "salsa"
params = {{ engine = "sa", iterations = 100, chains = 2, descent = false }}

[run]
units_per_task = 2
"""


def _hint_only(text: str) -> str:
    """eyeriss_like without its [spatial] table: only the hint is left."""
    return re.sub(r"\[spatial\][^\n]*\nD1 = [^\n]*\nD2 = [^\n]*\n", "", text).replace(
        'name = "eyeriss_like"', 'name = "eyeriss_hint"')


def _write(tmp_path, arch_text=None, out="out"):
    preset = (ROOT / "costmodel" / "presets" / "eyeriss_like.toml").read_text()
    (tmp_path / "hint_only.toml").write_text(arch_text if arch_text is not None else _hint_only(preset))
    p = tmp_path / f"{out}.toml"
    p.write_text(CAMPAIGN.format(out=(tmp_path / out).as_posix(), net=(DATA / "tiny_net.csv").as_posix()))
    return p


def _rows(out):
    df = Store(out).read("rows").drop(columns=["wall_s", "task_id"])
    return df.sort_values(["problem_id", "unit_index"]).reset_index(drop=True)


@pytest.fixture(scope="module")
def ref(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("spatial")
    c = load_campaign(_write(tmp))
    s = run_campaign(c, executor="local")
    assert s.tasks_failed == 0
    return c


def test_candidates_are_units_and_rows_record_the_unrolling(ref):
    rows = _rows(ref.output)
    acc = ref.architectures.archs[0][1]
    assert acc.spatial.dims == {} and acc.spatial_hint is not None
    problems = Store(ref.output).read("problems")
    for pid, g in rows.groupby("problem_id"):
        layer = Layer(**{"name": "x", **json.loads(g["layer_shape"].iloc[0])})
        cands = spatial_candidates(layer, acc, keep=3)
        # 3 candidates x 2 chains, candidate by candidate in rank order
        assert len(g) == 2 * len(cands) and (g["spatial_candidates"] == len(cands)).all()
        want = [json.dumps(c.spatial.fit(layer).to_dict(), sort_keys=True, separators=(",", ":"))
                for c in cands for _ in range(2)]
        assert list(g["spatial"]) == want
    assert set(problems["problem_id"]) == set(rows["problem_id"])


def test_ray_and_local_identical(tmp_path, ref, ray_session):
    c = load_campaign(_write(tmp_path))
    run_campaign(c, executor="ray")
    pd.testing.assert_frame_equal(_rows(c.output), _rows(ref.output))


@pytest.mark.parametrize("old, new, fragment", [
    ('D1 = ["OX", "OY"]', 'D1 = ["OX", "QQ"]', "spatial_hint.D1 = ['OX', 'QQ']"),
    ('D1 = ["OX", "OY"]', 'D9 = ["OX", "OY"]', "spatial_hint.D9 = ['OX', 'OY']: expected an array dim"),
    ('D1 = ["OX", "OY"]', 'D1 = []', "spatial_hint.D1 = []: expected a non-empty list"),
    # conv_b (OX = OY = 7) can fill at most 7 of D1's 14 columns (one of OX, OY): utilisation <= 0.5
    ('max_dims = { D2 = 2 }', 'max_dims = { D2 = 2 }\nmin_utilization = 0.51',
     "layer 'conv_b': no spatial unrolling on accelerator 'eyeriss_hint' satisfies its hint"),
])
def test_bad_hints_exit_2_naming_the_key_nothing_written(tmp_path, old, new, fragment):
    preset = (ROOT / "costmodel" / "presets" / "eyeriss_like.toml").read_text()
    text = _hint_only(preset)
    assert old in text
    p = _write(tmp_path, text.replace(old, new))
    for cmd in (["validate", str(p)], ["run", str(p)]):
        res = runner.invoke(app, cmd)
        assert res.exit_code == 2, res.output
        assert fragment in res.output.replace("\n", " "), res.output
    assert not (tmp_path / "out").exists()


def test_search_without_a_hint_exits_2(tmp_path):
    preset = (ROOT / "costmodel" / "presets" / "eyeriss_like.toml").read_text()
    no_hint = re.sub(r"\[spatial_hint\]\n(?:[^\n]+\n)+", "", preset)
    p = _write(tmp_path, no_hint.replace('name = "eyeriss_like"', 'name = "plain"'))
    p.write_text(p.read_text().replace("descent = false", 'descent = false, spatial = "search"'))
    res = runner.invoke(app, ["validate", str(p)])
    assert res.exit_code == 2
    assert "mappers[0].params.spatial = 'search': accelerator 'plain' has no [spatial_hint]" in \
        res.output.replace("\n", " ")
