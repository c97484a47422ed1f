"""Physical parameters outside what can be built exit 2 naming the key, the value and the reason
(issue 43, item 5): clocks, array sizes, the precisions a step may fix."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from costmodel.transformer.step import resolve_bits
from sweep.cli import app

REPO = Path(__file__).resolve().parents[2]

GRID = """name = "lim"
output = "{out}"
networks = [{{ model = "gpt2", phase = "decode", batch = 1, context = 64 }}]
objectives = ["latency"]
[architectures]
kind = "loopnest"
template = "llm_ws"
[architectures.grid]
clock_mhz = [1000, {clock}]
array.D1 = [64, {d1}]
[[mappers]]
name = "salsa"
"""


@pytest.mark.parametrize("clock,d1,key,value", [(100000, 128, "clock_mhz", "100000"), (5, 128, "clock_mhz", "5"),
                                                (1400, 100000, "array.D1", "100000")])
def test_a_grid_value_that_cannot_be_built_exits_2_naming_it(tmp_path, clock, d1, key, value):
    camp = tmp_path / "c.toml"
    camp.write_text(GRID.format(out=(tmp_path / "out").as_posix(), clock=clock, d1=d1))
    for cmd in ("validate", "run"):
        r = CliRunner().invoke(app, [cmd, str(camp)])
        assert r.exit_code == 2, r.output
        assert f"architectures.grid.{key} = {value}: outside the physics model" in r.output
    assert not (tmp_path / "out").exists()


def test_an_accelerator_file_with_a_100_ghz_clock_exits_2(tmp_path):
    text = (REPO / "costmodel" / "presets" / "llm_ws.toml").read_text()
    arch = tmp_path / "fast.toml"
    arch.write_text(text.replace("clock_mhz = 1000.0", "clock_mhz = 100000.0"))
    r = CliRunner().invoke(app, ["map", "--network", "gpt2", "--phase", "decode", "--arch", str(arch),
                                 "--mapper", "loma"])
    assert r.exit_code == 2
    assert "clock_mhz = 100000.0: clock 100000 MHz is outside 10..3000 MHz" in r.output


@pytest.mark.parametrize("opt,value", [("--kv-bits", 1), ("--kv-bits", 3), ("--kv-bits", 64), ("--act-bits", 3),
                                       ("--act-bits", 64)])
def test_a_precision_no_datapath_carries_exits_2_naming_the_option(opt, value):
    r = CliRunner().invoke(app, ["map", "--network", "gpt2", "--phase", "decode", "--context", "64",
                                 "--arch", "llm_ws", "--mapper", "loma", opt, str(value)])
    assert r.exit_code == 2, r.output
    assert f"{opt} = {value}:" in r.output and "must be one of" in r.output


def test_the_formats_served_are_accepted():
    # FP8 / INT8 and 4- and 2-bit KV caches (KIVI), W4A4 activations
    for kv in (16, 8, 4, 2):
        assert resolve_bits(None, 16, kv).kv == kv
    assert resolve_bits(4, 4, None).act == 4
