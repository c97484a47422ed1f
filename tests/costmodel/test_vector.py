"""The vector unit (costmodel/vector.py): hand-worked costs of the ops between the matmuls, the
memory level their tensors live in, the [vector] table of an accelerator and its errors."""

import copy
import tomllib
from pathlib import Path

import pytest

from costmodel.loopnest.arch import accelerator_from_dict, load_accelerator
from costmodel.vector import (OP_PRIMITIVES, VectorUnit, network_vector_costs, vector_cost,
                              vector_totals)
from costmodel.workload import VECTOR_OPS, Layer, Network, VectorOp

PRESETS = Path(__file__).resolve().parents[2] / "costmodel" / "presets"


def _preset_dict(name: str) -> dict:
    return tomllib.loads((PRESETS / f"{name}.toml").read_text())


def _toy(shared_port: bool) -> dict:
    """A per-PE I/O register file (private: never the vector unit's), a 1000-bit shared buffer (too
    small for the ops below), an input-only buffer (does not serve O), a 1 Mbit shared I/O buffer
    with a 64-bit word, 64 bits/cycle read, 32 bits/cycle write; DRAM. 4 lanes, default energies."""
    return {"name": "toy", "mac_pj": 0.5, "array": {"D1": 4}, "precision": {"I": 8},
            "vector": {"lanes": 4},
            "memory": [
                {"name": "rf", "size_bits": 10**6, "operands": ["I", "O"], "read_pj": 0.1, "write_pj": 0.1,
                 "word_bits": 8, "private_to": "all"},
                {"name": "small", "size_bits": 1000, "operands": ["I", "O"], "read_pj": 2.0, "write_pj": 3.0,
                 "word_bits": 64, "private_to": []},
                {"name": "ibuf", "size_bits": 10**7, "operands": ["I"], "read_pj": 5.0, "write_pj": 5.0,
                 "word_bits": 64, "private_to": []},
                {"name": "big", "size_bits": 10**6, "operands": ["I", "O"], "read_pj": 10.0, "write_pj": 20.0,
                 "word_bits": 64, "read_bw": 64, "write_bw": 32, "shared_port": shared_port, "private_to": []},
                {"name": "dram", "operands": ["W", "I", "O"], "read_pj": 100.0, "write_pj": 100.0,
                 "word_bits": 64, "shared_port": True, "private_to": []},
            ]}


def test_every_op_has_primitives():
    assert set(OP_PRIMITIVES) == set(VECTOR_OPS)
    assert OP_PRIMITIVES["softmax"][:4] == (3, 2, 1, 1)
    assert OP_PRIMITIVES["layernorm"][:4] == (4, 3, 0, 1)
    assert OP_PRIMITIVES["rmsnorm"][:4] == (1, 3, 0, 1)
    assert OP_PRIMITIVES["gelu"][:4] == (2, 6, 1, 0)
    assert OP_PRIMITIVES["silu"][:4] == (1, 1, 2, 0)


def test_default_energies():
    u = VectorUnit(lanes=8)
    # Horowitz FP16: add 0.4 pJ, mul 1.1 pJ; special = 4 mul + 4 add = 4.4 + 1.6 = 6.0 pJ
    assert (u.add_pj, u.mul_pj, u.special_cycles, u.bits) == (0.4, 1.1, 4, 16)
    assert u.special_pj == pytest.approx(4 * u.mul_pj + 4 * u.add_pj)
    assert "Horowitz" in u.source and "estimate" in u.source


def test_softmax_in_the_unified_buffer():
    """A fused group's op (``onchip``): its tensors in the innermost shared level that holds them."""
    acc = load_accelerator("tpu_like")   # [vector] lanes 32, default energies; [precision] I = 8
    c = vector_cost(VectorOp("sm", "softmax", 4096, rows=32, onchip=True), acc)
    # data: read 1 x 4096 x 8 = 32768 bits, write 32768 bits; needs 2 x 32768 = 65536 bits <= the
    # unified buffer's 4194304 (the accumulators serve O only, the weight register W only)
    assert c.memory == "unified_buffer"
    assert (c.read_bits, c.write_bits, c.dram_bits) == (32768, 32768, 0)
    # words of 256 bits: 128 reads + 128 writes, 420.40 pJ each: 256 x 420.40 = 107622.4 pJ
    assert c.memory_pj == pytest.approx(107622.4)
    # shared port, 256 bits/cycle each way: 128 + 128 = 256 cycles
    assert c.transfer_cycles == pytest.approx(256.0)
    # adds 3 x 4096 = 12288, muls 2 x 4096 = 8192, specials 4096 + 32 reciprocals = 4128
    # pJ: 12288 x 0.4 + 8192 x 1.1 + 4128 x 6.0 = 4915.2 + 9011.2 + 24768 = 38694.4
    assert c.compute_pj == pytest.approx(38694.4)
    assert c.energy_pj == pytest.approx(38694.4 + 107622.4)
    # cycles: (12288 + 8192 + 4128 x 4) / 32 = 36992 / 32 = 1156: compute-bound
    assert c.compute_cycles == 1156
    assert c.latency_cycles == 1156.0
    assert c.ops == 12288 + 8192 + 4128


