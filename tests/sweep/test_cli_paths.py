"""Output paths that cannot be written (a virtual file system such as /proc, a path under a file)
exit 2 naming the option, with no traceback and nothing written (before: FileNotFoundError /
NotADirectoryError tracebacks with exit 1 from `sweep run --out`, `sweep tune --out`,
`sweep report --plots` and `sweep report --html`)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from campaign_util import tiny_loopnest
from sweep.cli import app

runner = CliRunner()


@pytest.fixture(scope="module")
def done(tmp_path_factory):
    """A campaign file, a file to put paths under, and a finished result directory."""
    tmp = tmp_path_factory.mktemp("paths")
    camp = tmp / "c.toml"
    camp.write_text(tiny_loopnest("paths", 'name = "loma"\nparams = { lpf_limit = 3 }'))
    res = runner.invoke(app, ["run", str(camp), "--out", str(tmp / "out"), "--executor", "local"])
    assert res.exit_code == 0, res.output
    (tmp / "a_file").write_text("x")
    return tmp


@pytest.mark.parametrize("case", ["run-proc", "run-under-file", "plots-proc", "plots-under-file",
                                  "html-proc", "html-under-file"])
def test_unwritable_output_paths_exit_2_naming_the_option(done, case):
    what, where = case.split("-", 1)
    bad = "/proc/dse_sweep_test" if where == "proc" else str(done / "a_file" / "sub")
    if what == "run":
        args, key = ["run", str(done / "c.toml"), "--out", bad, "--executor", "local"], bad
    elif what == "plots":
        args, key = ["report", str(done / "out"), "--plots", bad], f"--plots {bad}"
    else:
        args, key = ["report", str(done / "out"), "--html", bad + "/r.html"], f"--html {bad}/r.html"
    res = runner.invoke(app, args)
    assert res.exit_code == 2, res.output
    assert key in res.output and "Traceback" not in res.output
    assert (done / "a_file").read_text() == "x"   # nothing written under the file
