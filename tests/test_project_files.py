"""The files a user looks for at a repository's top (issue 43, item 9): the licence pyproject names,
and a citation file naming the papers each part implements, each pointing at code that exists."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

#: The five papers of ../shared/seeds/README.md, plus LOMA (SALSA's exhaustive engine) and ZigZag
#: (the loop-nest model's reference).
PAPERS = ["SALSA: Simulated Annealing based Loop-Ordering Scheduler for DNN Accelerators",
          "Optimizing CNN Accelerator Dataflow Using Simulated Annealing",
          "DeepOpt: Optimized Scheduling of CNN Workloads for ASIC-based Systolic Deep Learning Accelerators",
          "CoSA: Scheduling by Constrained Optimization for Spatial Accelerators",
          "Flexer: Out-of-Order Scheduling for Multi-NPUs",
          "LOMA: Fast Auto-Scheduling on DNN Accelerators through Loop-Order-based Memory Allocation",
          "ZigZag: Enlarging Joint Architecture-Mapping Design Space Exploration for DNN Accelerators"]


def test_the_licence_file_is_the_licence_pyproject_names():
    meta = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    # an SPDX expression (PEP 639): setuptools deprecates the {text = ...} table, an error from
    # 2027-02-18 on (a fresh install would fail then)
    assert meta["license"] == "MIT" and meta["license-files"] == ["LICENSE"]
    text = (REPO / "LICENSE").read_text()
    assert text.startswith("MIT License") and "WITHOUT WARRANTY OF ANY KIND" in text


def test_the_citation_file_names_every_paper_and_the_code_that_implements_it():
    text = (REPO / "CITATION.cff").read_text()
    assert text.count("cff-version: 1.2.0") == 1
    assert re.search(r"^version: 0\.1\.0$", text, re.M) and "license: MIT" in text
    for title in PAPERS:
        assert f'"{title}' in text, title
    paths = re.findall(r'notes: "([\w/.]+)', text)
    assert len(paths) == len(PAPERS)
    for p in paths:
        assert (REPO / p).exists(), p
