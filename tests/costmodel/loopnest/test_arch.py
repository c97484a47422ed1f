"""Accelerator descriptions: presets as specified, TOML loading and its error messages."""

import copy

import pytest

from costmodel.loopnest.arch import Accelerator, accelerator_from_dict, list_accelerators, load_accelerator
from costmodel.loopnest.mapping import SpatialMapping

# The eyeriss_like table of issue 3: name, bits, operands, read pJ, write pJ, port bits, shared port, per PE
EYERISS = [
    ("rf_64B_A", 512, {"I"}, 1.0, 1.5, 8, False, True),
    ("rf_64B_W", 512, {"W"}, 1.0, 1.5, 8, False, True),
    ("rf_16B", 128, {"O"}, 1.5, 2.0, 24, False, True),
    ("sram_8KB", 65536, {"O"}, 10.0, 15.0, 128, True, False),
    ("sram_64KB", 524288, {"W"}, 20.0, 25.0, 128, False, False),
    ("sram_1M", 8388608, {"I", "O"}, 100.0, 130.0, 384, True, False),
    ("dram", None, {"I", "W", "O"}, 1000.0, 1000.0, 64, True, False),
]


def test_presets_listed_and_load():
    names = list_accelerators()
    assert names == ["eyeriss_like", "simba_like", "tpu_like", "tpu_v1", "llm_ws", "a100", "tpu_v4", "a100_pcie", "h100",
                     "h200", "b200", "mi300x", "l40s", "rtx4090", "rtx_pro_6000", "tpu_v5e", "tpu_v6e"]
    for n in names:
        acc = load_accelerator(n)
        assert isinstance(acc, Accelerator) and acc.name == n
        assert acc.memories[-1].size_bits is None  # an unbounded outermost level (DRAM)
        for op in "WIO":
            top = acc.levels(op)[-1]
            # DRAM on top of every operand, except TPU v1's activations: they live in its unified
            # buffer, its DRAM being the Weight Memory (costmodel/presets/tpu_v1.toml)
            if n == "tpu_v1" and op in "IO":
                assert top.name == "unified_buffer"
            else:
                assert top.size_bits is None


def test_eyeriss_like_exactly_as_specified():
    acc = load_accelerator("eyeriss_like")
    assert acc.array == {"D1": 14, "D2": 12}
    assert acc.mac_pj == 0.5
    assert acc.precisions == {"W": 8, "I": 8, "O": 16, "O_final": 8}
    assert acc.spatial == SpatialMapping({"D1": (("OX", 14),), "D2": (("FY", 3), ("K", 4))})
    assert len(acc.memories) == len(EYERISS)
    for m, (name, bits, ops, r, w, port, shared, per_pe) in zip(acc.memories, EYERISS):
        assert (m.name, m.size_bits, set(m.operands), m.read_pj, m.write_pj) == (name, bits, ops, r, w)
        assert m.word_bits == port and m.read_bw == port and m.write_bw == port
        assert m.shared_port is shared
        assert m.private_to == (("D1", "D2") if per_pe else ())
    assert [m.name for m in acc.levels("I")] == ["rf_64B_A", "sram_1M", "dram"]
    assert [m.name for m in acc.levels("W")] == ["rf_64B_W", "sram_64KB", "dram"]
    assert [m.name for m in acc.levels("O")] == ["rf_16B", "sram_8KB", "sram_1M", "dram"]
    assert acc.pe_count == 168


def test_simba_like_matches_cosa_table_v():
    acc = load_accelerator("simba_like")
    assert acc.pe_count == 4 * 4 * 64
    sizes = {m.name: m.size_bits for m in acc.memories}
    assert sizes["acc_buffer"] == 3 * 1024 * 8
    assert sizes["weight_buffer"] == 32 * 1024 * 8
    assert sizes["input_buffer"] == 8 * 1024 * 8
    assert sizes["global_buffer"] == 128 * 1024 * 8
    assert set(acc.memory("global_buffer").operands) == {"I", "O"}
    assert acc.precisions["O"] == 24


