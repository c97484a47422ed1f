"""`ArchTemplate.design(..., memo=)` (the grid expansion's fast path) builds, on every point of a
grid, the same accelerator, area and error as the plain `design` (repr, hint, DRAM, clock, area
bit for bit; invalid points the same reason and message)."""

import itertools

import pytest

from costmodel.loopnest.arch import load_accelerator
from costmodel.loopnest.physics import design_area_mm2
from costmodel.loopnest.template import ArchTemplate, Dataflow


def _dataflows(base):
    return (Dataflow.from_dict("ws", {"spatial": {"D1": [["C", 14]], "D2": [["K", 12]]}}, base),
            Dataflow.from_dict("rs", {"spatial": {"D1": [["OY", 14]], "D2": [["FY", 3], ["K", 4]]}}, base),
            Dataflow.from_dict("flex", {"spatial_hint": {"D1": ["K", "C"], "D2": ["OX", "OY"], "max_dims": 2}}, base))


def _outcome(template, values, memo):
    try:
        acc = template.design(values, memo=memo) if memo is not None else template.design(values)
        area = design_area_mm2(acc, cache=memo) if memo is not None else design_area_mm2(acc)
        via = template.area_mm2(values, memo=memo) if memo is not None else template.area_mm2(values)
    except ValueError as e:
        return (type(e).__name__, str(e), getattr(e, "reason", None))
    return (repr(acc), repr(acc.spatial), repr(acc.spatial_hint), acc.dram, repr(acc.clock_mhz), acc.tech,
            area.hex(), via.hex(), [repr(m) for m in acc.memories])


GRIDS = {
    "eyeriss": ("eyeriss_like", True, {
        "array.D1": [2, 7, 14, 28],
        "array.D2": [2, 6, 12, 24],
        "memory.rf_64B_W.size_bits": [4, 128, 512],          # 4 bits: too small for one word
        "memory.rf_64B_W.word_bits": [8, 16],
        "memory.sram_64KB.size_kib": [8, 64.0, 256],
        "memory.dram.word_bits": [64, 128],
        "dataflow": ["ws", "rs", "flex"],                      # rs on D2 = 2: spatial does not fit
    }),
    "llm_ws": ("llm_ws", False, {
        "array.D1": [64, 128],
        "memory.accumulators.size_kib": [1024, 4096],
        "memory.unified_buffer.size_kib": [1024, 16384],
        "memory.unified_buffer.word_bits": [512, 1024],
        "dram": ["lpddr5", "hbm2e", "hbm3"],
        "dram_units": [1, 2],
        "clock_mhz": [700, 1000.0, 1400],
    }),
}


@pytest.mark.parametrize("which", sorted(GRIDS))
def test_memo_designs_equal_plain_designs_on_a_grid(which):
    preset, dataflows, grid = GRIDS[which]
    base = load_accelerator(preset)
    t = ArchTemplate(base, _dataflows(base) if dataflows else ())
    memo: dict = {}
    names = list(grid)
    reasons = set()
    n = 0
    for combo in itertools.product(*grid.values()):
        values = dict(zip(names, combo))
        want = _outcome(t, values, None)
        assert _outcome(t, values, memo) == want, values
        if len(want) == 3:
            reasons.add(want[2])
        n += 1
    # a second pass over the filled memo: still the same
    for combo in itertools.islice(itertools.product(*grid.values()), 0, None, 7):
        values = dict(zip(names, combo))
        assert _outcome(t, values, memo) == _outcome(t, values, None), values
    if which == "eyeriss":
        assert {"too small for one word", "spatial does not fit"} <= reasons
    # the memo grows with the distinct values, not with the designs
    assert len(memo) < n / 4


def test_memo_keeps_bool_apart_from_int_and_refuses_another_template():
    t = ArchTemplate(load_accelerator("eyeriss_like"))
    memo: dict = {}
    t.design({"array.D1": 1}, memo=memo)
    with pytest.raises(ValueError, match="positive integer"):
        t.design({"array.D1": True}, memo=memo)
    with pytest.raises(ValueError, match="positive integer"):
        t.design({"array.D1": [1]}, memo=memo)                 # unhashable: checked without the memo
    with pytest.raises(ValueError, match="another template"):
        ArchTemplate(load_accelerator("eyeriss_like")).design({"array.D1": 1}, memo=memo)
