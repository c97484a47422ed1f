"""The one TOML writer (`costmodel.importers.toml_out`): what it writes reads back with `tomllib` to
what was given, for accelerators (presets and every bundled ZigZag import), architecture-search
design files, `sweep tune`'s best_params.toml and arbitrary values (Hypothesis), strings with
quotes, backslashes, control characters and unicode included; and single values on one line are
the bytes `sweep map --param` commands carried before (ASCII values, `toml_literal`)."""

from __future__ import annotations

import json
import math
import tomllib
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from costmodel.importers import toml_out
from costmodel.importers.zigzag import zigzag_to_dict
from costmodel.loopnest.arch import accelerator_from_dict, load_accelerator
from paths import DATA, REPO

TRICKY = ['plain', 'with "quotes"', "back\\slash \\n not a newline", "tab\there", "new\nline", "cr\r",
          "unicode µm² — é ≤ 中文 🚀", "ctrl \x00\x01\x1f del \x7f", "'single' and \"\"\"triple\"\"\"", "",
          "# not a comment", "key = value", "[not.a.table]", "[[nor.aot]]", ",\n]", "[\n    "]


def _no_none(v):
    if isinstance(v, dict):
        return {k: _no_none(x) for k, x in v.items() if x is not None}
    if isinstance(v, (list, tuple)):
        return [_no_none(x) for x in v]
    return v


def _roundtrip(d: dict, header: str = "") -> dict:
    text = toml_out.dumps(d, header)
    back = tomllib.loads(text)
    assert back == _no_none(d), text
    return back


def _accelerators():
    presets = REPO / "costmodel" / "presets"
    out = [load_accelerator(presets / f"{n}.toml") for n in ("eyeriss_like", "simba_like", "tpu_like")]
    inputs = DATA / "zigzag" / "inputs"
    for hw in sorted((inputs / "hardware").glob("*.yaml")):
        mp = inputs / "mapping" / f"{hw.stem}.yaml"
        mp = mp if mp.exists() else inputs / "mapping" / "default.yaml"
        try:
            out.append(accelerator_from_dict(zigzag_to_dict(hw, mp), hw.name))
        except ValueError:  # refused (IMC, CACTI, loop dims not ours): tested in tests/sweep/config
            continue
    return out


ACCELERATORS = _accelerators()


def test_enough_accelerators():
    assert len(ACCELERATORS) >= 9


@pytest.mark.parametrize("acc", ACCELERATORS, ids=[a.name for a in ACCELERATORS])
def test_accelerator_round_trip(acc, tmp_path):
    """An accelerator's TOML-shaped dict -> text -> tomllib: the same dict, and loaded, the same
    accelerator; with a tricky description and a header of every tricky string."""
    d = acc.to_dict()
    d["description"] = " | ".join(TRICKY)
    back = _roundtrip(d, "\n".join(TRICKY))
    assert repr(accelerator_from_dict(back, "x")) == repr(accelerator_from_dict(_no_none(d), "x"))
    f = toml_out.write(tmp_path / "a.toml", d, "header")
    assert repr(load_accelerator(f)) == repr(accelerator_from_dict(_no_none(d), "x"))
    assert not [p for p in tmp_path.iterdir() if p.name != "a.toml"]  # no temp file left


def test_design_file_round_trip():
    """The dict `sweep report` writes as a design file (the stored arch JSON: sorted keys, NumPy
    scalars from a DataFrame) reads back equal."""
    for acc in ACCELERATORS:
        d = json.loads(json.dumps(acc.to_dict(), sort_keys=True))
        d["name"], d["description"] = "design_0123abcd", 'search "s\\x" é'
        d["mac_pj"] = np.float64(d["mac_pj"])
        back = _roundtrip(d, "Design 0123abcd of 'search \"s\\x\" é'\npe = 16\nglb = \"é\"")
        assert isinstance(back["mac_pj"], float)


