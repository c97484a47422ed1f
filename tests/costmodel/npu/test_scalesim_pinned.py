"""Our NPU tile latency equals SCALE-Sim 3.0.0's compute cycles, pinned without SCALE-Sim (issue 31,
"SCALE-Sim, pinned").

`tests/data/scalesim/tiles.json` holds SCALE-Sim's figures for 244 tiled convolutions (tCONVs) and
GEMMs (how they were produced: that folder's README.md): weight stationary, stall-free runs, its
COMPUTE_REPORT "Total Cycles" minus "Stall Cycles". Here, for every shape, exactly:

* `costmodel.npu.conv_cycles` of the shape == SCALE-Sim's compute cycles;
* the same through the Flexer mapper: the tCONV's ``op_cycles`` in `mappers.npu.graph.build_dfg`
  (the shape as a one-tile layer on an NPU of that array);
* campaign tiles: the tiling they came from is one `costmodel.npu.tilings` gives for
  ``campaigns/flexer_multinpu.toml`` (its flexer parameters), and every tCONV of that shape in its
  DFG has SCALE-Sim's cycles.

A GEMM (SCALE-Sim's M, N, K topology: M x K times K x N) is, on our side, a 1x1 convolution with
C = K and K = N over M output pixels.
"""

from __future__ import annotations

import functools
import json
import tomllib
from collections import defaultdict

import pytest

from costmodel.npu import NPUArch, Tiling, conv_cycles, load_npu, tilings
from costmodel.workload import Layer
from costmodel.zoo import load_network
from mappers.npu.graph import build_dfg
from paths import CAMPAIGNS, DATA

PINNED = json.loads((DATA / "scalesim" / "tiles.json").read_text())
SHAPES = PINNED["shapes"]
CLASSES = ("full_folds", "partial_folds", "stride2", "one_output_row", "gemm", "non_square", "campaign")


def _layer(s: dict) -> Layer:
    if "gemm" in s:
        g = s["gemm"]
        return Layer(s["id"], K=g["N"], C=g["K"], OY=1, OX=g["M"])
    d = s["layer"]
    return Layer(s["id"], K=d["K"], C=d["C"], OY=d["OY"], OX=d["OX"], FY=d["R"], FX=d["S"], SY=d["stride"],
                 SX=d["stride"])


def test_the_pins_are_scalesim_3_stall_free_weight_stationary():
    about = PINNED["about"]
    assert about["scalesim"].startswith("scalesim 3.0.0")
    assert about["config"]["dataflow"] == "ws" and about["config"]["interface_bandwidth"] == "CALC"
    assert not any(tok.startswith("/") for tok in about["command"].split())   # no path of one machine
    for s in SHAPES:
        ss = s["scalesim"]
        assert ss["stall_cycles"] == 0, s["id"]
        assert ss["compute_cycles"] == ss["total_cycles"] - ss["stall_cycles"]


def test_every_class_is_pinned():
    by = defaultdict(list)
    for s in SHAPES:
        by[s["class"]].append(s)
    assert set(by) == set(CLASSES)
    assert {tuple(s["array"]) for s in by["non_square"]} >= {(16, 32), (32, 16)}
    assert {s["layer"]["stride"] for s in by["stride2"]} == {2}
    assert all(s["layer"]["OY"] == 1 for s in by["one_output_row"])
    assert any("gemm" in s for s in by["gemm"]) and any(s["layer"]["R"] == 1 for s in by["gemm"] if "layer" in s)
    partial = [s for s in by["partial_folds"]
               if (s["layer"]["R"] * s["layer"]["S"] * s["layer"]["C"]) % s["array"][0] or s["layer"]["K"] % s["array"][1]]
    assert len(partial) == len(by["partial_folds"]) >= 3
    camp = by["campaign"]
    spec = tomllib.loads((CAMPAIGNS / "flexer_multinpu.toml").read_text())
    assert {s["source"]["network"] for s in camp} == set(spec["networks"])
    assert {s["source"]["arch"] for s in camp} == {"arch1", "arch3"}   # the 256 and 512 KiB buffers
    assert len(camp) >= 200


@pytest.mark.parametrize("s", SHAPES, ids=[s["id"] for s in SHAPES])
def test_tile_latency_equals_scalesim(s):
    rows, cols = s["array"]
    L = _layer(s)
    expected = s["scalesim"]["compute_cycles"]
    if s["topology"] == "conv":   # SCALE-Sim was given this tile: the input of the output tile, no padding
        assert s["csv"] == [(L.OY - 1) * L.SY + L.FY, (L.OX - 1) * L.SX + L.FX, L.FY, L.FX, L.C, L.K, L.SY]
    else:
        assert s["csv"] == [L.OX, L.K, L.C]
    assert conv_cycles(L.FY, L.FX, L.C, L.K, L.OY * L.OX, rows, cols) == expected
    arch = NPUArch("scalesim", cores=1, buffer_bytes=1 << 40, bandwidth=64, rows=rows, cols=cols)
    g = build_dfg(L, arch, Tiling(L.OY, L.OX, L.C, L.K))
    assert g.op_cycles == [expected]


@functools.lru_cache(maxsize=None)
def _network(name: str) -> dict[str, Layer]:
    return {layer.name: layer for layer, _ in load_network(name)}


def _campaign_groups() -> dict[tuple, list[dict]]:
    out = defaultdict(list)
    for s in SHAPES:
        if s["class"] == "campaign":
            src = s["source"]
            out[(src["network"], src["layer"], src["arch"], tuple(src["tiling"]))].append(s)
    return out


GROUPS = _campaign_groups()


@pytest.mark.parametrize("key", list(GROUPS), ids=[":".join(map(str, k[:3])) for k in GROUPS])
def test_campaign_tiles_in_the_flexer_dfg_take_scalesim_cycles(key):
    net, name, preset, tiling = key
    params = next(m["params"] for m in tomllib.loads((CAMPAIGNS / "flexer_multinpu.toml").read_text())["mappers"]
                  if m["name"] == "flexer")
    layer, arch = _network(net)[name], load_npu(preset)
    t = Tiling(*tiling)
    assert t in tilings(layer, arch, params["min_spatial"], params["min_channels"], params["max_ops"])
    g = build_dfg(layer, arch, t)
    dims = (layer.OY, layer.OX, layer.C, layer.K)
    cycles_by_size = defaultdict(set)
    for op, idx in enumerate(g.op_idx):
        size = tuple(min(ts, D - i * ts) for i, ts, D in zip(idx, tiling, dims))
        cycles_by_size[size].add(g.op_cycles[op])
    for s in GROUPS[key]:
        d = s["layer"]
        assert (d["R"], d["S"], d["stride"]) == (layer.FY, layer.FX, layer.SY)
        assert cycles_by_size[(d["OY"], d["OX"], d["C"], d["K"])] == {s["scalesim"]["compute_cycles"]}, s["id"]
