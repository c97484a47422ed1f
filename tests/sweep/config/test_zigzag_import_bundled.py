"""`sweep import zigzag` on every bundled ZigZag 3.9.1 input (issue 21, items 1, 2 and 6).

The YAML files are copies of ``zigzag-dse==3.9.1``'s ``inputs/hardware`` and ``inputs/mapping``
(MIT, ``tests/data/zigzag/inputs/README.md``), so this runs without ZigZag. Every expected value
below is read off those YAML files by hand (array sizes, ``spatial_mapping`` strings,
``spatial_mapping_hint`` lists, ``r_cost x bandwidth_min / bandwidth_max``), or follows ZigZag's
rules stated in ``costmodel/importers/zigzag.py``: a fixed factor above its array dim is reduced to the
dim's size, an array dim without a hint entry may unroll every loop dim, a partially fixed
mapping pins the fixed dims' loop dims.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from costmodel.loopnest.arch import load_accelerator
from sweep.cli import app
from costmodel.importers.zigzag import ZigzagError, import_zigzag

INPUTS = Path(__file__).resolve().parents[2] / "data" / "zigzag" / "inputs"
ALL = ["B", "K", "C", "OY", "OX", "FY", "FX", "G"]
runner = CliRunner()

ARRAYS = {
    "ascend_like": {"D1": 16, "D2": 16, "D3": 2, "D4": 2},
    "edge_tpu_like": {"D1": 8, "D2": 8, "D3": 4, "D4": 4},
    "eyeriss_like": {"D1": 14, "D2": 12},
    "gemm_l1": {"D1": 8, "D2": 8, "D3": 8},
    "gemm_l1_l3": {"D1": 8, "D2": 8, "D3": 8},
    "generic_array_cacti": {"D1": 256, "D2": 256},
    "meta_prototype": {"D1": 32, "D2": 2, "D3": 4, "D4": 4},
    "tesla_npu_like": {"D1": 32, "D2": 32, "D3": 4},
    "tpu_like": {"D1": 32, "D2": 32},
}
_DEFAULT = {"D1": [("K", 32)], "D2": [("C", 32)]}  # mapping/default.yaml

# (hardware, mapping, expected [spatial], expected [spatial_hint] or None)
CASES = [
    ("ascend_like", "ascend_like", {"D1": [("K", 16)], "D2": [("C", 16)], "D3": [("OX", 2)], "D4": [("OY", 2)]}, None),
    ("ascend_like", "ascend_like_mixed",
     {"D1": [("K", 16)], "D2": [("C", 4), ("FX", 3)], "D3": [("OX", 2)], "D4": [("OY", 2)]}, None),
    ("edge_tpu_like", "edge_tpu_like", {"D1": [("K", 8)], "D2": [("C", 8)], "D3": [("OX", 4)], "D4": [("OY", 4)]}, None),
    ("edge_tpu_like", "edge_tpu_like_mixed",
     {"D1": [("K", 8)], "D2": [("C", 2), ("FX", 2), ("FY", 2)], "D3": [("OX", 2), ("OY", 2)],
      "D4": [("OX", 2), ("OY", 2)]},
     {"D1": ["K"], "D2": ["C", "FX", "FY"], "D3": ["OX", "OY"], "D4": ["OX", "OY"]}),
    # default.yaml's K 32 / C 32 reduced to the array dims' sizes, as ZigZag does
    ("eyeriss_like", "default", {"D1": [("K", 14)], "D2": [("C", 12)]}, None),
    ("gemm_l1", "default", {"D1": [("K", 8)], "D2": [("C", 8)]}, None),
    ("gemm_l1_l3", "default", {"D1": [("K", 8)], "D2": [("C", 8)]}, None),
    ("generic_array_cacti", "default", _DEFAULT, None),
    ("meta_prototype", "meta_prototype_like",
     {"D1": [("K", 32)], "D2": [("C", 2)], "D3": [("OX", 4)], "D4": [("OY", 4)]}, None),
    # D2 left to the hint [C]; the fixed D1, D3, D4 pinned to their loop dims (two at once on D3, D4)
    ("meta_prototype", "meta_prototype_like_mixed",
     {"D1": [("K", 32)], "D3": [("OX", 2), ("OY", 2)], "D4": [("OX", 2), ("OY", 2)]},
     {"D1": ["K"], "D2": ["C"], "D3": ["OX", "OY"], "D4": ["OX", "OY"], "max_dims": {"D3": 2, "D4": 2}}),
    ("tesla_npu_like", "tesla_npu_like", {"D1": [("K", 32)], "D2": [("OX", 8)], "D3": [("OY", 4)]}, None),
    # hint only; D3 has no entry: every loop dim (ZigZag's complete_with_defaults)
    ("tesla_npu_like", "tesla_npu_like_mixed", {}, {"D1": ["K"], "D2": ["OX", "OY"], "D3": ALL}),
    ("tpu_like", "tpu_like", _DEFAULT, None),
    # the hint's D3 and D4 name dims the 2-D array does not have: dropped, as ZigZag never reads them
    ("tpu_like", "tpu_like_mixed", {"D1": [("K", 32)], "D2": [("C", 2), ("FX", 3), ("FY", 3)]},
     {"D1": ["K"], "D2": ["C", "FX", "FY"]}),
]
# every hardware with default.yaml too (no hint)
CASES += [(h, "default", {a: [(d, min(f, n))] for (a, [(d, f)]), n in zip(_DEFAULT.items(), ARRAYS[h].values())}, None)
          for h in ARRAYS if not any(c[0] == h and c[1] == "default" for c in CASES)]


def _import(tmp_path, hw: str, mp: str | Path):
    mpath = mp if isinstance(mp, Path) else INPUTS / "mapping" / f"{mp}.yaml"
    return import_zigzag(INPUTS / "hardware" / f"{hw}.yaml", mpath, tmp_path / f"{hw}.toml")


@pytest.mark.parametrize("hw,mp,spatial,hint", CASES, ids=[f"{c[0]}+{c[1]}" for c in CASES])
def test_bundled_pair_imports(tmp_path, hw, mp, spatial, hint):
    acc, _ = _import(tmp_path, hw, mp)
    assert dict(acc.array) == ARRAYS[hw]
    assert acc.spatial.to_dict() == {a: [[d, f] for d, f in v] for a, v in spatial.items()}
    assert (acc.spatial_hint.to_dict() if acc.spatial_hint else None) == hint
    assert acc.precisions == {"W": 8, "I": 8, "O": 16, "O_final": 8}
    again = load_accelerator(tmp_path / f"{hw}.toml")  # the written file reads back the same
    assert again.spatial_hint == acc.spatial_hint and again.spatial == acc.spatial


@pytest.mark.parametrize("hw", list(ARRAYS))
def test_bundled_hardware_with_hint_only(tmp_path, hw):
    """Every bundled non-IMC array with a hint-only mapping (D1 may unroll K or C, D2 OX; the other
    dims no entry, i.e. every loop dim): no [spatial], the hint as written plus the defaults."""
    mp = tmp_path / "hint.yaml"
    mp.write_text("- name: default\n  spatial_mapping_hint:\n    D1: [K, C]\n    D2: [OX]\n"
                  "  memory_operand_links: {O: O, W: I2, I: I1}\n")
    acc, _ = _import(tmp_path, hw, mp)
    assert acc.spatial.to_dict() == {}
    want = {"D1": ["K", "C"], "D2": ["OX"], **{a: ALL for a in ARRAYS[hw] if a not in ("D1", "D2")}}
    assert acc.spatial_hint.to_dict() == want
    text = (tmp_path / f"{hw}.toml").read_text()
    assert "[spatial_hint]" in text and "\n[spatial]\n" not in text


def test_memories_by_hand(tmp_path):
    """edge_tpu_like: sram_2MB r_cost 416.16 / w_cost 378.4 per 2048-bit access, 64-bit words:
    13.005 / 11.825 pJ per word; rf_2B served [D2] -> private to D1, D3, D4; rf_1B served
    [D3, D4] -> private to D1, D2."""
    acc, _ = _import(tmp_path, "edge_tpu_like", "edge_tpu_like")
    assert [m.name for m in acc.memories] == ["rf_1B", "rf_2B", "sram_32KB", "sram_2MB", "dram"]
    s = acc.memory("sram_2MB")
    assert (s.word_bits, s.size_bits, s.operands) == (64, 16777216, ("I", "O"))
    assert s.read_pj == pytest.approx(13.005) and s.write_pj == pytest.approx(11.825)
    assert acc.memory("rf_2B").private_to == ("D1", "D3", "D4")
    assert acc.memory("rf_1B").private_to == ("D1", "D2")


def test_input_precision_read_not_imc(tmp_path):
    """ascend_like, gemm_l1 and gemm_l1_l3 carry ``input_precision: [8, 8]`` (ZigZag reads it only
    for IMC arrays): imported, no note since it equals I 8, W 8; a different one is noted."""
    acc, notes = _import(tmp_path, "ascend_like", "ascend_like")
    assert acc.precisions["W"] == 8 and not any("input_precision" in n for n in notes)
    hw = tmp_path / "hw.yaml"
    hw.write_text((INPUTS / "hardware" / "ascend_like.yaml").read_text().replace("input_precision: [8, 8]",
                                                                                "input_precision: [4, 8]"))
    _, notes = import_zigzag(hw, INPUTS / "mapping" / "ascend_like.yaml", tmp_path / "a.toml")
    assert any("input_precision [4, 8]" in n and "I 8" in n for n in notes)


def test_ascend_dram_one_instance(tmp_path):
    """ascend_like's dram serves only [D1, D2] (4 instances over D3 x D4 in ZigZag) above the
    shared sram_1MB_W: written as one instance, with a note."""
    acc, notes = _import(tmp_path, "ascend_like", "ascend_like")
    assert acc.memory("dram").private_to == ()
    assert any("dram" in n and "4 instances" in n for n in notes)


def test_force_double_buffering_noted_capacity_kept(tmp_path):
    acc, notes = _import(tmp_path, "gemm_l1_l3", "default")
    assert acc.memory("l1").size_bits == 943718
    assert any("force_double_buffering" in n for n in notes)


BAD = [
    # (id, hardware, mapping (name or text), key named in the message)
    ("aimc", "aimc", "default_imc", "operational_array.is_imc"),
    ("dimc", "dimc", "default_imc", "operational_array.is_imc"),
    ("gemm-loop-dims", "gemm_l1", "gemm_l1", "spatial_mapping.D1"),
    ("hint-unknown-loop-dim", "tpu_like",
     "- name: default\n  spatial_mapping_hint:\n    D1: [K, QQ]\n", "spatial_mapping_hint.D1"),
    ("hint-not-a-list", "tpu_like", "- name: default\n  spatial_mapping_hint:\n    D1: K\n", "spatial_mapping_hint.D1"),
    ("neither-spatial-nor-hint", "tpu_like", "- name: default\n  memory_operand_links: {O: O, W: I2, I: I1}\n",
     "spatial_mapping"),
    ("mixed-over-array", "tpu_like", "- name: default\n  spatial_mapping:\n    D1: [\"K, 16\", \"C, 4\"]\n",
     "spatial_mapping.D1"),
]


@pytest.mark.parametrize("hw,mp,key", [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_refused_exit_2_names_key(tmp_path, hw, mp, key):
    if "\n" in mp:
        (tmp_path / "map.yaml").write_text(mp)
        mpath = tmp_path / "map.yaml"
    else:
        mpath = INPUTS / "mapping" / f"{mp}.yaml"
    out = tmp_path / "out.toml"
    res = runner.invoke(app, ["import", "zigzag", "--accelerator", str(INPUTS / "hardware" / f"{hw}.yaml"),
                              "--mapping", str(mpath), "--out", str(out)])
    assert res.exit_code == 2, res.output
    assert key in res.output, res.output
    assert not out.exists()
    with pytest.raises(ZigzagError, match=key.replace(".", r"\.")):
        import_zigzag(INPUTS / "hardware" / f"{hw}.yaml", mpath, out)
    assert isinstance(ZigzagError("x", "k", 1, "m"), ValueError)


def _zigzag_python() -> str | None:
    py = os.environ.get("ZIGZAG_PYTHON", "/tmp/zz/bin/python")
    return py if shutil.which(py) or Path(py).is_file() else None


@pytest.mark.skipif(_zigzag_python() is None, reason="ZigZag's venv (ZIGZAG_PYTHON or /tmp/zz) is absent")
def test_copies_equal_installed_zigzag():
    p = subprocess.run([_zigzag_python(), "-c", "import zigzag, pathlib; print(pathlib.Path(zigzag.__file__).parent)"],
                       capture_output=True, text=True, check=False)
    if p.returncode != 0:
        pytest.skip("zigzag not importable there")
    pkg = Path(p.stdout.strip()) / "inputs"
    copies = sorted((INPUTS / "hardware").glob("*.yaml")) + sorted((INPUTS / "mapping").glob("*.yaml"))
    assert len(copies) == 11 + 14
    for f in copies:
        assert f.read_bytes() == (pkg / f.parent.name / f.name).read_bytes(), f.name
    bundled = {f.stem for f in (pkg / "hardware").glob("*.yaml")}
    assert bundled == set(ARRAYS) | {"aimc", "dimc"}  # every non-IMC one is tested above


def _compare_script():
    import importlib.util
    path = Path(__file__).resolve().parents[3] / "scripts" / "compare_zigzag.py"
    spec = importlib.util.spec_from_file_location("compare_zigzag", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_compare_script_hint_only_yaml_and_spatial(tmp_path):
    """``compare_zigzag.py --hint-only``: tpu_like_mixed's default entry without its fixed mapping
    imports as a hint-only accelerator (D1: K, D2: C|FX|FY); tpu_like.yaml (no hint) gets one made of
    its fixed loop dims. ZigZag's per-layer unrolling record ({D1: {K: 32.0}, D2: {C: 3.0, FX: 1.0}})
    becomes ours without factor-1 entries."""
    cz = _compare_script()
    acc, _ = _import(tmp_path, "tpu_like", cz.hint_only_yaml(INPUTS / "mapping" / "tpu_like_mixed.yaml", tmp_path))
    assert acc.spatial.to_dict() == {} and acc.spatial_hint.to_dict() == {"D1": ["K"], "D2": ["C", "FX", "FY"]}
    acc, _ = _import(tmp_path, "tpu_like", cz.hint_only_yaml(INPUTS / "mapping" / "tpu_like.yaml", tmp_path))
    assert acc.spatial_hint.to_dict() == {"D1": ["K"], "D2": ["C"]} and cz.own_spatial(acc)
    sm = cz.zigzag_spatial({"spatial": {"D1": {"K": 32.0}, "D2": {"C": 3.0, "FX": 1.0}}})
    assert sm.to_dict() == {"D1": [["K", 32]], "D2": [["C", 3]]}
