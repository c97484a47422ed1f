"""Accelerator templates: parameter names, per-value checks, designs (spatial, memories, area)."""

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from costmodel.loopnest.arch import load_accelerator
from costmodel.loopnest.mapping import SpatialMapping
from costmodel.loopnest.physics import PhysicsRangeError
from costmodel.loopnest.template import ArchTemplate, InvalidDesign, UnknownParameter
from costmodel.systolic.area import A_PE_UM2, A_SRAM_UM2_PER_BYTE

PRESETS = ["eyeriss_like", "simba_like", "tpu_like"]
CSV = Path(__file__).resolve().parents[3] / "costmodel" / "data" / "sram_energy_pj_per_bit.csv"


def _e(kib: int) -> float:
    """CACTI pJ/bit at ``kib`` KiB, read from the CSV here."""
    for line in CSV.read_text().splitlines():
        if line and line[0].isdigit() and int(line.split(",")[0]) == kib:
            return float(line.split(",")[1])
    raise KeyError(kib)


@pytest.fixture(scope="module")
def eyeriss():
    return ArchTemplate(load_accelerator("eyeriss_like"))


def test_parameter_names(eyeriss):
    mems = ["rf_64B_A", "rf_64B_W", "rf_16B", "sram_8KB", "sram_64KB", "sram_1M"]
    want = ["array.D1", "array.D2"]
    for m in mems:
        want += [f"memory.{m}.size_bits", f"memory.{m}.size_kib", f"memory.{m}.word_bits"]
    want.append("memory.dram.word_bits")       # unbounded: no size
    want.append("vector.lanes")                # its [vector] unit
    assert eyeriss.parameter_names() == want


def test_template_values(eyeriss):
    assert eyeriss.template_value("array.D1") == 14
    assert eyeriss.template_value("array.D2") == 12
    assert eyeriss.template_value("memory.rf_64B_A.size_bits") == 512
    assert eyeriss.template_value("memory.rf_64B_A.size_kib") == 0.0625
    assert eyeriss.template_value("memory.sram_8KB.size_kib") == 8.0
    assert eyeriss.template_value("memory.sram_1M.size_kib") == 1024.0   # 8388608 bits
    assert eyeriss.template_value("memory.dram.word_bits") == 64
    with pytest.raises(UnknownParameter):
        eyeriss.template_value("memory.dram.size_bits")


@pytest.mark.parametrize("preset", PRESETS)
def test_empty_design_is_the_base(preset):
    base = load_accelerator(preset)
    t = ArchTemplate(base)
    d = t.design({})
    assert d.name == f"{preset}_design"
    assert d.memories == base.memories and d.spatial == base.spatial and d.array == base.array
    assert [(m.read_pj, m.write_pj, m.read_bw, m.write_bw) for m in d.memories] == [
        (m.read_pj, m.write_pj, m.read_bw, m.write_bw) for m in base.memories]
    assert (d.mac_pj, d.precisions, d.clock_mhz, d.accumulator_pj) == (
        base.mac_pj, base.precisions, base.clock_mhz, base.accumulator_pj)
    # every parameter at its template value: the same accelerator
    same = t.design({n: t.template_value(n) for n in t.parameter_names() if not n.endswith(".size_kib")})
    assert repr(same) == repr(d)
    assert t.design({}, name="x").name == "x"


def test_spatial_follows_the_array(eyeriss):
    assert eyeriss.design({"array.D2": 24}).spatial.dims["D2"] == (("FY", 3), ("K", 8))
    assert eyeriss.design({"array.D2": 6}).spatial.dims["D2"] == (("FY", 3), ("K", 2))
    assert eyeriss.design({"array.D2": 7}).spatial.dims["D2"] == (("FY", 3), ("K", 2))   # floor(7/3)
    d = eyeriss.design({"array.D1": 7})
    assert d.spatial.dims == {"D1": (("OX", 7),), "D2": (("FY", 3), ("K", 4))}
    assert d.array == {"D1": 7, "D2": 12}
    with pytest.raises(InvalidDesign, match="spatial does not fit") as ei:
        eyeriss.design({"array.D2": 2})
    assert ei.value.reason == "spatial does not fit"
    simba = ArchTemplate(load_accelerator("simba_like"))
    d = simba.design({"array.D3": 16, "array.D1": 2})
    assert d.spatial == SpatialMapping({"D1": (("K", 2),), "D2": (("C", 4),), "D3": (("C", 16),),
                                        "D4": (("K", 8),)})
    assert d.pe_count == 2 * 4 * 16 * 8


