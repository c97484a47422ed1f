"""DeepOpt's 65 nm technology data (`costmodel.tech.deepopt65`): the areas by hand, the SRAM energy
table as shipped, one source for both cost models (the systolic model and the loop-nest physics
read the same objects, the old names still import), and a room that imports no cost model."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

from costmodel.tech import deepopt65
from costmodel.tech.deepopt65 import A_PE_UM2, A_SRAM_UM2_PER_BYTE, SRAM_ENERGY_CSV, sram_energy_table
from paths import REPO


def test_areas_by_hand():
    # OHA_Main.m: Area_SRAM_per_byte = 32.545670202636720 um^2 (TSMC 65 nm memory compiler)
    assert A_SRAM_UM2_PER_BYTE == 32.545670202636720
    # one PE = 0.1 * area(2 KiB SRAM) / 0.9 = 0.1 * 2048 * 32.54567 / 0.9 = 7405.95 um^2
    assert A_PE_UM2 == pytest.approx(0.1 * 2048 * 32.54567 / 0.9, rel=1e-7)
    assert A_PE_UM2 == pytest.approx(7405.95, abs=0.01)


def test_sram_energy_table_as_shipped():
    assert Path(SRAM_ENERGY_CSV) == REPO / "costmodel" / "data" / "sram_energy_pj_per_bit.csv"
    sizes, energy = sram_energy_table()
    assert sizes.dtype == energy.dtype == np.float64
    assert sizes.tolist() == list(range(4, 513))            # every integer size 4..512 KiB
    assert np.all(energy > 0)
    # the file's rows, pJ/bit (authors' data/E_EySRAM_perbit.mat converted from J/bit)
    at = dict(zip(sizes.tolist(), energy.tolist()))
    assert (at[4], at[5], at[9], at[64], at[512]) == (0.114518, 0.127677, 0.149335, 0.460338, 1.6422)
    assert sram_energy_table() is sram_energy_table()              # read once
    again = sram_energy_table(SRAM_ENERGY_CSV)                       # the default, by name
    assert np.array_equal(again[0], sizes) and np.array_equal(again[1], energy)


def test_both_models_read_this_data():
    from costmodel.loopnest import physics
    from costmodel.systolic import SystolicParams, area, params
    assert area.A_PE_UM2 is A_PE_UM2 and area.A_SRAM_UM2_PER_BYTE is A_SRAM_UM2_PER_BYTE
    assert physics.A_PE_UM2 is A_PE_UM2 and physics.A_SRAM_UM2_PER_BYTE is A_SRAM_UM2_PER_BYTE
    assert params.sram_energy_table is sram_energy_table
    assert physics.sram_energy_table is sram_energy_table
    assert SystolicParams().sram_energy_csv == SRAM_ENERGY_CSV
    sizes, energy = sram_energy_table()
    assert [physics.sram_pj_per_bit(s) for s in (4.0, 100.0, 512.0)] == [energy[0], energy[96], energy[-1]]


def _imported(path: Path) -> set[str]:
    """Modules ``path`` imports anywhere (relative imports resolved against ``costmodel.tech``)."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            pkg = ["costmodel", "tech"]          # every file here is costmodel.tech or a module in it
            anchor = pkg[:len(pkg) - node.level + 1] if node.level else []
            out.add(".".join(anchor + ([node.module] if node.module else [])))
    return out


def test_tech_imports_no_cost_model():
    """The shared room is below both models: it imports nothing of costmodel outside itself."""
    files = sorted(Path(deepopt65.__file__).parent.glob("*.py"))
    assert {f.name for f in files} >= {"__init__.py", "deepopt65.py", "sram.py", "dram.py"}
    bad = {f.name: m for f in files for m in _imported(f)
           if m.startswith("costmodel") and not m.startswith("costmodel.tech")}
    assert not bad, f"costmodel.tech imports a cost model: {bad}"
