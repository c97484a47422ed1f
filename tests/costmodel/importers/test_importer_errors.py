"""The importers' errors: one root (`InputFormatError`, a ValueError) and one subclass per format,
each raised by its reader with the file and the place named; none of them is sweep's (the CLI maps
a ZigZag error to its CampaignError, exit 2, with the same text: tests/sweep/config)."""

from __future__ import annotations

import pytest

from costmodel.importers import InputFormatError, OnnxError, ZigzagError, ZooCsvError
from costmodel.importers.onnx import read_onnx
from costmodel.importers.zigzag import zigzag_to_dict
from costmodel.importers.zoo_csv import read_network_csv
from costmodel.zoo import load_network_file


@pytest.mark.parametrize("cls", [ZooCsvError, OnnxError, ZigzagError])
def test_one_root_a_value_error(cls):
    assert issubclass(cls, InputFormatError) and issubclass(cls, ValueError)
    assert not any(c.__module__.startswith("sweep") for c in cls.__mro__)


def test_zoo_csv_error_names_file_line_column(tmp_path):
    p = tmp_path / "n.csv"
    p.write_text("name,K,C,OY,OX,FY,FX,B,G,SY,SX,PY,PX,kind\nx,abc,4,2,2,1,1,1,1,1,1,0,0,conv\n")
    with pytest.raises(ZooCsvError, match=r"n\.csv:2: column 2 \('K'\): not an integer: 'abc'"):
        read_network_csv(p)
    with pytest.raises(ZooCsvError, match="cannot read"):
        load_network_file(tmp_path / "missing.csv")


def test_onnx_error_names_file(tmp_path):
    junk = tmp_path / "junk.onnx"
    junk.write_bytes(b"not onnx")
    with pytest.raises(OnnxError, match=r"junk\.onnx: not an ONNX model"):
        read_onnx(junk)


def test_zigzag_error_carries_key_and_value(tmp_path):
    hw, mp = tmp_path / "hw.yaml", tmp_path / "map.yaml"
    hw.write_text("name: x\ncores: [a.yaml]\n")
    mp.write_text("- name: default\n")
    with pytest.raises(ZigzagError) as e:
        zigzag_to_dict(hw, mp)
    assert (e.value.source, e.value.key, e.value.value) == (str(hw), "cores", "list")
    assert str(e.value) == f"{hw}: cores = 'list': {e.value.message}" and "several cores" in e.value.message
