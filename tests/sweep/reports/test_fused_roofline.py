"""A fused step's roofline has one count of DRAM traffic (`costmodel.roofline.dram_bits`): the
report's rooflines (`sweep report --json`, ``llm.rooflines``; its text; its HTML plot) and
`sweep map --json` (each layer's ``dram_bits``) agree, and no point sits above its own roof.

The roof (Williams, Waterman and Patterson, CACM 2009): attained MACs per cycle <= min(peak MACs
per cycle, DRAM bytes per cycle x MACs per DRAM byte). The hand count of a fused tile (Dao et al.,
"FlashAttention", NeurIPS 2022, Algorithm 1): per query tile and KV head, each K and V tile is
streamed from DRAM once, Q read once by the first score tile, the output written once by the last
context tile; the score tile and the partial output stay on chip. Llama-3.2-1B's published config
(costmodel/transformer/models/llama3_2_1b.json, Hugging Face LlamaForCausalLM): head_dim 64, 32
query heads over 8 KV heads (GQA group 4); tiles of 128 positions by 128 keys; the steps are given
W8A8 (``weight_bits = 8``, ``act_bits = 8``; the KV cache in the activations' 8 bits,
`costmodel.transformer.step.resolve_bits`): K, V, Q and the output one byte per element. (At its
bfloat16 checkpoint's 16 bits its 2.47 GB of weights do not fit the design's 2 GiB x 0.9 usable.)

The design: llm_ws at 64 x 64 MACs and 1 GHz with one LPDDR5 x16 channel, 6,400 MT/s x 16 bits =
12.8 GB/s (JESD209-5; costmodel/tech/dram.py) = 12.8 B per cycle; before one count, the report
put its fused tiles up to 1.2 x above this roof.
"""

from __future__ import annotations

import json
import tomllib

import pytest
from typer.testing import CliRunner

from paths import REPO
from sweep.cli import app

CAMPAIGN = """name = "fused_roofline"
output = "{out}"
networks = [
    {{ model = "llama3_2_1b", phase = "prefill", batch = 1, seq = 256, fusion = "fused", weight_bits = 8, act_bits = 8 }},
    {{ model = "llama3_2_1b", phase = "decode", batch = 1, context = 512, fusion = "fused", weight_bits = 8, act_bits = 8 }},
]
objectives = ["latency"]
seeds = [0]

[architectures]
kind = "loopnest"
template = "llm_ws"

[architectures.grid]
array.D1 = [64]
array.D2 = [64]
memory.accumulators.size_kib = [1024]
memory.accumulators.word_bits = [2048]
memory.unified_buffer.size_kib = [8192]
memory.unified_buffer.word_bits = [512]
dram = ["lpddr5"]
dram_units = [1]
clock_mhz = [1000]
vector.lanes = [128]

[search]
sampler = "grid"
objectives = ["time_per_token_s", "ttft_s"]

[[mappers]]
name = "salsa"
params = {{ spatial = "search" }}
"""

PEAK = 64 * 64            # MACs per cycle
BW = 12.8e9 / 1e9         # DRAM bytes per cycle: 12.8 GB/s at 1 GHz
BITS = {"weight_bits": 8, "act_bits": 8}   # W8A8; the KV cache in the activations' bits
STEPS = {"prefill": ["--phase", "prefill", "--batch", "1", "--seq", "256"],
         "decode": ["--phase", "decode", "--batch", "1", "--context", "512"]}


def _hand() -> dict[str, dict[str, int]]:
    """Per phase, each fused tile layer's DRAM bytes by hand (module docstring)."""
    cfg = json.loads((REPO / "costmodel" / "transformer" / "models" / "llama3_2_1b.json").read_text())
    hd, group = cfg["head_dim"], cfg["num_attention_heads"] // cfg["num_key_value_heads"]
    kv, act, out = BITS["act_bits"] // 8, BITS["act_bits"] // 8, BITS["act_bits"] // 8  # K/V, Q, output bytes
    res = {}
    for phase, q_rows, tag in (("decode", 1, "1x128"), ("prefill", 128, "128x128")):
        kv_tile = 128 * hd * kv                     # a K or V tile: 128 keys x head_dim
        q, o = group * q_rows * hd * act, group * q_rows * hd * out
        res[phase] = {f"score_tile_{tag}_first": kv_tile + q, f"score_tile_{tag}": kv_tile,
                      f"context_tile_{tag}": kv_tile, f"context_tile_{tag}_last": kv_tile + o}
    return res


