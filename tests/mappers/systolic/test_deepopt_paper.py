"""DeepOpt's published results (ASP-DAC 2021, Tables 3, 4 and 5) from our model and mapper.

The main campaign's settings: DeepOpt's layer tables, 65 nm constants, the authors' grid, and
``fc_batch_quirk`` (their FC energy count) so the numbers compare with the paper.
"""


import numpy as np
import pytest

from costmodel.systolic import BRANCHES, SystolicParams
from costmodel.zoo import load_network
from mappers.systolic.deepopt import evaluate_per_image, fixed_scheduling, los
from paths import CAMPAIGNS

SP = SystolicParams(fc_batch_quirk=True)
NETS = ["alexnet_deepopt", "vgg16_deepopt", "googlenet_v1_deepopt", "squeezenet_v11_deepopt",
        "resnet50_deepopt"]
HW = ("J", "K", "fsram_kib", "isram_kib", "psram_kib")

# Table 3: percent penalty of fixed scheduling vs LOS, GoogLeNet-v1, 32 x 64, 16/32/8 KB.
TABLE3 = {  # branch: (E, D, ED, E2D, ED2)
    "XYZiZo": (11.7, 19.4, 44.7, 77.4, 89.1),
    "XZiYZo": (12.5, 33.8, 22.4, 9.5, 16.4),
    "XYZoZi": (15.4, 27.2, 61.3, 107.5, 132.0),
    "XZoYZi": (32.2, 66.6, 89.5, 120.0, 152.3),
    "ZiXYZo": (613.7, None, None, None, None),  # "(large)": footnote 1
}
PMS = ("E", "D", "ED", "E2D", "ED2")

# Table 5: E*D-optimal hardware (J/K/f/i/p) per network and the percent penalty of running the
# column network on it, columns in NETS order.
TABLE5 = {
    "alexnet_deepopt": ((50, 32, 16, 32, 64), (0.0, 3.18, 3.92, 34.20, 7.04)),
    "vgg16_deepopt": ((54, 32, 16, 16, 64), (1.01, 0.0, 5.72, 32.86, 11.18)),
    "googlenet_v1_deepopt": ((48, 32, 32, 64, 32), (3.69, 2.64, 0.0, 22.79, 9.83)),
    "squeezenet_v11_deepopt": ((40, 34, 16, 128, 32), (8.77, 22.92, 20.87, 0.0, 15.33)),
    "resnet50_deepopt": ((40, 32, 32, 32, 128), (8.58, 28.33, 22.79, 24.63, 0.0)),
}

# Table 4: GoogLeNet-v1 optimal allocation per PM and improvement over the worst allocation.
TABLE4 = {"ED": ((48, 32, 32, 64, 32), 40.7), "E2D": ((48, 32, 64, 64, 4), 87.7),
          "ED2": ((48, 32, 64, 64, 8), 1134.5), "E": ((38, 32, 64, 128, 4), 2.0),
          "D": ((48, 36, 16, 16, 64), 17.1)}


def _net_pm(name, points, pm):
    net = load_network(name)
    pts = np.asarray(points).T
    res = evaluate_per_image([l for l, _ in net], *pts, SP)
    return los(res, np.array(net.repeats), pm)[0], res, np.array(net.repeats)


def test_table3_fixed_scheduling_penalty():
    _, res, reps = _net_pm("googlenet_v1_deepopt", [(32, 64, 16, 32, 8)], "E")
    for j, pm in enumerate(PMS):
        v = los(res, reps, pm)[0][0]
        fs = fixed_scheduling(res, reps, pm)[0]
        for b, name in enumerate(BRANCHES):
            want = TABLE3[name][j]
            got = 100.0 * (fs[b] / v - 1.0)
            if want is None:
                assert not np.isfinite(got)  # ZiXYZo is not evaluated for delay PMs
            else:
                # the paper prints one decimal; D of XZiYZo differs by 0.1 (per-stage rounding
                # of the authors' per-image cycle count of batched FC layers)
                assert got == pytest.approx(want, abs=0.15), (name, pm)