def test_memory_scaling_in_a_design(eyeriss):
    d = eyeriss.design({"memory.sram_64KB.size_kib": 128, "memory.rf_64B_W.size_bits": 1024,
                        "memory.sram_8KB.word_bits": 256})
    s = d.memory("sram_64KB")
    assert s.size_bits == 128 * 8192
    assert s.read_pj == pytest.approx(20 * _e(128) / _e(64), rel=1e-14)
    assert d.memory("rf_64B_W").read_pj == pytest.approx(2 ** 0.5, rel=1e-15)
    w = d.memory("sram_8KB")
    assert (w.read_pj, w.write_pj, w.read_bw, w.write_bw) == (20.0, 30.0, 256.0, 256.0)
    # untouched memories are the base's own objects
    base = eyeriss.base
    assert d.memory("rf_64B_A") is base.memory("rf_64B_A") and d.memory("dram") is base.memory("dram")
    assert base.memory("sram_64KB").size_bits == 64 * 8192   # the base is not modified
    # fractional KiB: 6.5 KiB = 53248 bits, interpolated between rows 6 and 7
    f = eyeriss.design({"memory.sram_8KB.size_kib": 6.5}).memory("sram_8KB")
    assert f.size_bits == 53248
    assert f.read_pj == pytest.approx(10 * (_e(6) + _e(7)) / 2 / _e(8), rel=1e-14)


def test_check_value_types_and_ranges(eyeriss):
    assert eyeriss.check_value("array.D1", 28) == 28
    assert eyeriss.check_value("memory.sram_8KB.size_kib", 6.5) == 53248
    for name, bad in [("array.D1", 0), ("array.D1", 1.5), ("array.D1", 14.0), ("array.D1", True),
                      ("array.D1", "14"), ("memory.rf_64B_W.size_bits", -1),
                      ("memory.rf_64B_W.word_bits", 0), ("memory.sram_8KB.size_kib", 0),
                      ("memory.sram_8KB.size_kib", 6.00001), ("memory.sram_8KB.size_kib", float("nan"))]:
        with pytest.raises(ValueError, match=name.replace(".", r"\.")) as ei:
            eyeriss.check_value(name, bad)
        assert type(ei.value) is ValueError, (name, bad)
    with pytest.raises(PhysicsRangeError, match="2 KiB"):
        eyeriss.check_value("memory.sram_8KB.size_kib", 2)          # SRAM below 4 KiB
    with pytest.raises(PhysicsRangeError, match="2048 KiB"):
        eyeriss.check_value("memory.sram_64KB.size_kib", 2048)      # above 1 MiB
    with pytest.raises(PhysicsRangeError, match="32768 bits"):
        eyeriss.check_value("memory.rf_16B.size_bits", 32768)       # a regfile of 4 KiB
    # sram_1M is 1024 KiB, the top of the SRAM model: any size in 4..1024 KiB
    assert eyeriss.check_value("memory.sram_1M.size_kib", 1024) == 8388608
    assert eyeriss.check_value("memory.sram_1M.size_kib", 256) == 256 * 8192
    with pytest.raises(PhysicsRangeError, match="2048 KiB"):
        eyeriss.check_value("memory.sram_1M.size_kib", 2048)
    # per-value only: a size below the template's word is not checked here
    assert eyeriss.check_value("memory.rf_16B.size_bits", 16) == 16


def test_unknown_parameter_lists_names(eyeriss):
    for bad in ["array.D3", "memory.dram.size_bits", "memory.nope.word_bits", "D1"]:
        with pytest.raises(UnknownParameter, match=r"array\.D1.*memory\.dram\.word_bits"):
            eyeriss.check_value(bad, 1)
        with pytest.raises(UnknownParameter):
            eyeriss.design({bad: 1})


def test_design_errors(eyeriss):
    with pytest.raises(InvalidDesign, match="too small for one word") as ei:
        eyeriss.design({"memory.rf_16B.size_bits": 16})             # word 24
    assert ei.value.reason == "too small for one word"
    with pytest.raises(InvalidDesign) as ei:
        eyeriss.design({"memory.rf_64B_W.word_bits": 1024})         # 512-bit memory
    assert ei.value.reason == "too small for one word"
    assert eyeriss.design({"memory.rf_16B.size_bits": 16, "memory.rf_16B.word_bits": 16}
                          ).memory("rf_16B").size_bits == 16
    with pytest.raises(ValueError, match="not both") as ei:
        eyeriss.design({"memory.sram_8KB.size_kib": 8, "memory.sram_8KB.size_bits": 65536})
    assert type(ei.value) is ValueError
    with pytest.raises(PhysicsRangeError):                           # out of model: not InvalidDesign
        eyeriss.design({"memory.sram_64KB.size_kib": 2048})