def _under_roof(attained: float, intensity: float, peak: float, bw: float) -> bool:
    return attained <= min(peak, bw * intensity) * (1 + 1e-9)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """The campaign run into a temporary directory, its report (JSON and HTML) and its design file."""
    from sweep.engine.runner import run_campaign
    from sweep.kinds.load import load_campaign
    from sweep.kinds.registry import build_report
    tmp = tmp_path_factory.mktemp("fused_roofline")
    p = tmp / "c.toml"
    p.write_text(CAMPAIGN.format(out=(tmp / "out").as_posix()))
    run_campaign(load_campaign(p), executor="local")
    r = CliRunner().invoke(app, ["report", str(tmp / "out"), "--html", str(tmp / "r.html")])
    assert r.exit_code == 0, r.output
    designs = sorted((tmp / "out" / "designs").glob("*.toml"))
    assert len(designs) == 1
    return {"report": build_report(tmp / "out"), "text": r.output, "design": designs[0], "tmp": tmp}


def test_design_is_the_one_described(run):
    """The roof's figures from the exported design: 64 x 64 PEs, DRAM 102.4 bits per cycle."""
    d = tomllib.loads(run["design"].read_text())
    assert d["array"]["D1"] * d["array"]["D2"] == PEAK
    dram = next(m for m in d["memory"] if m["name"] == "dram")
    assert dram["read_bw"] / 8 == pytest.approx(BW, rel=1e-12) and "size_bits" not in dram


def test_report_rooflines_under_their_roofs_with_hand_counted_tiles(run):
    """Every point of every roofline in the report is at or under its roof, and each fused tile's
    DRAM bytes are the hand count (K and V tiles streamed once per query tile)."""
    roofs = run["report"]["llm"]["rooflines"]
    assert {r["network"].split("/")[1] for r in roofs} == {"prefill", "decode"}
    hand = _hand()
    for r in roofs:
        assert r["peak_macs_per_cycle"] == PEAK and r["dram_bytes_per_cycle"] == pytest.approx(BW, rel=1e-12)
        for p in r["points"]:
            assert p["attained"] == pytest.approx(p["macs"] / p["latency_cycles"], rel=1e-12)
            assert p["intensity"] == pytest.approx(p["macs"] / p["dram_bytes"], rel=1e-12)
            assert _under_roof(p["attained"], p["intensity"], PEAK, BW), (r["network"], p)
        tiles = {p["layer"]: p["dram_bytes"] for p in r["points"] if "_tile_" in p["layer"]}
        assert tiles == hand[r["network"].split("/")[1]], r["network"]
    # the text says which layers are memory-bound by the same intensities
    for r in roofs:
        mem = sum(1 for p in r["points"] if p["intensity"] < PEAK / BW)
        assert f"{mem} of {len(r['points'])} unique layers memory-bound" in run["text"]


def test_html_roofline_points_under_the_drawn_roof(run):
    """The HTML page's roofline figure draws the report's points: each marker at or under the roof
    drawn beside it, and the same (intensity, attained) pairs as the JSON."""
    from sweep.reports.html import Page
    from sweep.reports.html.archsearch import add_llm_answer
    page = Page("t")
    add_llm_answer(page, run["report"])
    figs = [f["figure"] for f in page.figures if "roofline" in f["id"]]
    assert len(figs) == 1
    markers = [t for t in figs[0]["data"] if t.get("mode") == "markers"]
    pts = {(p["intensity"], p["attained"]) for r in run["report"]["llm"]["rooflines"] for p in r["points"]}
    drawn = {(x, y) for t in markers for x, y in zip(t["x"], t["y"])}
    assert drawn == pts
    assert all(_under_roof(y, x, PEAK, BW) for x, y in drawn)


@pytest.mark.parametrize("phase", list(STEPS))
def test_map_json_counts_as_the_report(run, phase):
    """`sweep map --json` of the same step on the same design: each layer at or under the roof by
    its own ``dram_bits``, the fused tiles' bytes the hand count, and those bytes the roofline's
    count (`costmodel.roofline.dram_bytes`) of the same mapping."""
    from costmodel import roofline as R
    from costmodel.loopnest.arch import load_accelerator
    from costmodel.zoo import load_network
    args = ["map", "--arch", str(run["design"]), "--mapper", "salsa", "--param", "spatial=search",
            "--objective", "latency", "--network", "llama3_2_1b", *STEPS[phase], "--fusion", "fused",
            "--weight-bits", str(BITS["weight_bits"]), "--act-bits", str(BITS["act_bits"]), "--json"]
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 0, r.output
    res = json.loads(r.stdout)
    acc = load_accelerator(str(run["design"]))
    step = {a.lstrip("-"): (v if a == "--phase" else int(v)) for a, v in zip(STEPS[phase][::2], STEPS[phase][1::2])}
    net = load_network("llama3_2_1b", fusion="fused", **BITS, **step)
    hand = _hand()[phase]
    seen = {}
    for row, (layer, _) in zip(res["layers"], net.unique()):
        assert row["layer"] == layer.name
        b = sum(row["dram_bits"].values()) / 8
        assert b == R.dram_bytes(layer, acc, row["mapping"]), layer.name
        assert _under_roof(row["macs"] / row["latency_cycles"], row["macs"] / b, PEAK, BW), layer.name
        if layer.name in hand:
            seen[layer.name] = b
    assert seen == hand