def test_softmax_spilling_to_dram():
    acc = load_accelerator("tpu_like")
    n = 10**8
    c = vector_cost(VectorOp("sm", "softmax", n, rows=10**5, onchip=True), acc)
    # needs 2 x 10^8 x 8 = 1.6e9 bits > 4194304: DRAM; read 8e8 bits, write 8e8 bits
    assert c.memory == "dram"
    assert c.dram_bits == 16 * 10**8
    # words of 128 bits: 6.25e6 reads + 6.25e6 writes, 800 pJ each = 1e10 pJ
    assert c.memory_pj == pytest.approx(1e10)
    # shared port, 128 bits/cycle: 6.25e6 + 6.25e6 = 1.25e7 cycles
    assert c.transfer_cycles == pytest.approx(1.25e7)
    # compute: 3e8 adds + 2e8 muls + (1e8 + 1e5) specials x 4 = 5e8 + 4.004e8 = 9.004e8 lane-cycles
    # / 32 = 28137500 cycles > 1.25e7: still compute-bound
    assert c.compute_cycles == 28137500
    assert c.latency_cycles == 28137500.0
    # pJ: 3e8 x 0.4 + 2e8 x 1.1 + 100100000 x 6.0 = 1.2e8 + 2.2e8 + 6.006e8 = 9.406e8
    assert c.compute_pj == pytest.approx(9.406e8)
    assert c.energy_pj == pytest.approx(9.406e8 + 1e10)


def test_add_of_two_inputs():
    acc = load_accelerator("tpu_like")
    c = vector_cost(VectorOp("res", "add", 1000, inputs=2, bits=16, onchip=True), acc)
    # bits 16 (the op's own): read 2 x 1000 x 16 = 32000, write 16000; needs 48000: unified buffer
    assert c.memory == "unified_buffer" and (c.read_bits, c.write_bits) == (32000, 16000)
    # ceil(32000 / 256) = 125 reads + ceil(16000 / 256) = ceil(62.5) = 63 writes: 188 x 420.40 pJ
    assert c.memory_pj == pytest.approx(188 * 420.40)
    # 1000 adds x 0.4 pJ = 400 pJ; ceil(1000 / 32) = 32 cycles
    assert c.compute_pj == pytest.approx(400.0) and c.compute_cycles == 32
    # shared port: 32000 / 256 + 16000 / 256 = 125 + 62.5 = 187.5 cycles: transfer-bound
    assert c.transfer_cycles == pytest.approx(187.5) and c.latency_cycles == pytest.approx(187.5)


@pytest.mark.parametrize("shared, transfer", [(True, 500.0), (False, 250.0)])
def test_shared_port(shared, transfer):
    acc = accelerator_from_dict(_toy(shared), "toy")
    c = vector_cost(VectorOp("res", "add", 1000, inputs=2, onchip=True), acc)
    # needs 3 x 1000 x 8 = 24000 bits: rf fits but is per PE, small (1000) is too small, ibuf does
    # not serve O: "big". read 16000 bits / 64 = 250 cycles, write 8000 / 32 = 250 cycles:
    # one shared port 250 + 250 = 500, separate ports max(250, 250) = 250
    assert c.memory == "big"
    assert c.transfer_cycles == pytest.approx(transfer)
    # energy: ceil(16000 / 64) = 250 x 10 + ceil(8000 / 64) = 125 x 20 = 5000 pJ; 1000 adds x 0.4
    assert c.memory_pj == pytest.approx(5000.0) and c.compute_pj == pytest.approx(400.0)
    # compute: 1000 adds / 4 lanes = 250 cycles
    assert c.compute_cycles == 250
    assert c.latency_cycles == pytest.approx(max(250, transfer))
    assert c.dram_bits == 0


def test_level_choice():
    acc = accelerator_from_dict(_toy(True), "toy")
    # 100 elements x 1 input: needs 2 x 100 x 8 = 1600 bits > small's 1000: big
    assert vector_cost(VectorOp("a", "gelu", 100, onchip=True), acc).memory == "big"
    # 50 elements: 800 bits fit the small shared buffer (the innermost shared I/O level)
    assert vector_cost(VectorOp("a", "gelu", 50, onchip=True), acc).memory == "small"
    # 10^5 elements x 2 inputs: 2.4e6 bits > big's 1e6: DRAM, read 1.6e6 + write 8e5 bits
    c = vector_cost(VectorOp("a", "mul", 10**5, inputs=2, onchip=True), acc)
    assert c.memory == "dram" and c.dram_bits == 2_400_000


