"""Crash testing as SQLite does it: a run, a resume and a compaction of a small campaign each
killed (``os._exit`` in the middle of the store's work: no cleanup) at a sample of their file-system
operations, then the next command run undisturbed; every table must then hold the undisturbed
run's rows, for a plain ``pandas.read_parquet`` and for the store. The full sweep (every operation,
and ENOSPC at every one) is ``python scripts/crash_points.py``."""

from __future__ import annotations

import sys

import pytest

from paths import SCRIPTS

sys.path.insert(0, str(SCRIPTS))
import crash_points as cp  # noqa: E402

#: Points per scenario in CI, spread over its operations (the first and the last included).
SAMPLE = 7


@pytest.fixture(scope="module")
def bench(tmp_path_factory):
    return cp.bench(tmp_path_factory.mktemp("crash_points"))


def _sample(total: int, k: int = SAMPLE) -> list[int]:
    return sorted({1 + round(i * (total - 1) / (k - 1)) for i in range(k)})


@pytest.mark.slow
@pytest.mark.parametrize("scenario", ["run", "resume", "compact"])
def test_killed_at_a_sample_of_operations_then_the_next_command_leaves_the_undisturbed_rows(bench, scenario):
    total = cp.points(bench, scenario)
    assert total > 20   # the scenario does real work: commits, renames, fsyncs
    for n in _sample(total):
        outcome, diff = cp.crash_once(bench, scenario, n)
        assert outcome == "crashed", (n, outcome, diff)
        assert diff == "", (scenario, n, total, diff)


@pytest.mark.slow
def test_no_space_at_a_sample_of_operations_is_one_line_and_resumable(bench):
    total = cp.points(bench, "run")
    for n in _sample(total, 4):
        outcome, diff = cp.crash_once(bench, "run", n, mode="enospc")
        assert outcome == "failed" and diff == "", (n, outcome, diff)


def test_the_crash_prefix_is_the_same_on_both_sides():
    """The store recognises a crashed task by the text the tasks layer writes (it cannot import it)."""
    from sweep.engine.store.repair import CRASHED as seen
    from sweep.engine.tasks import CRASHED as written
    assert seen == written
