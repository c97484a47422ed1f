"""Reuse across designs gives exactly the rows of each design mapped alone.

A task maps its designs one after another and keeps every layer mapping in the process
(`sweep.engine.design_tasks.mapped_layer`), keyed by what the mapper sees of the design
(`mapper_view`: the accelerator without its name, its vector unit, its DRAM kind's name). Here
a grid over every DRAM kind, two unit counts, two clocks and two vector units (where the views
repeat: the vector unit is outside them, and 1 unit at 700 MHz moves the bits per cycle of 2 at
1,400) is mapped in one task, then each design alone in a fresh process state: every row and total
is the same, but the wall time.
"""

from __future__ import annotations

import pytest

import sweep.engine.design_tasks as dt
from llm_grid_util import CAMPAIGN
from sweep.kinds.load import parse_campaign

def _strip(table) -> list[dict]:
    """Rows without task_id and wall_s (measured), NaN as a string (NaN != NaN)."""
    df = table.to_pandas().drop(columns=["task_id", "wall_s"], errors="ignore")
    return df.astype(object).where(df.notna(), "nan").to_dict("records")


@pytest.fixture
def campaign():
    return parse_campaign(CAMPAIGN)


def test_reused_rows_equal_each_design_mapped_alone(campaign, monkeypatch):
    space = campaign.architectures
    n = len(space)
    assert n == 32
    views = {dt.mapper_view(space.template.design(space.point(i))) for i in range(n)}
    assert len(views) < n // 2  # the vector unit and (units, clock) pairs share views

    solved = []
    real = dt._map_layer
    monkeypatch.setattr(dt, "_map_layer", lambda prob, ws=False, skip=False: solved.append(1) or real(prob, ws, skip))
    dt._MAPPINGS.clear()
    together = dt.make_task(campaign, list(range(n))).run()
    n_together = len(solved)

    alone = {"rows": [], "totals": [], "archs": []}
    for i in range(n):
        dt._MAPPINGS.clear()
        t = dt.make_task(campaign, [i]).run()
        for k in alone:
            alone[k] += _strip(t[k])
    n_alone = len(solved) - n_together
    assert n_together < n_alone / 2          # reuse did happen
    for k in ("rows", "totals", "archs"):
        assert _strip(together[k]) == alone[k], k
    ok = [r for r in alone["rows"] if r["status"] == "ok"]
    assert ok and {r["dram"] for r in ok} == {"lpddr5", "ddr5", "hbm2e", "hbm3"}


def test_mapper_view_leaves_out_only_what_mappers_do_not_read(campaign):
    space = campaign.architectures
    vals = space.point(0)
    a = space.template.design(vals, name="a")
    b = space.template.design({**vals, "vector.lanes": 512}, name="b")
    c = space.template.design({**vals, "clock_mhz": 1400}, name="a")
    assert dt.mapper_view(a) == dt.mapper_view(b)     # the vector unit and the name are not seen
    assert dt.mapper_view(a) != dt.mapper_view(c)     # the clock sets the DRAM's bits per cycle