def test_roundtrip_through_dict_and_user_file(tmp_path):
    acc = load_accelerator("eyeriss_like")
    d = acc.to_dict()
    again = accelerator_from_dict(copy.deepcopy(d))
    assert again == acc
    # a user TOML file
    text = (tmp_path / "x.toml")
    lines = ['name = "mine"', "mac_pj = 1.0", "[array]", "D1 = 2", "[spatial]", 'D1 = [["K", 2]]',
             "[[memory]]", 'name = "reg"', "size_kib = 0.0625", 'operands = ["W", "I", "O"]', "read_pj = 1",
             "write_pj = 2", "word_bits = 8", 'private_to = "all"',
             "[[memory]]", 'name = "dram"', 'operands = ["W", "I", "O"]', "read_pj = 100", "write_pj = 100",
             "word_bits = 64", "read_bw = 32"]
    text.write_text("\n".join(lines))
    mine = load_accelerator(text)
    assert mine.memory("reg").size_bits == 512 and mine.memory("reg").private_to == ("D1",)
    assert mine.memory("dram").read_bw == 32 and mine.memory("dram").write_bw == 64


def _base():
    return load_accelerator("eyeriss_like").to_dict()


@pytest.mark.parametrize("change, match", [
    (lambda d: d.pop("mac_pj"), r"mac_pj = None: expected a non-negative number"),
    (lambda d: d.update(array={"D1": 0}), r"array.D1 = 0: expected a positive integer"),
    (lambda d: d.update(colour="red"), r"colour = 'red': expected no such key"),
    (lambda d: d["memory"][0].update(operands=["X"]), r"memory\[0\] \(rf_64B_A\).operands = \['X'\]"),
    (lambda d: d["memory"][1].update(word_bits=-8), r"memory\[1\] \(rf_64B_W\).word_bits = -8: expected a positive integer"),
    (lambda d: d["memory"][2].update(private_to=["D9"]), r"private_to = \['D9'\]"),
    (lambda d: d["memory"][3].update(shared_port="yes"), r"shared_port = 'yes': expected true or false"),
    (lambda d: d["memory"][3].update(size_kib=8), r"either size_bits or size_kib"),
    (lambda d: d.update(precision={"X": 8}), r"precision.X = 8"),
    (lambda d: d.update(spatial={"D1": [["OX", 15]]}), r"fan-out 15 on D1 exceeds its size 14"),
    (lambda d: d.update(spatial={"D1": [["Q", 2]]}), r"unknown loop dimension 'Q'"),
    (lambda d: d["memory"].pop(1) and d["memory"].pop(3) and d["memory"].pop(-1),
     r"no memory serves operand W"),
    (lambda d: d["memory"][5].update(private_to="all"), r"'sram_1M' .* sits above 'sram_8KB'"),
    # per-operand ports: a table names every operand of the memory, each value checked
    (lambda d: d["memory"][5].update(word_bits={"I": 64}),
     r"memory\[5\] \(sram_1M\).word_bits = \{'I': 64\}: expected a number or a table with one value per operand"),
    (lambda d: d["memory"][5].update(word_bits={"I": 64, "O": 0}),
     r"memory\[5\] \(sram_1M\).word_bits.O = 0: expected a positive integer"),
    (lambda d: d["memory"][5].update(read_pj={"I": 1.0, "O": -1}), r"\(sram_1M\).read_pj.O = -1: expected a non-negative"),
    # TOML's nan / inf (every row "infeasible", blamed on the mapper, before they were refused)
    (lambda d: d["memory"][0].update(read_pj=float("nan")), r"\(rf_64B_A\).read_pj = nan: expected a finite non-negative"),
    (lambda d: d["memory"][6].update(write_pj=float("inf")), r"\(dram\).write_pj = inf: expected a finite non-negative"),
    (lambda d: d["memory"][5].update(read_pj={"I": 1.0, "O": float("nan")}), r"\(sram_1M\).read_pj.O = nan: expected a finite"),
    (lambda d: d.update(mac_pj=float("inf")), r"mac_pj = inf: expected a finite non-negative number"),
    (lambda d: d.update(clock_mhz=float("inf")), r"clock_mhz = inf: expected a finite positive number"),
    (lambda d: d["memory"][3].update(read_bw=float("nan")), r"\(sram_8KB\).read_bw = nan: expected a finite positive"),
])
def test_bad_inputs_name_key_and_value(change, match):
    d = _base()
    change(d)
    with pytest.raises(ValueError, match=match) as ei:
        accelerator_from_dict(d, "my.toml")
    assert str(ei.value).startswith("my.toml")


