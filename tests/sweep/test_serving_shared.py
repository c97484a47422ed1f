"""Cost tables shared by the designs of one chip (``[serving] mappings = "shared"``,
`sweep.serving.shared_mappings`, `sweep.engine.serving_tasks`).

The oracle for a re-costed layer is the loop-nest model's own evaluation of a mapping
(`costmodel.loopnest.reference.evaluate`) of the mapping a mapper found on a reference design,
and the mapper's own figures on the reference itself: re-costing a mapping on the design it was
found on must give the mapper's figures back. The campaign checks: one task per chip, a chip of
one design gives exactly the rows its own mapping gives, and the rows do not depend on how the
designs are grouped into tasks."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from costmodel.loopnest.mapping import Mapping
from costmodel.loopnest.reference import evaluate
from costmodel.serving import Deployment, dense_part
from sweep.commands.map_eval import map_layer
from sweep.config.designspace import parse_design_space
from sweep.engine import serving_tasks
from sweep.engine.runner import run_campaign
from sweep.engine.serving_tasks import chip_view, dram_bits_per_cycle, reference_designs
from sweep.engine.serving_tasks import ServingDesign
from sweep.engine.store import Store
from sweep.kinds import load_campaign
from sweep.serving import shared_mappings
from sweep.serving.shared_mappings import SharedMappings


def _designs(grid: dict) -> list:
    """The llm_ws designs of ``grid``, as accelerators named by their values."""
    def bad(*a):
        raise AssertionError(a)
    sp = parse_design_space({"template": "llm_ws", "grid": grid}, Path("."), bad)
    out = []
    for i in range(len(sp)):
        v = sp.point(i)
        out.append(sp.template.design(v, name="_".join(str(v[k]) for k in sorted(v))))
    return out


@pytest.fixture(scope="module")
def chip():
    """One chip (128 x 128, the template's buffers) with four memory systems and two clocks."""
    return _designs({"dram": ["hbm2e", "hbm3"], "dram_units": [1, 2], "clock_mhz": [1000.0, 1400.0]})


def test_designs_of_one_chip_share_a_view_and_the_dram_orders_the_references(chip):
    other = _designs({"array.D1": [256], "memory.unified_buffer.word_bits": [2048]})[0]
    views = {chip_view(a.to_dict()) for a in chip}
    assert len(views) == 1
    assert chip_view(other.to_dict()) not in views
    # bits per cycle: units x GB/s x 8 / clock (hbm2e 409.6 GB/s, hbm3 819.2 GB/s a stack)
    by_name = {a.name: dram_bits_per_cycle(a.to_dict()) for a in chip}
    assert by_name["1000.0_hbm2e_1"] == pytest.approx(409.6e9 * 8 / 1e9)
    assert by_name["1400.0_hbm3_2"] == pytest.approx(2 * 819.2e9 * 8 / 1.4e9)
    designs = [ServingDesign.of(a.name, a, source="template") for a in chip]
    refs = reference_designs([*designs, ServingDesign.of(other.name, other)])
    slow, fast = refs[designs[0].design_id]
    assert slow.label == "1400.0_hbm2e_1"           # 2340.6 bits per cycle, the least
    assert fast.label == "1000.0_hbm3_2"            # 13107.2, the most
    assert all(refs[d.design_id] == (slow, fast) for d in designs)
    assert [r.label for r in refs[ServingDesign.of(other.name, other).design_id]] == [other.name]


@pytest.fixture(scope="module")
def layer():
    """Llama-3.2-1B's q_proj at 64 tokens: small enough to map in a second."""
    return dense_part(Deployment("llama3_2_1b"), 64).layers[0]


def test_a_mapping_recosted_on_its_own_design_gives_the_mappers_figures(chip, layer):
    ref = chip[0]
    own = map_layer(layer, ref, "salsa", "latency", 0, None)
    got = SharedMappings(ref, [ref], "salsa", "latency", 0).get(layer)
    assert got["latency_cycles"] == pytest.approx(own["latency_cycles"], rel=1e-12)
    assert got["energy_pj"] == pytest.approx(own["energy_pj"], rel=1e-12)
    assert got["reference"] == ref.name


def test_a_design_takes_the_faster_reference_mapping_on_itself(chip, layer):
    slow, fast = chip[4], chip[3]           # 1400 MHz hbm2e x1 and 1000 MHz hbm3 x2
    design = chip[2]                        # 1000 MHz hbm3 x1: neither
    cands = []
    for r in (slow, fast):
        m = map_layer(layer, r, "salsa", "latency", 0, None)["mapping"]
        cands.append(evaluate(layer, design, Mapping.from_dict(m)).latency_cycles)
    got = SharedMappings(design, [slow, fast], "salsa", "latency", 0).get(layer)
    assert got["latency_cycles"] == pytest.approx(min(cands), rel=1e-12)
    # a reference is at least as fast as its own mapping alone
    own = map_layer(layer, slow, "salsa", "latency", 0, None)["latency_cycles"]
    assert SharedMappings(slow, [slow, fast], "salsa", "latency", 0).get(layer)["latency_cycles"] <= own


def test_a_reference_is_mapped_once_per_process(chip, layer, monkeypatch):
    import sweep.commands.map_eval as me
    shared_mappings.clear_kept()
    calls = []
    real = me.map_layer
    monkeypatch.setattr(me, "map_layer", lambda *a, **k: calls.append(a[1].name) or real(*a, **k))
    for d in chip:
        SharedMappings(d, [chip[4], chip[3]], "salsa", "latency", 0).get(layer)
    assert sorted(calls) == sorted([chip[4].name, chip[3].name])


GRIDS = {"tokens": [1, 8, 64, 512, 2048], "seqs": [1, 64, 256], "contexts": [1, 1024, 131072],
         "chunk_q": [2, 512, 2048], "chunk_p": [0, 1024, 131070]}

CAMPAIGN = """
name = "serving_shared"
output = "OUT"
seeds = [0]

[architectures]
kind = "serving"
template = "llm_ws"

[architectures.grid]
array.D1 = [128, 256]
memory.unified_buffer.word_bits = [1024, 2048]
dram = ["hbm2e", "hbm3"]
dram_units = [1, 2]
constraints = ["memory.unified_buffer.word_bits == 8 * array.D1", "array.D1 * dram_units <= 256"]

[serving]
network = "llama3_2_1b"
trace = "azure_conv_2023"
drop_long_prompts = true
requests = 150
rates = [4]
slo_ttft = 2.0
slo_tpot = 0.1
goodput = true
mappings = "MAPPINGS"

[serving.scheduler]
max_num_seqs = 64
max_num_batched_tokens = 2048

[serving.grids]
""" + "\n".join(f"{k} = {v}" for k, v in GRIDS.items()) + "\n"

TIMES = ["sim_s", "table_build_s", "wall_s", "code_version", "config_hash", "task_id"]


def _run(tmp: Path, mappings: str, out: str, grid: str | None = None):
    text = CAMPAIGN.replace("MAPPINGS", mappings).replace("OUT", (tmp / out).as_posix())
    if grid is not None:
        text = text.replace('dram = ["hbm2e", "hbm3"]\ndram_units = [1, 2]', grid)
    path = tmp / f"{out}.toml"
    path.write_text(text)
    c = load_campaign(path)
    s = run_campaign(c, executor="local")
    st = Store(c.output)
    return c, s, {t: st.read(t).drop(columns=TIMES, errors="ignore").sort_values(
        [k for k in ("design", "rate") if k in st.read(t)]).reset_index(drop=True) for t in ("rows", "rates")}


@pytest.fixture(scope="module")
def shared(tmp_path_factory):
    return _run(tmp_path_factory.mktemp("shared"), "shared", "out")


def test_a_task_per_chip_every_design_a_row_naming_its_references(shared):
    c, s, got = shared
    rows = got["rows"]
    # chip 128: hbm2e x1, x2, hbm3 x1, x2; chip 256: hbm2e x1, hbm3 x1 (the constraint)
    assert len(rows) == 6 and (rows["status"] == "ok").all()
    assert s.tasks_total == 2
    by = {r.design_params: r for r in rows.itertuples()}
    small = [p for p in by if "array.D1=128" in p]
    assert len(small) == 4
    refs = {by[p].mapping_refs for p in small}
    assert len(refs) == 1
    slow, fast = next(iter(refs)).split()
    label = {r.design: p for p, r in by.items()}
    assert "dram=hbm2e dram_units=1" in label[slow] and "dram=hbm3 dram_units=2" in label[fast]


def test_a_chip_of_one_memory_system_gives_its_own_rows(shared, tmp_path):
    _, _, got = shared
    grid = 'dram = ["hbm3"]\ndram_units = [1]'
    _, _, own = _run(tmp_path, "own", "own", grid)
    _, _, one = _run(tmp_path, "shared", "one", grid)
    # with one DRAM per chip every design is its chip's only reference: its own mappings
    cols = [c for c in own["rows"] if c not in ("mapping_refs",)]
    pd.testing.assert_frame_equal(one["rows"][cols], own["rows"][cols])
    pd.testing.assert_frame_equal(one["rates"], own["rates"])


def test_rows_do_not_depend_on_how_designs_are_grouped(shared, tmp_path, monkeypatch):
    _, _, got = shared
    monkeypatch.setattr(serving_tasks, "GROUP_DESIGNS", 1)
    shared_mappings.clear_kept()
    _, s, again = _run(tmp_path, "shared", "again")
    assert s.tasks_total == 6
    pd.testing.assert_frame_equal(again["rows"], got["rows"])
    pd.testing.assert_frame_equal(again["rates"], got["rates"])
