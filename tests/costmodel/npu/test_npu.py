"""costmodel.npu: presets, the SCALE-Sim ws fold model, transfers and tilings."""

import math

import pytest

from costmodel.npu import (NPUArch, Tiling, candidate_sizes, conv_cycles, list_npus, load_npu, tile_bytes,
                           tilings, transfer_cycles)
from costmodel.workload import Layer


def test_presets_match_table1():
    assert list_npus() == [f"arch{i}" for i in range(1, 9)]
    table1 = {1: (2, 256, 32), 2: (2, 256, 64), 3: (2, 512, 32), 4: (2, 512, 64),
              5: (4, 256, 32), 6: (4, 256, 64), 7: (4, 512, 32), 8: (4, 512, 64)}
    for i, (n, kib, bw) in table1.items():
        a = load_npu(f"arch{i}")
        assert (a.cores, a.buffer_bytes, a.bandwidth) == (n, kib * 1024, bw)
        assert (a.rows, a.cols, a.clock_hz, a.data_bytes, a.psum_bytes) == (32, 32, 1e9, 1, 4)
    with pytest.raises(KeyError):
        load_npu("arch9")


def test_load_npu_from_file(tmp_path):
    p = tmp_path / "mine.toml"
    p.write_text("cores = 3\nbuffer_kib = 64\nbandwidth = 16\n")
    a = load_npu(p)
    assert (a.name, a.cores, a.buffer_bytes, a.bandwidth) == ("mine", 3, 65536, 16)
    with pytest.raises(ValueError):
        NPUArch("bad", cores=0, buffer_bytes=1, bandwidth=1)


def test_conv_cycles_hand_cases():
    # one fold: 3*3*3 = 27 rows <= 32, 16 cols <= 32: 2*32 + 32 + T - 2 - 1 with T = 100
    assert conv_cycles(3, 3, 3, 16, 100) == 1 * 1 * (64 + 32 + 100 - 2) - 1 == 193
    # 1x1, C_t = 64 -> 2 row folds; K_t = 64 -> 2 col folds; T = 49
    assert conv_cycles(1, 1, 64, 64, 49) == 4 * (96 + 49 - 2) - 1 == 571
    # 3x3x64 = 576 rows -> 18 folds; K_t = 33 -> 2 folds; T = 1
    assert conv_cycles(3, 3, 64, 33, 1) == 18 * 2 * (96 + 1 - 2) - 1 == 3419
    # other array sizes
    assert conv_cycles(1, 1, 8, 8, 10, rows=8, cols=4) == 1 * 2 * (16 + 4 + 10 - 2) - 1 == 55


def test_transfer_cycles():
    assert transfer_cycles(64, 32) == 2
    assert transfer_cycles(65, 32) == 3
    assert transfer_cycles(0, 32) == 0


def test_candidate_sizes():
    assert candidate_sizes(56) == [56, 28, 14, 7, 4, 2, 1]
    assert candidate_sizes(64, 8) == [64, 32, 16, 8]
    assert candidate_sizes(3, 8) == [3]
    assert candidate_sizes(13) == [13, 7, 4, 2, 1]


def test_tilings_fit_and_bound():
    L = Layer("l", K=64, C=32, OY=14, OX=14, FY=3, FX=3)
    a = NPUArch("small", cores=2, buffer_bytes=16 * 1024, bandwidth=32)
    ts = tilings(L, a, max_ops=64)
    assert ts and ts == sorted(ts)
    for t in ts:
        assert sum(tile_bytes(L, a, *t.as_tuple())) <= a.buffer_bytes
        assert t.n_ops(L) <= 64
    # the whole layer in one tile does not fit 16 KiB: 16*16*32 + 9*32*64 + 14*14*64*4 bytes
    assert Tiling(14, 14, 32, 64) not in ts
    assert Tiling(14, 14, 32, 64).counts(L) == (1, 1, 1, 1)
    assert tile_bytes(L, a, 7, 7, 32, 64) == (9 * 9 * 32, 9 * 32 * 64, 7 * 7 * 64 * 4)
    assert math.prod(Tiling(7, 4, 8, 16).counts(L)) == 2 * 4 * 4 * 4
