"""Bad input at every entry point, one table: `sweep run`, `validate`, `map`, `eval`, `report`,
`tune`, `run --resume` and `rerun`. Each case must exit with code 2, name the file, key and value in its
message, and write nothing (the temporary directory is byte-for-byte unchanged).

A case is (id, files to create, command line, fragments the message must hold); ``{tmp}`` in
files, command and fragments is the case's temporary directory.
"""

import json
import re
from pathlib import Path

import pytest
import tomli_w
from typer.testing import CliRunner

from costmodel.loopnest.arch import load_accelerator
from sweep.cli import app

from campaign_util import TINY
from paths import CAMPAIGNS, DATA

runner = CliRunner()

NET = (DATA / "tiny_net.csv").read_text()
LOOPS = """name = "bad"
output = "{tmp}/out"
networks = [{ file = "net.csv" }]
objectives = ["energy"]
seeds = [0]

[architectures]
kind = "loopnest"
presets = ["eyeriss_like"]

[[mappers]]
name = "salsa"
params = { engine = "sa", iterations = 50 }
"""
SYST = TINY.format(out="{tmp}/out", flush=1, chunk=8).replace("{{", "{").replace("}}", "}")
TUNE = (CAMPAIGNS / "tune_salsa_eyeriss.toml").read_text()
MANIFEST = {"format": "dse-sweep/1", "name": "bad", "config_hash": "0" * 64, "config": {"kind": "loopnest"}}


def _sub(text: str, old: str, new: str) -> str:
    assert old in text, old
    return text.replace(old, new, 1)


def _loops(old: str, new: str) -> dict:
    return {"c.toml": _sub(LOOPS, old, new), "net.csv": NET}


def _net(old: str, new: str) -> dict:
    return {"c.toml": LOOPS, "net.csv": _sub(NET, old, new)}


RUN = ["run", "{tmp}/c.toml", "--executor", "local"]
VALIDATE = ["validate", "{tmp}/c.toml"]
TUNE_CMD = ["tune", "{tmp}/t.toml", "--out", "{tmp}/tout", "--executor", "local"]
MAP = ["map", "--dims", "K=8,C=4,OY=7,OX=7,FY=3,FX=3", "--arch", "eyeriss_like", "--mapper", "salsa"]
#: eyeriss_like as a user file, one per-access energy TOML's nan (issue 57: rows came back "infeasible")
NAN_ARCH = tomli_w.dumps({**load_accelerator("eyeriss_like").to_dict(), "name": "nan_rf"}).replace(
    "read_pj = 1.0", "read_pj = nan", 1)
FOREIGN_PARQUET = {"res/data.parquet": "PARQUET", "c.toml": LOOPS, "net.csv": NET}   # written as a real Parquet file below