def test_table5_cross_network_penalty_on_published_hardware():
    points = [TABLE5[n][0] for n in NETS]
    ed = {n: _net_pm(n, points, "ED")[0] for n in NETS}
    for i, a in enumerate(NETS):
        for j, b in enumerate(NETS):
            got = 100.0 * (ed[b][i] / ed[b][j] - 1.0)
            assert got == pytest.approx(TABLE5[a][1][j], abs=0.006), (a, b)


@pytest.fixture(scope="module")
def grid():
    from sweep.kinds import load_campaign
    c = load_campaign(CAMPAIGNS / "area16mm2.toml")
    assert c.systolic == {"fc_batch_quirk": True}
    return c.architectures


def test_grid_size_as_the_authors(grid):
    # reference/README.md: "about 70,600 points" at or under 16 mm^2
    assert 70_000 <= len(grid) <= 71_000
    assert grid.area_mm2.max() <= 16.0
    # the campaign's constraint expressions give exactly the grid of the authors' rules
    from costmodel.systolic.area import deepopt_grid
    ref = deepopt_grid()
    mine = set(zip(*(getattr(grid, k).tolist() for k in HW)))
    assert mine == set(zip(*(np.asarray(ref[k]).tolist() for k in HW)))


_CACHE: dict = {}


def _grid_pm(grid, name):
    """Network PM of every grid point for every PM, evaluated once per network (chunked)."""
    if name not in _CACHE:
        net = load_network(name)
        out = {pm: [] for pm in PMS}
        for s in range(0, len(grid), 8192):
            ch = grid.take(slice(s, s + 8192))
            res = evaluate_per_image([l for l, _ in net], *(getattr(ch, k) for k in HW), SP)
            for pm in PMS:
                out[pm].append(los(res, np.array(net.repeats), pm)[0])
        _CACHE[name] = {pm: np.concatenate(v) for pm, v in out.items()}
    return _CACHE[name]


@pytest.mark.slow
@pytest.mark.parametrize("pm", list(TABLE4))
def test_table4_googlenet_optimal_allocation(grid, pm):
    pts = np.stack([getattr(grid, k) for k in HW], axis=1)
    v = _grid_pm(grid, "googlenet_v1_deepopt")[pm]
    best = np.lexsort((grid.area_mm2, v))[0]
    assert tuple(int(x) for x in pts[best]) == TABLE4[pm][0]
    window = (grid.area_mm2 >= 0.9 * 16.0) & np.isfinite(v)
    improvement = v[window].max() / v[best]
    if pm == "E":
        # we get 1.7x for E (the allocation matches; the paper's worst point for E is unknown)
        assert improvement == pytest.approx(1.7, abs=0.05)
    else:
        assert improvement == pytest.approx(TABLE4[pm][1], rel=0.002)


@pytest.mark.slow
@pytest.mark.parametrize("name", NETS)
def test_table5_optimal_hardware_per_network(grid, name):
    pts = np.stack([getattr(grid, k) for k in HW], axis=1)
    v = _grid_pm(grid, name)["ED"]
    best = np.lexsort((grid.area_mm2, v))[0]
    assert tuple(int(x) for x in pts[best]) == TABLE5[name][0]


def test_min_area_fraction_keeps_the_10_percent_window(tmp_path):
    from sweep.kinds import load_campaign
    src = (CAMPAIGNS / "area16mm2.toml").read_text()
    p = tmp_path / "c.toml"
    p.write_text(src.replace("min_area_fraction = 0.0", "min_area_fraction = 0.9"))
    pts = load_campaign(p).architectures
    assert pts.area_mm2.min() >= 14.4 and pts.area_mm2.max() <= 16.0
    assert 0 < len(pts) < 70_000
    # the published Table 4 / Table 5 optima all lie in the window
    have = set(zip(*(getattr(pts, k).tolist() for k in HW)))
    for hw, _ in TABLE5.values():
        assert hw in have
