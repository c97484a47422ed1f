"""Reproducibility: every row records the code version and the hash of the full resolved
configuration stored in manifest.json, and `sweep rerun DIR` reproduces the rows from it."""

import hashlib
import json
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from sweep.kinds import load_campaign
from sweep.cli import app
from sweep.kinds import build_report
from sweep.engine.runner import run_campaign
from sweep.engine.store import Store, code_version

from campaign_util import tiny_loopnest, write_tiny

runner = CliRunner()
KEY = ["task_id", "network", "pm", "point"]


def _rows(out):
    return Store(out).read("rows").sort_values(KEY).reset_index(drop=True)


def test_rows_trace_to_manifest_and_rerun_reproduces(tmp_path):
    c = load_campaign(write_tiny(tmp_path, flush=1000))
    run_campaign(c, executor="local")
    m = Store(c.output).manifest()
    rows = _rows(c.output)
    # each row names the code and the configuration; the manifest's config hashes to that name
    assert set(rows["config_hash"]) == {m["config_hash"]} == {c.config_hash()}
    assert hashlib.sha256(json.dumps(m["config"], sort_keys=True, default=str).encode()).hexdigest() == m["config_hash"]
    assert set(rows["code_version"]) == {m["code_version"]} == {code_version()}
    if (Path(__file__).parents[1] / ".git").exists():  # package version + commit (+ ".dirty")
        assert "+" in code_version()
    rep = build_report(c.output)
    assert rep["row_config_hashes"] == [m["config_hash"]] and rep["row_code_versions"] == [code_version()]
    # rerun from the manifest alone (the campaign file deleted)
    (tmp_path / "tiny.toml").unlink()
    res = runner.invoke(app, ["rerun", str(c.output), "--out", str(tmp_path / "again"), "--executor", "local"])
    assert res.exit_code == 0, res.output
    pd.testing.assert_frame_equal(_rows(tmp_path / "again"), rows)


def test_rerun_refuses_changed_inputs_and_foreign_dirs(tmp_path):
    c = load_campaign(write_tiny(tmp_path, flush=1000))
    run_campaign(c, executor="local")
    path = c.output / "manifest.json"
    m = json.loads(path.read_text())
    path.write_text(json.dumps(dict(m, config_hash="f" * 64)))
    res = runner.invoke(app, ["rerun", str(c.output), "--out", str(tmp_path / "x"), "--executor", "local"])
    assert res.exit_code == 2 and "config_hash = ffffffffffff" in res.output and "would not reproduce" in res.output
    path.write_text(json.dumps({k: v for k, v in m.items() if k != "campaign"}))
    res = runner.invoke(app, ["rerun", str(c.output), "--out", str(tmp_path / "x"), "--executor", "local"])
    assert res.exit_code == 2 and "campaign = None" in res.output
    res = runner.invoke(app, ["rerun", str(tmp_path / "nope"), "--out", str(tmp_path / "x")])
    assert res.exit_code == 2 and "no such directory" in res.output
    assert not (tmp_path / "x").exists()


def test_rerun_of_rows_of_an_older_loopnest_model_says_the_model_changed(tmp_path):
    """A result directory written by loop-nest model version 3 (its manifest's config says so, its
    hash is not today's): `sweep rerun` refuses with exit 2 and says the cost model changed, not
    that an input file did."""
    from costmodel.loopnest.reference import MODEL_VERSION
    camp = tmp_path / "ln.toml"
    camp.write_text(tiny_loopnest("ln"))
    c = load_campaign(camp, output=tmp_path / "out")
    run_campaign(c, executor="local")
    path = c.output / "manifest.json"
    m = json.loads(path.read_text())
    assert m["config"]["loopnest_model"] == MODEL_VERSION
    m["config"]["loopnest_model"] = MODEL_VERSION - 1
    path.write_text(json.dumps(dict(m, config_hash="e" * 64)))
    res = runner.invoke(app, ["rerun", str(c.output), "--out", str(tmp_path / "x"), "--executor", "local"])
    assert res.exit_code == 2, res.output
    assert f"loopnest_model = {MODEL_VERSION - 1}" in res.output and f"now version {MODEL_VERSION}" in res.output
    assert not (tmp_path / "x").exists()


def test_a_driver_never_writes_into_a_directory_that_now_holds_another_campaign(tmp_path):
    """A driver still running after its output directory was deleted and reused by another
    campaign (seen in practice: a background run that ignored SIGINT) must not mix its rows in."""
    import shutil

    import pyarrow as pa

    from sweep.common.errors import StoreError

    st = Store(tmp_path / "out")
    st.create({"name": "a", "config_hash": "a" * 64})
    batch = [("t1", {"rows": pa.table({"task_id": ["t1"], "status": ["ok"]})})]
    assert st.write_batch(batch, stamp={"code_version": "x", "config_hash": "a" * 64}) == 1
    shutil.rmtree(tmp_path / "out")
    Store(tmp_path / "out").create({"name": "b", "config_hash": "b" * 64})
    batch2 = [("t2", {"rows": pa.table({"task_id": ["t2"], "status": ["ok"]})})]
    with pytest.raises(StoreError, match="no longer holds this campaign"):
        st.write_batch(batch2, stamp={"code_version": "x", "config_hash": "a" * 64})
    assert Store(tmp_path / "out").fragments() == []
    shutil.rmtree(tmp_path / "out")
    with pytest.raises(StoreError):
        st.write_batch(batch2, stamp={"code_version": "x", "config_hash": "a" * 64})
    assert not (tmp_path / "out").exists()
