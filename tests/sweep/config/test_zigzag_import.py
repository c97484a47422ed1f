"""`sweep import zigzag`: ZigZag hardware + mapping YAML -> our accelerator TOML (issue 12, item 4).

The YAML is written inline (ZigZag's format, as in zigzag-dse 3.9.1's inputs/hardware/eyeriss_like.yaml);
the zigzag package itself is not needed.
"""

from __future__ import annotations

import dataclasses
import re

import pytest
from typer.testing import CliRunner

from costmodel.loopnest.arch import load_accelerator
from sweep.cli import app
from costmodel.importers.zigzag import ZigzagError, import_zigzag

runner = CliRunner()


def _mem(name, size, r, w, ops, ports, served, extra=""):
    port_txt = ""
    for pname, ptype, bw, alloc in ports:
        port_txt += (f"      - name: {pname}\n        type: {ptype}\n        bandwidth_min: {bw}\n"
                     f"        bandwidth_max: {bw}\n        allocation:\n"
                     + "".join(f"          - {a}\n" for a in alloc))
    return (f"  {name}:\n    size: {size}\n    r_cost: {r}\n    w_cost: {w}\n    area: 0\n    latency: 1\n"
            f"    operands: [{', '.join(ops)}]\n{extra}    ports:\n{port_txt}    served_dimensions: [{', '.join(served)}]\n")


def _rw(op_allocs, bw):
    return [("r_port_1", "read", bw, [a for a in op_allocs if a.endswith(("tl", "th"))]),
            ("w_port_1", "write", bw, [a for a in op_allocs if a.endswith(("fh", "fl"))])]


EYERISS_HW = "name: eyeriss_like\n\nmemories:\n" + "".join([
    _mem("rf_64B_A", 512, 1.0, 1.5, ["I1"], _rw(["I1, tl", "I1, fh"], 8), []),
    _mem("rf_64B_W", 512, 1.0, 1.5, ["I2"], _rw(["I2, tl", "I2, fh"], 8), []),
    _mem("rf_16B", 128, 1.5, 2.0, ["O"], _rw(["O, tl", "O, th", "O, fh", "O, fl"], 24), []),
    _mem("sram_8KB", 65536, 10.0, 15.0, ["O"], [("rw_port_1", "read_write", 128, ["O, fh", "O, tl", "O, fl", "O, th"])],
         ["D1", "D2"]),
    _mem("sram_64KB", 524288, 20, 25, ["I2"], _rw(["I2, tl", "I2, fh"], 128), ["D1", "D2"]),
    _mem("sram_1M", 8388608, 100, 130, ["I1", "O"],
         [("rw_port_1", "read_write", 384, ["I1, fh", "I1, tl", "O, fh", "O, tl", "O, fl", "O, th"])], ["D1", "D2"]),
    _mem("dram", 10000000000, 1000, 1000, ["I1", "I2", "O"],
         [("rw_port_1", "read_write", 64, ["I1, fh", "I1, tl", "I2, fh", "I2, tl", "O, fh", "O, tl", "O, fl", "O, th"])],
         ["D1", "D2"]),
]) + """
operational_array:
  unit_energy: 0.5 # pJ
  unit_area: 0.1
  dimensions: [D1, D2]
  sizes: [14, 12]
"""

EYERISS_MAP = """\
- name: default
  spatial_mapping:
    D1:
      - OX, 14
    D2:
      - FY, 3
      - K, 4
  memory_operand_links:
    O: O
    W: I2
    I: I1
- name: Add
  spatial_mapping:
    D1:
      - G, 14
  memory_operand_links:
    O: O
    W: I2
    I: I1
"""


def _write(tmp_path, hw=EYERISS_HW, mp=EYERISS_MAP):
    h, m = tmp_path / "hw.yaml", tmp_path / "map.yaml"
    h.write_text(hw)
    m.write_text(mp)
    return h, m


def test_eyeriss_round_trip_equals_preset(tmp_path):
    h, m = _write(tmp_path)
    out = tmp_path / "ey.toml"
    res = runner.invoke(app, ["import", "zigzag", "--accelerator", str(h), "--mapping", str(m), "--out", str(out)])
    assert res.exit_code == 0, res.output
    got = load_accelerator(out)
    want = load_accelerator("eyeriss_like")
    for f in dataclasses.fields(want):
        # the preset's hint (max_dims 2) and vector unit are ours: ZigZag's hardware format has neither
        if f.name in ("description", "spatial_hint", "vector"):
            continue
        assert getattr(got, f.name) == getattr(want, f.name), f.name
    # every memory field, one by one (a clearer failure than the tuple comparison above)
    for a, b in zip(got.memories, want.memories, strict=True):
        assert dataclasses.asdict(a) == dataclasses.asdict(b)
    assert "accumulator" not in out.read_text()  # ZigZag's MAC has no accumulator