def test_area_by_hand(eyeriss):
    def area(pes, rf_bits_per_pe, sram_kib):
        return (pes * A_PE_UM2 + (pes * rf_bits_per_pe / 8 + sram_kib * 1024) * A_SRAM_UM2_PER_BYTE) * 1e-6

    # base: 168 PEs, RFs 512 + 512 + 128 bits per PE, SRAMs 8 + 64 + 1024 KiB
    assert eyeriss.area_mm2({}) == pytest.approx(area(168, 512 + 512 + 128, 8 + 64 + 1024), rel=1e-12)
    # 28 x 24 = 672 PEs, sram_64KB -> 256 KiB
    v = {"array.D1": 28, "array.D2": 24, "memory.sram_64KB.size_kib": 256}
    assert eyeriss.area_mm2(v) == pytest.approx(area(672, 512 + 512 + 128, 8 + 256 + 1024), rel=1e-12)
    d = eyeriss.design(v)
    assert d.spatial.dims == {"D1": (("OX", 28),), "D2": (("FY", 3), ("K", 8))}
    assert d.memory("sram_64KB").read_pj == pytest.approx(20 * _e(256) / _e(64), rel=1e-14)


def test_designs_deterministic_and_repr_stable(eyeriss):
    a = {"array.D1": np.int64(28), "memory.sram_8KB.size_kib": np.float64(16.0), "memory.dram.word_bits": 128}
    b = dict(reversed(list(a.items())))
    da, db = eyeriss.design(a), eyeriss.design(b)
    assert repr(da) == repr(db) and da == db
    assert "np." not in repr(da)
    assert type(da.array["D1"]) is int and type(da.memory("sram_8KB").size_bits) is int


# -- dataflows -------------------------------------------------------------------------------------

def _dataflows(base):
    from costmodel.loopnest.template import Dataflow
    return (Dataflow.from_dict("ws", {"spatial": {"D1": [["C", 14]], "D2": [["K", 12]]}}, base),
            Dataflow.from_dict("rs", {"spatial": {"D1": [["OY", 14]], "D2": [["FY", 3], ["K", 4]]}}, base),
            Dataflow.from_dict("flex", {"spatial_hint": {"D1": ["K", "C"], "D2": ["OX", "OY"], "max_dims": 2}}, base))


def test_dataflow_parameter_sets_spatial_and_hint():
    from costmodel.loopnest.hint import SpatialHint
    base = load_accelerator("eyeriss_like")
    t = ArchTemplate(base, _dataflows(base))
    assert t.parameter_names()[-1] == "dataflow" and t.template_value("dataflow") is None
    assert t.check_value("dataflow", "rs") == "rs"
    # fixed: the dataflow's unrolling, following the array (D1 7: C 14 -> 7; D2 6: K 12 -> 6); no hint
    d = t.design({"dataflow": "ws", "array.D1": 7, "array.D2": 6})
    assert d.spatial == SpatialMapping({"D1": (("C", 7),), "D2": (("K", 6),)}) and d.spatial_hint is None
    # the array dims of the template's sizes keep the dataflow as written
    d = t.design({"dataflow": "rs"})
    assert d.spatial == SpatialMapping({"D1": (("OY", 14),), "D2": (("FY", 3), ("K", 4))})
    # rs on D2 = 24: FY 3 kept, K 24 // 3 = 8
    assert t.design({"dataflow": "rs", "array.D2": 24}).spatial.dims["D2"] == (("FY", 3), ("K", 8))
    # hint: an empty unrolling and the hint, whatever the array
    d = t.design({"dataflow": "flex", "array.D1": 28})
    assert d.spatial == SpatialMapping({}) and d.spatial_hint == SpatialHint(
        {"D1": ("K", "C"), "D2": ("OX", "OY")}, {"D1": 2, "D2": 2}, 0.0)
    # without the parameter: the base's unrolling and hint
    d = t.design({"array.D1": 7})
    assert d.spatial.dims["D1"] == (("OX", 7),) and d.spatial_hint == base.spatial_hint
    # rs on D2 = 2 cannot hold FY 3; ws can (K 2)
    with pytest.raises(InvalidDesign) as ei:
        t.design({"dataflow": "rs", "array.D2": 2})
    assert ei.value.reason == "spatial does not fit"
    assert t.design({"dataflow": "ws", "array.D2": 2}).spatial.dims["D2"] == (("K", 2),)
    with pytest.raises(ValueError, match="expected one of the dataflows"):
        t.design({"dataflow": "os"})
    with pytest.raises(UnknownParameter):
        ArchTemplate(base).design({"dataflow": "ws"})      # no dataflows: no such parameter


