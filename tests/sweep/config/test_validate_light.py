"""Checking a campaign reads and checks; evaluators are built when tasks run (issue 32, item 4).

`sweep validate` of every bundled campaign (load, count the tasks, describe with the run-time
estimate) in a fresh interpreter whose ordering evaluator and kernel tables raise when built (a
BaseException, which no ``except Exception`` of the estimate can swallow), and which must not
have imported the loop-nest kernel (numba) at the end."""

import glob
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]

_SCRIPT = r'''
import glob, sys
import costmodel.loopnest.ordering as ordering

class Built(BaseException):
    pass

def refuse(*a, **k):
    raise Built("validation built a loop-nest evaluator")

ordering.OrderingEvaluator.__init__ = refuse
ordering.build_tables = refuse

from sweep.kinds import load_any
for path in sys.argv[1:]:
    kind, c = load_any(path)
    if not kind.runs_study(c) and kind.name != "tune":
        kind.count(c)
    kind.describe_valid(c, path)
    print("ok", path)
loaded = sorted(m for m in sys.modules if m == "costmodel.loopnest.kernel" or m.split(".")[0] == "numba")
print("kernel modules:", loaded)
'''


def test_validation_builds_no_evaluator_and_imports_no_kernel():
    paths = sorted(glob.glob(str(ROOT / "campaigns" / "*.toml")))
    assert paths
    out = subprocess.run([sys.executable, "-c", _SCRIPT, *paths], cwd=ROOT, capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    lines = out.stdout.splitlines()
    assert [l for l in lines if l.startswith("ok ")] == [f"ok {p}" for p in paths]
    assert lines[-1] == "kernel modules: []"