def test_api_notes_and_operand_links_swapped(tmp_path):
    swapped = EYERISS_MAP.replace("W: I2\n    I: I1", "W: I1\n    I: I2", 1)
    h, m = _write(tmp_path, mp=swapped)
    acc, notes = import_zigzag(h, m, tmp_path / "a.toml")
    assert acc.memory("rf_64B_A").operands == ("W",)
    assert acc.memory("rf_64B_W").operands == ("I",)
    assert any("'Add' not imported" in n for n in notes)
    assert any("dram" in n and "unbounded" in n for n in notes)



def test_wide_port_energy_per_word(tmp_path):
    """ZigZag charges r_cost / w_cost per access of bandwidth_max bits, counted in bandwidth_min-bit
    words (tpu_like's sram_2MB: 64 / 2048): our per-word energy is r_cost x min / max."""
    hw = EYERISS_HW.replace("bandwidth_max: 384", "bandwidth_max: 1536", 1)
    h, m = _write(tmp_path, hw=hw)
    acc, _ = import_zigzag(h, m, tmp_path / "a.toml")
    mem = acc.memory("sram_1M")
    assert (mem.word_bits, mem.read_pj, mem.write_pj) == (384, 25, 32.5)
    assert acc.memory("sram_8KB").read_pj == 10.0  # min == max: r_cost as given

_CORE = ("cores:\n  - core0.yaml\n  - core1.yaml\n")
BAD = [
    # (id, hardware text, mapping text, key named in the message)
    ("missing-size", EYERISS_HW.replace("    size: 128\n", "", 1), EYERISS_MAP, "memories.rf_16B.size"),
    ("missing-operational-array", EYERISS_HW.split("operational_array:")[0], EYERISS_MAP, "operational_array"),
    ("imc", EYERISS_HW.replace("  dimensions: [D1, D2]", "  is_imc: true\n  imc_type: analog\n  dimensions: [D1, D2]"),
     EYERISS_MAP, "operational_array.is_imc"),
    ("imc-type", EYERISS_HW.replace("  dimensions: [D1, D2]", "  imc_type: digital\n  dimensions: [D1, D2]"),
     EYERISS_MAP, "operational_array.imc_type"),
    ("multiple-cores", _CORE + EYERISS_HW, EYERISS_MAP, "cores"),
    ("cacti", EYERISS_HW.replace("    latency: 1\n", "    latency: 1\n    auto_cost_extraction: true\n", 1),
     EYERISS_MAP, "memories.rf_64B_A.auto_cost_extraction"),
    ("link-unknown", EYERISS_HW, EYERISS_MAP.replace("W: I2", "W: I3", 1), "memory_operand_links.W"),
    ("link-duplicate", EYERISS_HW, EYERISS_MAP.replace("W: I2", "W: I1", 1), "memory_operand_links.W"),
    ("link-O", EYERISS_HW, EYERISS_MAP.replace("O: O", "O: I1", 1), "memory_operand_links.O"),
    ("no-default-entry", EYERISS_HW, EYERISS_MAP.replace("name: default", "name: Conv"), "name"),
    ("bad-spatial-dim", EYERISS_HW, EYERISS_MAP.replace("OX, 14", "QQ, 14", 1), "spatial_mapping.D1"),
    ("served-unknown-dim", EYERISS_HW.replace("served_dimensions: [D1, D2]", "served_dimensions: [D1, D7]", 1),
     EYERISS_MAP, "memories.sram_8KB.served_dimensions"),
    ("not-yaml", "name: [unclosed\n", EYERISS_MAP, "file"),
]


@pytest.mark.parametrize("hw,mp,key", [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_yaml_exit_2_names_key_writes_nothing(tmp_path, hw, mp, key):
    h, m = _write(tmp_path, hw, mp)
    out = tmp_path / "out.toml"
    res = runner.invoke(app, ["import", "zigzag", "--accelerator", str(h), "--mapping", str(m), "--out", str(out)])
    assert res.exit_code == 2, res.output
    assert re.search(rf"(^|[\s.(]){re.escape(key)}\b", res.output), res.output
    assert not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["hw.yaml", "map.yaml"]  # no temp file left


def test_existing_out_kept_on_error(tmp_path):
    h, m = _write(tmp_path, EYERISS_HW.replace("  dimensions: [D1, D2]", "  is_imc: true\n  dimensions: [D1, D2]"))
    out = tmp_path / "keep.toml"
    out.write_text("old")
    with pytest.raises(ZigzagError, match="is_imc"):
        import_zigzag(h, m, out)
    assert out.read_text() == "old"