@pytest.mark.parametrize("d, key, words", [
    ({}, "dataflows.x", "exactly one of spatial"),
    ({"spatial": {"D1": [["C", 2]]}, "spatial_hint": {"D1": ["K"]}}, "dataflows.x", "exactly one of spatial"),
    ({"spatial": {"D1": [["C", 2]]}, "colour": 1}, "dataflows.x", "exactly one of spatial"),
    ({"spatial": {}}, "dataflows.x.spatial", "non-empty"),
    ({"spatial": {"D1": [["C", 15]]}}, "dataflows.x.spatial", "exceeds its size 14"),
    ({"spatial": {"D3": [["C", 2]]}}, "dataflows.x.spatial", "unknown array dim 'D3'"),
    ({"spatial": {"D1": [["Q", 2]]}}, "dataflows.x.spatial", "unknown loop dimension 'Q'"),
    ({"spatial_hint": {"D3": ["K"]}}, "dataflows.x.spatial_hint", "spatial_hint.D3"),
    ({"spatial_hint": {"D1": ["K", "K"]}}, "dataflows.x.spatial_hint", "distinct loop dims"),
    ({"multicast": {"I": ["D1"]}}, "dataflows.x", "exactly one of spatial"),
    ({"spatial_hint": {"D1": ["K"]}, "multicast": {"W": ["D1"]}}, "dataflows.x.multicast", "the key I only"),
    ({"spatial_hint": {"D1": ["K"]}, "multicast": {"I": ["D3"]}}, "dataflows.x.multicast", "distinct array dims"),
    ({"spatial_hint": {"D1": ["K"]}, "multicast": ["D1"]}, "dataflows.x.multicast", "a table"),
])
def test_bad_dataflows_name_the_key(d, key, words):
    from costmodel.loopnest.template import BadDataflow, Dataflow
    with pytest.raises(BadDataflow) as ei:
        Dataflow.from_dict("x", d, load_accelerator("eyeriss_like"))
    assert ei.value.key == key and words in str(ei.value)


def test_dataflow_round_trips_through_to_dict():
    from costmodel.loopnest.template import Dataflow
    base = load_accelerator("eyeriss_like")
    for df in _dataflows(base):
        assert Dataflow.from_dict(df.name, df.to_dict(), base) == df
    assert _dataflows(base)[0].to_dict() == {"spatial": {"D1": [["C", 14]], "D2": [["K", 12]]}}


def test_dataflow_multicast_replaces_the_templates():
    """A dataflow's ``multicast`` (its interconnect's) becomes the design's; a dataflow without it
    keeps the template's; the definition round-trips and enters the design's identity (to_dict)."""
    from costmodel.loopnest.template import Dataflow
    base = load_accelerator("eyeriss_like")
    assert base.multicast == ()
    rs = Dataflow.from_dict("rs", {"spatial_hint": {"D1": ["OY"], "D2": ["FY", "K"]},
                                   "multicast": {"I": ["D1", "D2"]}}, base)
    ws = _dataflows(base)[0]
    t = ArchTemplate(base, (rs, ws))
    assert t.design({"dataflow": "rs", "array.D1": 7}).multicast == (("I", ("D1", "D2")),)
    assert t.design({"dataflow": "ws"}).multicast == ()
    assert repr(t.design({"dataflow": "ws"})) == repr(ArchTemplate(base, (ws,)).design({"dataflow": "ws"}))
    assert rs.to_dict()["multicast"] == {"I": ["D1", "D2"]} and "multicast" not in ws.to_dict()
    assert Dataflow.from_dict("rs", rs.to_dict(), base) == rs
    with_mc = dataclasses.replace(base, multicast=(("I", ("D1",)),))
    kept = ArchTemplate(with_mc, (ws,)).design({"dataflow": "ws"})
    assert kept.multicast == (("I", ("D1",)),)      # a dataflow without the key keeps the template's