def test_tune_best_params_round_trip():
    """best_params.toml of `sweep tune`: one [mappers.<name>] table of the tuned schedule."""
    full = {"chains": 4, "iterations": 2500, "t0": 1.5e-3, "rho": 0.956, "engine": "numba", "lockstep": False,
            "schedule": "geo\"metric\\", "moves": ["swap", "insert"], "weights": [0.25, 0.75], "big": 2**62,
            "tiny": 5e-324, "neg": -3, "inf": math.inf, "note": TRICKY[6]}
    d = {"mappers": {"salsa": full}}
    back = _roundtrip(d, "Tuned by `sweep tune c.toml` (study 'x', trial 7): gap 0.0123\nUse: params_file = \"<f>\"")
    assert back["mappers"]["salsa"]["inf"] == math.inf


def test_header_comments_and_layout():
    mems = [{"name": "rf", "operands": ["W"]}, {"name": "dram", "operands": ["I", "W", "O"]}]
    text = toml_out.dumps({"name": "a", "array": {"D1": 4}, "spatial": {"D1": [["K", 4], ["C", 1]]}, "memory": mems},
                          "line one\n\nline three")
    assert text.splitlines()[:3] == ["# line one", "#", "# line three"]
    assert 'D1 = [["K", 4], ["C", 1]]' in text and text.count("[[memory]]") == 2
    assert 'operands = ["I", "W", "O"]' in text


@pytest.mark.parametrize("s", TRICKY)
def test_strings_round_trip(s):
    assert _roundtrip({"s": s, s or "k": [s, {"t": s}], "t": {s or "k": s}})["s"] == s
    assert tomllib.loads(f"v = {toml_out.value(s)}")["v"] == s
    assert "\n" not in toml_out.value(s)


def test_value_one_line_and_errors():
    assert [toml_out.value(v) for v in (True, False, 3, np.int64(4), np.float64(0.5), 1e-05, "a b", ["x", 1],
                                        (1, (2, 3)), [], {"a": [1, 2], "b c": None, "d": "x"}, [{"a": 1}])] == \
        ["true", "false", "3", "4", "0.5", "1e-05", '"a b"', '["x", 1]', "[1, [2, 3]]", "[]",
         '{ a = [1, 2], d = "x" }', "[{ a = 1 }]"]
    assert toml_out.value({1: 2}) == "{ 1 = 2 }"  # keys as str(key), as before
    for bad in (None, object(), [None]):  # TOML has no null
        with pytest.raises(TypeError):
            toml_out.value(bad)


def _old_toml_literal(v) -> str:
    """`sweep.reports.archsearch.toml_literal` before the one writer (its list / scalar branches),
    kept here to show that `sweep map --param` commands keep their bytes."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)
    return "[" + ", ".join(_old_toml_literal(x) for x in v) + "]"


_ASCII = st.text(st.characters(min_codepoint=32, max_codepoint=126))
_SCALAR = st.one_of(st.booleans(), st.integers(-2**63, 2**63 - 1), st.floats(allow_nan=False), _ASCII)


@given(st.recursive(_SCALAR, lambda xs: st.lists(xs, max_size=4), max_leaves=12))
def test_command_values_keep_their_bytes(v):
    """Printable ASCII strings, numbers, booleans and arrays: the same text as before, so the
    commands in `sweep report` are byte-identical. (Elsewhere the old writer used JSON's escapes:
    ``\\u00e9`` for é, ``\\t`` for a tab, and a raw DEL, which TOML forbids; now é and the tab as
    they are and DEL as ``\\u007f``: the same value read back, a valid TOML file.)"""
    assert toml_out.value(v) == _old_toml_literal(v)


_KEY = st.text(max_size=8)
_TEXT = st.text(st.characters(exclude_categories=("Cs",)), max_size=12)
_LEAF = st.one_of(st.booleans(), st.integers(-2**63, 2**63 - 1), st.floats(allow_nan=False), _TEXT)
_VALUE = st.recursive(_LEAF, lambda xs: st.one_of(st.lists(xs, max_size=4),
                                                   st.dictionaries(_KEY, xs, max_size=4)), max_leaves=16)


@given(st.dictionaries(_KEY, _VALUE, max_size=6), _TEXT)
def test_any_document_round_trips(d, header):
    """tomllib.loads(dumps(d, header)) == d for any table of TOML values (no null)."""
    _roundtrip(d, header)


@given(_VALUE)
def test_any_value_round_trips_on_one_line(v):
    text = toml_out.value(v)
    assert "\n" not in text and tomllib.loads(f"v = {text}")["v"] == v