def test_one_home_per_tensor():
    """An op outside a fused group reads and writes where the layers around it put its tensors:
    the outermost level (the loop-nest model's layers read their inputs from and write their
    outputs to DRAM), even when the unified buffer could hold them: the softmax of
    `test_softmax_in_the_unified_buffer` moves 32,768 + 32,768 bits through DRAM, 128-bit words of
    800 pJ: 256 + 256 accesses = 409,600 pJ; 128 bits/cycle on a shared port: 512 cycles."""
    acc = load_accelerator("tpu_like")
    c = vector_cost(VectorOp("sm", "softmax", 4096, rows=32), acc)
    assert c.memory == "dram" and c.dram_bits == 65536
    assert c.memory_pj == pytest.approx(512 * 800.0) and c.transfer_cycles == pytest.approx(512.0)
    assert c.latency_cycles == 1156.0   # still compute-bound
    small = accelerator_from_dict(_toy(True), "toy")
    assert vector_cost(VectorOp("a", "gelu", 50), small).memory == "dram"


def _net() -> Network:
    return Network("tiny", (Layer("fc", K=8, C=8, kind="fc"),),
                   vector_ops=(VectorOp("sm", "softmax", 4096, rows=32, onchip=True),
                               VectorOp("res", "add", 1000, inputs=2, onchip=True)),
                   vector_repeats=(3, 2))


def test_network_rows_and_totals():
    acc = load_accelerator("tpu_like")
    rows = network_vector_costs(_net(), acc)
    assert [(r["name"], r["op"], r["repeat"], r["elements"], r["memory"]) for r in rows] == [
        ("sm", "softmax", 3, 4096, "unified_buffer"), ("res", "add", 2, 1000, "unified_buffer")]
    sm, res = (vector_cost(op, acc) for op in _net().vector_ops)
    t = vector_totals(rows, _net(), acc)
    assert t["costed"] is True and t["not_costed"] == ""
    assert t["energy_pj"] == pytest.approx(3 * sm.energy_pj + 2 * res.energy_pj)
    # softmax 1156 cycles (above); the add at 8 bits: 16000 / 256 + 8000 / 256 = 62.5 + 31.25
    # = 93.75 transfer cycles > ceil(1000 / 32) = 32 compute cycles
    assert t["latency_cycles"] == pytest.approx(3 * 1156 + 2 * 93.75)
    assert t["dram_bits"] == 0


def test_no_vector_unit():
    d = _preset_dict("tpu_like")
    del d["vector"]
    acc = accelerator_from_dict(d, "tpu_like.toml")
    assert acc.vector is None and "vector" not in acc.to_dict()
    with pytest.raises(ValueError, match=r"no vector unit.*\[vector\]"):
        vector_cost(VectorOp("sm", "softmax", 16), acc)
    assert network_vector_costs(_net(), acc) == []
    t = vector_totals([], _net(), acc)
    assert t["costed"] is False and t["energy_pj"] == 0.0
    # 3 x 4096 = 12288 softmax elements, 2 x 1000 = 2000 add elements per inference
    msg = t["not_costed"]
    assert "tiny" in msg and "softmax 12,288 elements" in msg and "add 2,000 elements" in msg
    assert "tpu_like" in msg and "[vector]" in msg


@pytest.mark.parametrize("table, key, value", [
    ({"lanes": 0}, "vector.lanes", "0"),
    ({"lanes": 2.5}, "vector.lanes", "2.5"),
    ({"lanes": True}, "vector.lanes", "True"),
    ({"add_pj": 1.0}, "vector.lanes", "None"),
    ({"lanes": 4, "lanez": 4}, "vector.lanez", "4"),
    ({"lanes": 4, "add_pj": -1}, "vector.add_pj", "-1"),
    ({"lanes": 4, "mul_pj": "x"}, "vector.mul_pj", "'x'"),
    ({"lanes": 4, "special_pj": float("inf")}, "vector.special_pj", "inf"),
    ({"lanes": 4, "special_cycles": 0}, "vector.special_cycles", "0"),
    ({"lanes": 4, "bits": -8}, "vector.bits", "-8"),
    ({"lanes": 4, "source": 3}, "vector.source", "3"),
    (7, "vector", "7"),
])
def test_bad_vector_table(table, key, value):
    d = _preset_dict("tpu_like")
    d["vector"] = table
    with pytest.raises(ValueError) as e:
        accelerator_from_dict(d, "my.toml")
    msg = str(e.value)
    assert msg.startswith("my.toml: ") and f"{key} = {value}" in msg


def test_vector_table_round_trip():
    for name in ("tpu_like", "eyeriss_like", "simba_like"):
        acc = load_accelerator(name)
        assert acc.vector is not None and acc.vector.to_dict()["lanes"] == acc.vector.lanes
        assert accelerator_from_dict(acc.to_dict(), name) == acc
    assert load_accelerator("tpu_like").vector.lanes == 32


def test_repr_unchanged_by_the_vector_table():
    """The repr identifies an accelerator in problem ids and config hashes: [vector] leaves it alone."""
    d = _preset_dict("tpu_like")
    without = copy.deepcopy(d)
    del without["vector"]
    acc = load_accelerator("tpu_like")
    assert repr(acc) == repr(accelerator_from_dict(without, str(PRESETS / "tpu_like.toml")))
    assert "vector" not in repr(acc) and "lanes" not in repr(acc)