CASES = [
    # --- campaign files: run and validate ---------------------------------------------------
    ("malformed-toml", {"c.toml": LOOPS + "\nname = = 1\n", "net.csv": NET}, [RUN, VALIDATE],
     ["{tmp}/c.toml", "not valid TOML"]),
    ("unknown-network", _loops('{ file = "net.csv" }', '"resnet51"'), [RUN, VALIDATE],
     ["{tmp}/c.toml", "networks[0] = 'resnet51': unknown network"]),
    ("unknown-arch", _loops('"eyeriss_like"]', '"eyeriss_lik"]'), [RUN, VALIDATE],
     ["{tmp}/c.toml", "architectures.presets[0] = 'eyeriss_lik'"]),
    ("unknown-mapper", _loops('name = "salsa"', 'name = "sals"'), [RUN, VALIDATE],
     ["{tmp}/c.toml", "mappers[0].name = 'sals': unknown mapper"]),
    ("unknown-parameter", _loops("iterations = 50", "iterashuns = 50"), [RUN, VALIDATE],
     ["{tmp}/c.toml", "mappers[0].params.iterashuns = 50: unknown parameter"]),
    ("wrong-type-param", _loops("iterations = 50", 'iterations = "many"'), [RUN, VALIDATE],
     ["{tmp}/c.toml", "mappers[0].params.iterations = 'many'"]),
    ("wrong-type-seeds", _loops("seeds = [0]", 'seeds = "0"'), [RUN, VALIDATE],
     ["{tmp}/c.toml", "seeds = '0'"]),
    ("wrong-type-run", _loops('iterations = 50 }', 'iterations = 50 }\n[run]\nunits_per_task = "4"'),
     [RUN, VALIDATE], ["{tmp}/c.toml", "run.units_per_task = '4'"]),
    ("zero-run-option", _loops('iterations = 50 }', 'iterations = 50 }\n[run]\nmax_in_flight = 0'),
     [RUN, VALIDATE], ["{tmp}/c.toml", "run.max_in_flight = 0"]),
    ("negative-seed", _loops("seeds = [0]", "seeds = [-1]"), [RUN, VALIDATE], ["{tmp}/c.toml", "seeds = [-1]"]),
    ("zero-layer-dim", _net("conv_a,8,4,", "conv_a,0,4,"), [RUN, VALIDATE],
     ["{tmp}/c.toml", "networks[0].file = 'net.csv'", "net.csv:8", "('K')", "got '0'"]),
    ("negative-layer-dim", _net("conv_b,16,8,", "conv_b,16,-8,"), [RUN, VALIDATE],
     ["{tmp}/c.toml", "networks[0].file = 'net.csv'", "net.csv:9", "('C')", "got '-8'"]),
    ("pow2-zero", {"c.toml": _sub(SYST, "fsram_kib = [16, 32]", "fsram_kib = { pow2 = [0, 32] }")},
     [RUN, VALIDATE], ["{tmp}/c.toml", "architectures.grid.fsram_kib = {'pow2': [0, 32]}"]),
    ("negative-grid", {"c.toml": _sub(SYST, "psram_kib = [8, 16]", "psram_kib = [-8, 16]")},
     [RUN, VALIDATE], ["{tmp}/c.toml", "architectures.grid.psram_kib = [-8, 16]: values must be positive"]),
    ("no-feasible-point", {"c.toml": _sub(SYST, '"area_mm2 <= 16"', '"area_mm2 <= 0.01"')},
     [RUN, VALIDATE], ["{tmp}/c.toml", "no hardware point satisfies the constraints"]),
    ("no-mapping-fits", {"c.toml": _sub(LOOPS, '"eyeriss_like"]', '"eyeriss_like"]\nspatial = { D1 = [["OX", 14]], '
                                        'D2 = [["FY", 3], ["K", 4], ["C", 4]] }'), "net.csv": NET},
     [RUN, VALIDATE], ["{tmp}/c.toml", "architectures.spatial.D2 = [['FY', 3], ['K', 4], ['C', 4]]: fan-out 48 "
                       "exceeds D2 = 12 of accelerator 'eyeriss_like': no mapping fits"]),
    ("missing-campaign", {}, [RUN, VALIDATE], ["{tmp}/c.toml", "cannot read"]),
    ("unknown-report-key", _loops('iterations = 50 }', 'iterations = 50 }\n[report]\nbaseline = "salsa"\nnetowrk = 1'),
     [RUN, VALIDATE], ["{tmp}/c.toml", "report.netowrk = 1: unknown key for kind 'loopnest'"]),
    ("report-baseline-not-a-mapper", _loops('iterations = 50 }', 'iterations = 50 }\n[report]\nbaseline = "random"'),
     [RUN, VALIDATE], ["{tmp}/c.toml", "report.baseline = 'random': expected the name of one of the campaign's mappers"]),
    ("nan-mapper-param", _loops("iterations = 50", "iterations = 50, t0 = nan"), [RUN, VALIDATE],
     ["{tmp}/c.toml", "mappers[0].params.t0 = nan: expected a finite float"]),
    ("nan-energy-in-arch-file", {"c.toml": _sub(LOOPS, 'presets = ["eyeriss_like"]', 'files = ["acc.toml"]'),
                                 "net.csv": NET, "acc.toml": NAN_ARCH}, [RUN, VALIDATE],
     ["{tmp}/c.toml", "architectures.files[0]", "(rf_64B_A).read_pj = nan: expected a finite non-negative number"]),
    # --- sweep map / eval -------------------------------------------------------------------
    ("map-unknown-arch", {}, [_sub(" ".join(MAP), "eyeriss_like", "eyeriss_lik").split()],
     ["eyeriss_lik", "unknown accelerator"]),
    ("map-unknown-mapper", {}, [_sub(" ".join(MAP), "salsa", "sals").split()], ["--mapper", "sals"]),
    ("map-mapper-of-another-kind", {}, [_sub(" ".join(MAP), "salsa", "deepopt").split()],
     ["--mapper = 'deepopt'", "maps systolic architectures", "deepopt_table3"]),
    ("map-nan-param", {}, [MAP + ["--param", "t0=nan", "--param", "engine=sa"]], ["--param t0 = nan", "finite"]),
    ("map-zero-dim", {}, [_sub(" ".join(MAP), "K=8", "K=0").split()], ["--dims K = 0", "positive integer"]),
    ("map-beyond-64-bit", {}, [_sub(" ".join(MAP), "K=8,C=4,OY=7,OX=7", "K=2147483648,C=2147483648,OY=65536,OX=65536")
                               .split()], ["--dims", "layer 'dims'", "x 16 bits reach 2^62", "64-bit counts"]),
    ("map-unknown-param", {}, [MAP + ["--param", "tempreature=1"]], ["--param tempreature", "unknown parameter"]),
    ("map-wrong-type-param", {}, [MAP + ["--param", "iterations=many"]], ["--param iterations", "many"]),
    ("map-unknown-network", {}, [["map", "--network", "resnet51", "--layer", "0", "--arch", "eyeriss_like",
                                  "--mapper", "salsa"]], ["--network", "resnet51", "unknown network"]),
    ("eval-malformed-mapping", {"m.json": "{not json"},
     [["eval", "--dims", "K=8,C=4,OY=7,OX=7,FY=3,FX=3", "--arch", "eyeriss_like", "--mapping", "{tmp}/m.json"]],
     ["{tmp}/m.json"]),
    ("eval-missing-mapping", {},
     [["eval", "--dims", "K=8,C=4,OY=7,OX=7,FY=3,FX=3", "--arch", "eyeriss_like", "--mapping", "{tmp}/m.json"]],
     ["{tmp}/m.json"]),
    # --- sweep tune -------------------------------------------------------------------------
    ("tune-malformed-toml", {"t.toml": TUNE + "\ntrials = = 3\n"}, [TUNE_CMD], ["{tmp}/t.toml", "not valid TOML"]),
    ("tune-unknown-mapper", {"t.toml": _sub(TUNE, 'mapper = "salsa"', 'mapper = "sals"')}, [TUNE_CMD],
     ["{tmp}/t.toml", "mapper = 'sals'"]),
    ("tune-zero-budget", {"t.toml": _sub(TUNE, "budget = 1000", "budget = 0")}, [TUNE_CMD],
     ["{tmp}/t.toml", "budget = 0"]),
    ("tune-inf-space", {"t.toml": _sub(TUNE, "high = 1.0, log = true", "high = inf, log = true")}, [TUNE_CMD],
     ["{tmp}/t.toml", "space.t0.high = inf: expected a finite float"]),
    ("tune-unknown-layer", {"t.toml": _sub(TUNE, '"layer3.0.conv1"', '"layer9.conv1"')}, [TUNE_CMD],
     ["{tmp}/t.toml", "layer9.conv1"]),
    # --- result directories: report and --resume --------------------------------------------
    ("report-missing-dir", {}, [["report", "{tmp}/res"]], ["{tmp}/res", "no such directory"]),
    ("report-foreign-parquet", FOREIGN_PARQUET, [["report", "{tmp}/res"], RUN + ["--out", "{tmp}/res", "--resume"]],
     ["{tmp}/res", "not a dse-sweep result directory"]),
    ("rerun-foreign-parquet", FOREIGN_PARQUET, [["rerun", "{tmp}/res", "--out", "{tmp}/new"]],
     ["{tmp}/res", "not a dse-sweep result directory"]),
    ("report-bad-manifest", {"res/manifest.json": "{oops"}, [["report", "{tmp}/res"]],
     ["{tmp}/res/manifest.json", "unreadable manifest"]),
    ("report-foreign-manifest", {"res/manifest.json": json.dumps({"format": "other"}), "c.toml": LOOPS, "net.csv": NET},
     [["report", "{tmp}/res"], RUN + ["--out", "{tmp}/res", "--resume"]],
     ["{tmp}/res/manifest.json", "not a dse-sweep manifest"]),
    ("report-corrupt-fragment", {"res/manifest.json": json.dumps(MANIFEST), "res/rows/part-x.parquet": "garbage"},
     [["report", "{tmp}/res", "--plots", "{tmp}/plots"]], ["{tmp}/res/rows/part-x.parquet", "unreadable Parquet fragment"]),
    ("report-foreign-fragment", {"res/manifest.json": json.dumps(MANIFEST), "res/rows/part-x.parquet": "PARQUET"},
     [["report", "{tmp}/res"]], ["{tmp}/res/rows/part-x.parquet", "no task_id column"]),
    ("report-a-file", {"res": "x"}, [["report", "{tmp}/res"]], ["{tmp}/res"]),
    ("resume-other-campaign", {"c.toml": LOOPS, "net.csv": NET, "out/manifest.json": json.dumps(MANIFEST)},
     [RUN + ["--resume"]], ["{tmp}/out", "another campaign"]),
]


def _snapshot(root: Path) -> dict:
    return {str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns, p.is_dir())
            for p in sorted(root.rglob("*"))}


@pytest.mark.parametrize("files, commands, fragments", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input_exit_2_named_nothing_written(tmp_path, files, commands, fragments):
    import pyarrow as pa
    import pyarrow.parquet as pq

    for name, text in files.items():
        p = tmp_path / name
        p.parent.mkdir(parents=True, exist_ok=True)
        if text == "PARQUET":  # a foreign Parquet file: no task_id column
            pq.write_table(pa.table({"x": [1, 2]}), p)
        else:
            p.write_text(text.replace("{tmp}", tmp_path.as_posix()))
    before = _snapshot(tmp_path)
    for cmd in commands:
        res = runner.invoke(app, [a.replace("{tmp}", tmp_path.as_posix()) for a in cmd])
        msg = re.sub(r"\s+", " ", res.output)
        assert res.exit_code == 2, (cmd, msg, res.exception)
        for f in fragments:
            assert f.replace("{tmp}", tmp_path.as_posix()) in msg, (cmd, f, msg)
        assert _snapshot(tmp_path) == before, cmd
