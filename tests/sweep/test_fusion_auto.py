"""``fusion = "auto"`` (`sweep.commands.fusion_choice`): every way of running a step's attention
mapped, the best under the objective kept, against each variant mapped alone (the oracle: the
same step built with that fusion and tiles, mapped by `map_network` with no shared cache), and a
tile whose scores cannot stay on chip worked by hand.

Llama-3-8B's steps are given W8A8 (``weight_bits = 8``, ``act_bits = 8``, the KV cache in the
activations' 8 bits): at its bfloat16 checkpoint's 16 bits its 16.1 GB of weights do not fit
llm_ws's one 16 GiB HBM2E stack at 0.9 usable, and the hand count below is in 8-bit activations."""

from __future__ import annotations

import json
import math

import pytest
from typer.testing import CliRunner

from costmodel.loopnest.arch import accelerator_from_dict, load_accelerator
from costmodel.transformer.attention import KV_TILES, QUERY_TILES, fusion_variants
from sweep import api
from sweep.cli import app
from sweep.commands.fusion_choice import map_step_auto
from sweep.common.errors import CampaignError

LOMA = {"lpf_limit": 6}
W8A8 = {"weight_bits": 8, "act_bits": 8}
W8A8_ARGS = ["--weight-bits", "8", "--act-bits", "8"]


def test_variants_by_hand():
    """A 2,048-token prefill: unfused + 5 query tiles x 4 K/V tiles; a decode step has one query
    position, so the query tile is moot: unfused + the 4 K/V tiles, under the default query tile
    128; 100 tokens: tiles of 128 and more are all 100 x 100, listed once as (128, 128)."""
    assert len(QUERY_TILES) == 5 and len(KV_TILES) == 4
    prefill = fusion_variants(2048, 2048)
    assert len(prefill) == 21 and prefill[0] == {"fusion": "unfused"}
    assert {(v["query_tile"], v["kv_tile"]) for v in prefill[1:]} == {(q, k) for q in QUERY_TILES for k in KV_TILES}
    assert [(v.get("query_tile"), v.get("kv_tile")) for v in fusion_variants(1, 4096)] == \
        [(None, None), (128, 64), (128, 128), (128, 256), (128, 512)]
    assert [(v.get("query_tile"), v.get("kv_tile")) for v in fusion_variants(100, 100)] == \
        [(None, None), (64, 64), (64, 128), (128, 64), (128, 128)]


def _ub(mib: int):
    d = load_accelerator("llm_ws").to_dict()
    for m in d["memory"]:
        if m["name"] == "unified_buffer":
            m["size_bits"] = mib * 8 * 2**20
    return accelerator_from_dict(d)


@pytest.fixture(scope="module")
def small_ub():
    """llm_ws with a 2 MiB unified buffer, and a 1,024-token Llama-3-8B W8A8 prefill mapped with auto."""
    acc = _ub(2)
    return acc, map_step_auto("llama3_8b", {"phase": "prefill", "seq": 1024, **W8A8}, acc, "loma", "energy",
                              params=LOMA)


def test_a_tile_too_large_for_the_buffer_drops_out(small_ub):
    """By hand: query tile 1,024 x 4 query heads of the GQA group = 4,096 score rows; with K/V tiles
    of 512 keys the probabilities alone are 4,096 x 512 x 8 bits (the given act_bits) = 2 MiB, the
    whole unified buffer, with the tile's V still to hold: no valid mapping. At K/V tiles of 256
    (1 MiB) it fits."""
    _, res = small_ub
    bad = [(r["query_tile"], r["kv_tile"]) for r in res["fusion_choice"] if r["status"] != "ok"]
    assert bad == [(1024, 512)]
    assert all(r["value"] is None for r in res["fusion_choice"] if r["status"] != "ok")


def test_the_choice_is_the_best_variant_mapped_alone(small_ub):
    """Each variant mapped by itself (no cache shared) gives the same figures as in the table, and
    the chosen one is the least energy among those with a valid mapping."""
    acc, res = small_ub
    alone = {}
    for r in res["fusion_choice"]:
        kw = {"fusion": r["fusion"]} | ({"query_tile": r["query_tile"], "kv_tile": r["kv_tile"]}
                                        if r["fusion"] == "fused" else {})
        net = api.load_network("llama3_8b", phase="prefill", seq=1024, **W8A8, **kw)
        assert net.name == r["network"]
        one = api.map_network(net, acc, "loma", "energy", params=LOMA)
        alone[r["network"]] = one.energy_pj
        if r["status"] == "ok":
            assert one.energy_pj == r["energy_pj"] and one.latency_cycles == r["latency_cycles"]
        else:
            assert not math.isfinite(one.energy_pj)
    best = min((e, n) for n, e in alone.items() if math.isfinite(e))[1]
    assert [r["network"] for r in res["fusion_choice"] if r["chosen"]] == [best] == [res["network"]]
    chosen = next(r for r in res["fusion_choice"] if r["chosen"])
    assert res["total"]["energy_pj"] == chosen["energy_pj"]


def test_latency_objective_breaks_ties_by_energy():
    """Under latency, the chosen variant has the least latency; among equal latencies, the least energy."""
    res = api.map_step("llama3_8b", "llm_ws", "loma", "latency", params=LOMA, phase="decode", batch=4,
                       context=512, fusion="auto", **W8A8)
    rows = [r for r in res.fusion_choice if r["status"] == "ok"]
    best = min((r["latency_cycles"], r["energy_pj"]) for r in rows)
    chosen = next(r for r in rows if r["chosen"])
    assert (chosen["latency_cycles"], chosen["energy_pj"]) == best
    assert res.network == chosen["network"] and res.llm["workload"]["fusion"] == chosen["fusion"]


def test_auto_refuses_a_tile_and_a_build():
    with pytest.raises(CampaignError, match="--query-tile"):
        map_step_auto("llama3_8b", {"phase": "prefill", "seq": 256, "fusion": "auto", "query_tile": 128},
                      load_accelerator("llm_ws"), "loma")
    with pytest.raises(CampaignError, match="fusion: 'auto' is a choice made by mapping"):
        api.load_network("llama3_8b", phase="prefill", fusion="auto")


def test_cli_prints_the_choice_and_json_has_it(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    run = CliRunner().invoke
    args = ["map", "--network", "llama3_8b", "--phase", "decode", "--context", "512", "--fusion", "auto",
            "--arch", "llm_ws", "--mapper", "loma", "--param", "lpf_limit=6", *W8A8_ARGS]
    r = run(app, args + ["--objective", "energy"], env={"COLUMNS": "200"})
    assert r.exit_code == 0, r.output
    assert "--fusion auto: 5 ways to run the attention, best under energy" in r.stdout
    assert "chosen: llama3_8b/decode/b1/ctx512/w8/a8" in r.stdout
    doc = json.loads(run(app, args + ["--json"]).stdout)
    assert len(doc["fusion_choice"]) == 5 and sum(r["chosen"] for r in doc["fusion_choice"]) == 1
    bad = run(app, ["map", "--network", "llama3_8b", "--fusion", "auto", "--kv-tile", "64", "--arch", "llm_ws",
                    "--mapper", "loma"])
    assert bad.exit_code == 2 and "--kv-tile" in bad.output
    one = run(app, ["map", "--network", "llama3_8b", "--layer", "q_proj", "--fusion", "auto", "--arch", "llm_ws",
                    "--mapper", "loma"])
    assert one.exit_code == 2 and "auto chooses how a whole step runs" in one.output
    assert not any(tmp_path.iterdir())
