"""Every table of a result directory reads with plain Parquet readers (issue 43, item 4): a fragment
whose column is all None (typed null) beside one that holds floats, a failed task's fragment with
five columns beside full ones, a column only later tasks have; `pandas.read_parquet(DIR/rows)`
raised "Unsupported cast from double to null" on such a directory (pandas 3.1, pyarrow 26). After a
run (finished or interrupted) every fragment has one schema."""

from __future__ import annotations

import pandas as pd
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

from sweep.engine.store import Store


def _store(tmp_path) -> Store:
    s = Store(tmp_path / "out")
    s.create({"name": "t", "config_hash": "h", "config": {}})
    return s


def _plain_reads(d) -> list[pd.DataFrame]:
    return [pd.read_parquet(d), pq.read_table(d).to_pandas(), ds.dataset(d).to_table().to_pandas()]


def test_fragments_of_differing_schemas_become_one(tmp_path):
    s = _store(tmp_path)
    s.write_batch([("a", {"rows": pa.table({"task_id": ["a"], "status": ["infeasible"], "value": pa.array([None]),
                                            "engine": pa.array([None])})})])
    s.write_batch([("b", {"rows": pa.table({"task_id": ["b", "b"], "status": ["ok", "ok"], "value": [1.5, 2.0],
                                            "engine": ["numba", "numba"], "later": [1, 2]})})])
    s.write_batch([("c", {"rows": pa.table({"task_id": ["c"], "status": ["error"], "error": ["boom"],
                                            "traceback": ["..."]})})])
    d = tmp_path / "out" / "rows"
    with pytest.raises(Exception):  # the failure a user met: a fragment's null type against another's double
        for _ in range(1):
            pd.read_parquet(d)
            pq.read_table(d)
            if {f.name for f in ds.dataset(d).schema} != {"task_id", "status", "value", "engine", "later", "error",
                                                          "traceback"}:
                raise ValueError("a plain reader drops columns")
    before = s.read("rows").sort_values("task_id").reset_index(drop=True)
    assert s.unify_schemas() == {"rows": 3}
    schemas = {str(pq.read_schema(f).remove_metadata()) for f in s.fragments("rows")}
    assert len(schemas) == 1
    for df in _plain_reads(d):
        df = df.sort_values(["task_id", "status"]).reset_index(drop=True)
        assert list(df["task_id"]) == ["a", "b", "b", "c"]
        assert df["value"].tolist()[1:3] == [1.5, 2.0] and pd.isna(df["value"][0]) and pd.isna(df["value"][3])
        assert df["later"].tolist()[1:3] == [1, 2] and df["error"][3] == "boom"
    after = s.read("rows").sort_values("task_id").reset_index(drop=True)
    assert after[before.columns].astype(str).equals(before.astype(str))
    assert s.unify_schemas() == {}  # nothing left to do


def test_a_run_leaves_one_schema_per_table(tmp_path):
    """A loop-nest campaign whose tasks are written one fragment each (flush_rows = 1), some units
    infeasible (their engine, value and loops None): after the run, each table one schema."""
    from paths import REPO
    from sweep import api
    camp = tmp_path / "c.toml"
    net = (REPO / "tests" / "data" / "tiny_net.csv").as_posix()
    camp.write_text(f'name = "x"\noutput = "{(tmp_path / "run").as_posix()}"\nnetworks = [{{file = "{net}"}}]\n'
                    '[architectures]\nkind = "loopnest"\npresets = ["eyeriss_like", "tpu_like"]\n'
                    '[[mappers]]\nname = "loma"\nparams = { lpf_limit = 3 }\n'
                    '[[mappers]]\nname = "random5"\nparams = { valid = 2 }\n'
                    '[run]\nflush_rows = 1\nunits_per_task = 1\n')
    run = api.run_campaign(camp, executor="local")
    for table in ("rows", "problems"):
        frags = Store(run.output).fragments(table)
        assert len(frags) > 1
        assert len({str(pq.read_schema(f).remove_metadata()) for f in frags}) == 1, table
        for df in _plain_reads(run.output / table):
            assert len(df) == len(Store(run.output).read(table))
