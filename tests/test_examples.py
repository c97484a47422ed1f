"""The scripts of ``examples/`` run as a user runs them (``python examples/X.py`` from another
directory) and print numbers that an independent ``sweep`` command gives too; the README's "In
Python" snippets are lines of those scripts."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from paths import REPO

EXAMPLES = REPO / "examples"
ENV = dict(os.environ, RAY_USAGE_STATS_ENABLED="0")


def _run(args: list[str], cwd: Path, env: dict | None = None) -> str:
    """stdout of ``args`` run in ``cwd`` (with ``env`` added to the environment); the command must exit 0."""
    p = subprocess.run(args, cwd=cwd, env=dict(ENV, **(env or {})), capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, f"{args} exited {p.returncode}\n{p.stdout}\n{p.stderr}"
    return p.stdout


def _example(name: str, cwd: Path, *args: str, env: dict | None = None) -> str:
    return _run([sys.executable, str(EXAMPLES / name), *args], cwd, env)


def _results_dir(out: str) -> Path:
    """The result directory an example says it wrote (``results: DIR``, an absolute path): it
    exists and is a result directory."""
    m = re.search(r"^results: (.+)$", out, flags=re.M)
    assert m, f"the example does not say where it writes:\n{out}"
    d = Path(m[1])
    assert d.is_absolute() and (d / "manifest.json").is_file() and (d / "rows").is_dir(), d
    return d


def _sweep_json(args: list[str], cwd: Path) -> dict:
    return json.loads(_run([sys.executable, "-m", "sweep.cli", *args, "--json"], cwd))


def test_map_layer_prints_what_sweep_map_finds(tmp_path):
    out = _example("map_layer.py", tmp_path)
    m = re.search(r"energy (\S+) pJ, latency (\S+) cycles, EDP (\S+) pJ x cycles, (\d+) evaluations", out)
    assert m, out
    cli = _sweep_json(["map", "--arch", "eyeriss_like", "--network", "resnet18", "--layer", "layer1.0.conv1",
                       "--mapper", "salsa", "--objective", "energy", "--seed", "0", "--param", "iterations=300"],
                      tmp_path)
    assert float(m[1]) == pytest.approx(cli["energy_pj"], rel=1e-6)
    assert float(m[2]) == pytest.approx(cli["latency_cycles"], rel=1e-6)
    assert float(m[3]) == pytest.approx(cli["edp"], rel=1e-6)
    assert int(m[4]) == cli["evaluations"]
    # the evaluated mapping's energy per memory level (3 levels of W and I, 4 of O on eyeriss_like,
    # printed to 4 digits) plus the MACs' (64*64*56*56*3*3 MACs x 0.5 pJ, the preset's mac_pj) is the total
    levels = [float(v) for line in out.splitlines() if line[:2] in ("W ", "I ", "O ")
              for v in re.findall(r" (\S+) pJ", line)]
    assert len(levels) == 3 + 3 + 4
    assert cli["energy_pj"] - sum(levels) == pytest.approx(64 * 64 * 56 * 56 * 3 * 3 * 0.5, rel=1e-2)


def test_arch_search_prints_the_front_and_each_design_reproduces(tmp_path):
    run_dir = tmp_path / "search"
    out = _example("arch_search.py", tmp_path, "search")   # a relative OUT_DIR: printed absolute
    assert _results_dir(out) == run_dir.resolve()
    head = re.search(r"(\d+) designs, (\d+) on the area-EDP front", out)
    assert head and head[1] == "4", out   # 2 array heights x 2 buffer sizes, no constraint
    rows = [line.split() for line in out.splitlines() if re.match(r"[0-9a-f]{16} ", line)]
    assert len(rows) == int(head[2]) >= 1
    report = _sweep_json(["report", str(run_dir)], tmp_path)   # writes the front's design files
    front = {d["design_id"]: d for d in report["networks"]["deepbench_ocr"]["pareto_area_edp"]}
    assert {r[0] for r in rows} == set(front)
    for design_id, d1, kib, area, edp in rows:
        design = run_dir / "designs" / f"{design_id}.toml"
        single = _sweep_json(["map", "--network", "deepbench_ocr", "--arch", str(design),
                              "--mapper", "salsa", "--objective", "edp", "--seed", "0", "--param", "chains=1",
                              "--param", "iterations=100", "--param", "descent=false"], tmp_path)
        assert float(edp) == pytest.approx(single["total"]["edp"], rel=1e-6)
        assert (int(d1), int(kib)) in {(7, 128), (7, 1024), (14, 128), (14, 1024)}
        assert float(area) == pytest.approx(front[design_id]["area_mm2"], rel=1e-6)


def test_read_results_prints_the_pivot_of_the_stored_results(tmp_path):
    # no OUT_DIR: a new temporary directory (here under tmp_path), which it names
    (tmp_path / "tmp").mkdir()
    out = _example("read_results.py", tmp_path, env={"TMPDIR": str(tmp_path / "tmp")})
    assert _results_dir(out).parent == (tmp_path / "tmp").resolve()
    # deepbench_ocr: 4 layers, all of different shapes; 2 mappers, one unit per problem
    assert "tiny_compare: 8 rows, 8 (layer, mapper) results" in out, out
    lines = out.splitlines()
    header = next(line.split() for line in lines if {"salsa", "random"} <= set(line.split()))
    salsa_first = header.index("salsa") < header.index("random")
    table = {parts[0]: parts[1:] for parts in (line.split() for line in lines) if parts and parts[0].startswith("ocr")}
    assert len(table) == 4 and all(len(v) == 2 for v in table.values())
    layer = "ocr2_240x24x16_k32"
    salsa = float(table[layer][0 if salsa_first else 1])
    single = _sweep_json(["map", "--network", "deepbench_ocr", "--layer", layer, "--arch", "eyeriss_like",
                          "--mapper", "salsa", "--objective", "energy", "--seed", "0", "--param", "chains=1",
                          "--param", "iterations=200"], tmp_path)
    assert salsa == pytest.approx(single["energy_pj"], rel=1e-6)


def _readme_snippets() -> list[str]:
    text = (REPO / "README.md").read_text()
    section = text.split("\n## In Python\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", section, flags=re.S)


def test_the_readme_snippets_are_lines_of_the_examples():
    lines = {line.strip() for f in EXAMPLES.glob("*.py") for line in f.read_text().splitlines()}
    snippets = _readme_snippets()
    assert len(snippets) >= 2
    missing = [line for s in snippets for line in s.splitlines() if line.strip() and line.strip() not in lines]
    assert not missing, f"README 'In Python' lines not in examples/: {missing}"


def test_llm_steps_prints_what_sweep_map_finds_and_a_search_that_accounts_for_every_design(tmp_path):
    out = _example("llm_steps.py", tmp_path, "llm")
    m = re.search(r"decode, batch 1, 2,048 tokens of context: (\S+) ms per token, (\S+) mJ per token", out)
    assert m, out
    # the example's docstring's command (W8A8, attention fused by default)
    cli = _sweep_json(["map", "--network", "llama3_8b", "--phase", "decode", "--batch", "1", "--context", "2048",
                       "--weight-bits", "8", "--act-bits", "8", "--arch", "llm_ws", "--mapper", "loma",
                       "--param", "lpf_limit=4"], tmp_path)
    assert float(m[1]) == pytest.approx(cli["llm"]["time_per_token_s"] * 1e3, rel=1e-5)
    assert float(m[2]) == pytest.approx(cli["llm"]["energy_per_token_j"] * 1e3, rel=1e-5)
    run_dir = _results_dir(out)
    head = re.search(r"(\d+) designs: (\d+) mapped, (\d+) pruned by bound, (\d+) on which", out)
    assert head and int(head[1]) == 24 == int(head[2]) + int(head[3]) + int(head[4]) and int(head[3]) > 0, out
    # the fastest design per token, mapped alone from its design file, gives the figure printed
    _sweep_json(["report", str(run_dir)], tmp_path)                      # writes the design files
    best = re.search(r"fastest by time_per_token_s: ([0-9a-f]{16}) .* (\S+) ms, ", out)
    single = _sweep_json(["map", "--network", "llama3_8b", "--phase", "decode", "--batch", "1", "--context", "2048",
                          "--weight-bits", "8", "--act-bits", "8",
                          "--arch", str(run_dir / "designs" / f"{best[1]}.toml"),
                          "--mapper", "loma", "--param", "lpf_limit=4"], tmp_path)
    assert float(best[2]) == pytest.approx(single["llm"]["time_per_token_s"] * 1e3, rel=1e-5)


def test_onnx_model_runs_the_networks_page_as_written(tmp_path):
    """docs/networks.md's commands ran on a model.onnx nobody had (a new user's report): the example
    writes one, and every command of the page's first block runs on it as written. Its layers by
    hand (ResNet-18, He et al. 2016, Table 1): conv1 64 x 3 x 7 x 7 at 112 x 112, the block's 3 x 3
    convolutions 64 x 64 at 56 x 56, fc 64 -> 1000."""
    out = _example("onnx_model.py", tmp_path)
    assert (tmp_path / "model.onnx").is_file() and "model.onnx" in out
    page = (REPO / "docs" / "networks.md").read_text().split("```bash\n", 1)[1].split("```", 1)[0]
    cmds = [line.split("#", 1)[0].strip() for line in page.splitlines() if line.strip()]
    assert cmds[0] == "python examples/onnx_model.py"
    for cmd in cmds[1:]:
        if cmd.startswith("sweep map --network resnet18"):
            continue                                    # the zoo, not the file (tested elsewhere)
        exe, *args = cmd.split(">")[0].split()
        stdout = _run([sys.executable, "-m", "sweep.cli", *args[0:]] if exe == "sweep" else [exe, *args], tmp_path)
        if ">" in cmd:
            (tmp_path / cmd.split(">")[1].strip()).write_text(stdout)
    js = json.loads(_run([sys.executable, "-m", "sweep.cli", "list", "networks", "--file", "model.onnx", "--json"],
                         tmp_path))
    layers = {x["name"]: x for x in js["layers"]}
    assert layers["/conv1/Conv"]["macs"] == 64 * 3 * 7 * 7 * 112 * 112
    assert layers["/layer1/layer1.0/conv2/Conv"]["macs"] == 64 * 64 * 3 * 3 * 56 * 56
    assert layers["/fc/Gemm"]["macs"] == 64 * 1000
    assert sum(x["macs"] * x.get("repeat", 1) for x in js["layers"]) == 349_288_960