def test_load_errors(tmp_path):
    with pytest.raises(ValueError, match="unknown accelerator 'nope'"):
        load_accelerator("nope")
    bad = tmp_path / "bad.toml"
    bad.write_text("name = ")
    with pytest.raises(ValueError, match="bad.toml: invalid TOML"):
        load_accelerator(bad)


def test_accumulator_table_parse_validate_round_trip():
    from costmodel.loopnest.arch import accelerator_from_dict, load_accelerator
    base = load_accelerator("eyeriss_like").to_dict()
    assert "accumulator" not in base and accelerator_from_dict(base).accumulator_pj is None
    d = dict(base, accumulator={"energy_pj": 0.0})
    a = accelerator_from_dict(d, "x.toml")
    assert a.accumulator_pj == 0.0 and a.to_dict()["accumulator"] == {"energy_pj": 0.0}
    assert accelerator_from_dict(a.to_dict()) == a
    for bad in (-1.0, float("inf"), float("nan"), "x", True):
        with pytest.raises(ValueError, match=r"x.toml: accumulator.energy_pj"):
            accelerator_from_dict(dict(base, accumulator={"energy_pj": bad}), "x.toml")
    with pytest.raises(ValueError, match=r"x.toml: accumulator.size"):
        accelerator_from_dict(dict(base, accumulator={"energy_pj": 1.0, "size": 2}), "x.toml")
    with pytest.raises(ValueError, match=r"x.toml: accumulator = "):
        accelerator_from_dict(dict(base, accumulator=3), "x.toml")


def test_per_operand_ports_parse_repr_round_trip(tmp_path):
    """``word_bits = { I = 512, W = 512, O = 2048 }`` (and the other port keys): each operand its
    own port; the repr and to_dict carry them (other problem ids), the scalar form is unchanged."""
    d = _base()
    sram = d["memory"][5]   # sram_1M: I and O
    scalar = accelerator_from_dict(copy.deepcopy(d))
    sram.update(word_bits={"I": 64, "O": 256}, read_pj={"I": 10.0, "O": 30.0})
    del sram["read_bw"], sram["write_bw"]
    acc = accelerator_from_dict(copy.deepcopy(d))
    m = acc.memory("sram_1M")
    assert m.port("I") == (64, 64.0, 64.0, 10.0, 130.0)   # bandwidths default to the operand's word
    assert m.port("O") == (256, 256.0, 256.0, 30.0, 130.0)
    assert (m.word_bits, m.read_pj, m.read_bw) == (256, 30.0, 256.0)   # the widest, for one-value models
    assert "per_operand=" in repr(acc) and repr(acc) != repr(scalar) and "per_operand" not in repr(scalar)
    out = acc.to_dict()["memory"][5]
    assert out["word_bits"] == {"I": 64, "O": 256} and out["read_pj"] == {"I": 10.0, "O": 30.0}
    assert out["write_pj"] == 130.0 and "per_operand" not in out
    assert accelerator_from_dict(acc.to_dict()) == acc and scalar.to_dict() == _base()
    # a table of equal values is the scalar
    sram.update(word_bits={"I": 384, "O": 384}, read_pj={"I": 100.0, "O": 100.0}, read_bw=384.0, write_bw=384.0)
    same = accelerator_from_dict(copy.deepcopy(d))
    assert same == scalar and repr(same) == repr(scalar) and same.to_dict() == scalar.to_dict()
    # TOML
    f = tmp_path / "p.toml"
    f.write_text('''name = "p"
mac_pj = 1.0
[array]
D1 = 2
[[memory]]
name = "l1"
operands = ["I", "W", "O"]
word_bits = { I = 512, W = 512, O = 2048 }
read_pj = { I = 14.75, W = 14.75, O = 3.6875 }
write_pj = 2.0
''')
    l1 = load_accelerator(f).memory("l1")
    assert [l1.port(op).word_bits for op in "IWO"] == [512, 512, 2048] and l1.port("O").read_pj == 3.6875
