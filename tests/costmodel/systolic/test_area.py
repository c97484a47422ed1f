"""Tests of costmodel.systolic.area: DeepOpt's 65 nm area model and hardware-allocation grid (the
area constants themselves, in `costmodel.tech.deepopt65`, are checked in
tests/costmodel/tech/test_deepopt65.py)."""

from __future__ import annotations

import numpy as np
import pytest

from costmodel.systolic.area import area_mm2, deepopt_grid
from costmodel.tech.deepopt65 import A_PE_UM2


def test_area_by_hand():
    # 32 x 64 array, 16 + 32 + 8 KiB (paper Table 3 hardware):
    # 2048 * 7405.948 um^2 = 15.1674 mm^2; 56 KiB * 1024 * 32.54567 um^2 = 1.8663 mm^2
    a = area_mm2(32, 64, 16, 32, 8)
    assert isinstance(a, float)
    assert a == pytest.approx(2048 * 7405.948e-6 + 56 * 1024 * 32.54567e-6, rel=1e-6)
    assert a == pytest.approx(17.034, abs=1e-3)
    # GoogLeNet E*D optimum of Table 4: 48 x 32, 32/64/32 KiB -> 11.3755 + 4.2658 = 15.641 mm^2
    assert area_mm2(48, 32, 32, 64, 32) == pytest.approx(15.641, abs=1e-3)


def test_area_vectorised_and_errors():
    a = area_mm2(np.array([8, 16]), 8, [4, 4], 4, 4)
    assert a.dtype == np.float64 and a.shape == (2,)
    assert a[1] - a[0] == pytest.approx((16 * 8 - 8 * 8) * A_PE_UM2 * 1e-6)
    with pytest.raises(ValueError):
        area_mm2(-1, 8, 4, 4, 4)
    with pytest.raises(ValueError):
        area_mm2([8, 8], [8, 8, 8], 4, 4, 4)


def test_authors_grid_rules_and_size():
    g = deepopt_grid()
    J, K = g["J"], g["K"]
    f, i, p = g["fsram_kib"], g["isram_kib"], g["psram_kib"]
    assert len(J) == 70631
    assert set(np.unique(f)) == set(np.unique(i)) == set(np.unique(p)) == {4, 8, 16, 32, 64, 128, 256}
    assert J.min() == K.min() == 8 and np.all(J % 2 == 0) and np.all(K % 2 == 0)
    assert np.all(np.minimum(J, K) >= 0.5 * np.maximum(J, K))
    assert np.all(J * K <= 2106)
    assert np.all(g["area_mm2"] <= 16.0)
    np.testing.assert_allclose(g["area_mm2"], area_mm2(J, K, f, i, p))
    assert np.all(f * 8192 >= 8 * J * K) and np.all(i * 8192 >= 8 * J) and np.all(p * 8192 >= 32 * K)
    # the optimal points of the paper's Table 4 (GoogLeNet) and Table 5 are grid points
    pts = {(48, 32, 32, 64, 32), (48, 32, 64, 64, 4), (48, 32, 64, 64, 8), (38, 32, 64, 128, 4),
           (48, 36, 16, 16, 64), (50, 32, 16, 32, 64), (54, 32, 16, 16, 64),
           (40, 34, 16, 128, 32), (40, 32, 32, 32, 128)}
    have = set(zip(J.tolist(), K.tolist(), f.tolist(), i.tolist(), p.tolist()))
    assert pts <= have
