"""A step on a system of chips (`costmodel.system.serving.system_step`), worked by hand: given one
chip's share figures, the collectives of the split (Megatron-LM's two all-reduces per block, the
embedding's all-reduce, the logits' all-gather, the stage-to-stage send), GPipe's schedule and the
decode round trip."""

import math

import pytest

from costmodel.system.interconnect import Interconnect
from costmodel.system.serving import System, system_step
from costmodel.transformer import transformer_config

NET = Interconnect("test", links=1, gbps_per_link=100.0, latency_us=1.0, topology="switch", pj_per_bit=2.0)
CFG = transformer_config("llama3_70b")          # hidden 8192, 80 blocks, vocabulary 128256
SHARE = {"latency_s": 10e-3, "energy_j": 5.0, "head_latency_s": 1e-3, "head_energy_j": 0.5}


def test_tp2_pp2_two_micro_batches_decode_by_hand():
    """tp 2, pp 2, 2 micro-batches of 4 sequences (batch 8, decode: 4 tokens each).
    H = 4 tokens x 8192 x 2 bytes = 65,536 B.
    all-reduce on 2 chips: 2 x 1 x 1 us + 2 x 1/2 x 65,536 / 1e11 s = 2.65536 us; 160 per micro-batch,
    80 on each stage; the embedding's: one; the logits' all-gather: 4 x 128,256 x 2 = 1,026,048 B:
    1 us + 1/2 x 1,026,048 / 1e11 = 6.13024 us; the send between the stages: 1 us + 65,536 / 1e11
    = 1.65536 us. The last stage serves the 2 micro-batches back to back (2 x 10.219 ms) longer than
    one round trip (19.435 ms): no bubble."""
    ar, ag, hop = 2.65536e-6, 6.13024e-6, 1.65536e-6
    t_b = 10e-3 - 1e-3 + 80 * ar
    r = 2 * t_b + 1e-3 + ag + ar + hop
    last = t_b + 1e-3 + ag
    lat = max(r, 2 * last)
    assert lat == 2 * last
    # links: an all-reduce sends 2 x 1/2 x H per chip, 2 chips: 131,072 B x 8 x 2 pJ; per micro-batch
    # 161 all-reduces, the all-gather (1/2 x 1,026,048 B x 2 chips) and the send (65,536 B from each of
    # the stage's 2 tensor-parallel chips to its counterpart: no scatter-gather of the activations)
    links = (161 * 131072 + 1026048 + 2 * 65536) * 8 * 2.0 * 2 * 1e-12   # x 2 micro-batches
    energy = 2 * 1 * 2 * (2 * (5.0 - 0.5) + 0.5) + links
    got = system_step(CFG, {"phase": "decode", "batch": 8, "tokens": 8, "seq": None},
                      System(tp=2, pp=2, micro_batches=2, interconnect=NET), SHARE, 16)
    assert got["time_per_token_s"] == pytest.approx(lat, rel=1e-12)
    assert got["round_trip_s"] == pytest.approx(r, rel=1e-12)
    assert got["energy_j"] == pytest.approx(energy, rel=1e-12)
    assert got["link_energy_j"] == pytest.approx(links, rel=1e-12)
    assert got["tokens_per_s"] == pytest.approx(8 / lat) and got["chips"] == 4
    assert got["bubble"] == pytest.approx(0.0, abs=1e-12)
    by = {c["collective"]: c for c in got["collectives"] if c["collective"] != "all_reduce"}
    assert by["send_recv"]["time_s"] == pytest.approx(hop, rel=1e-12)
    assert by["all_gather"]["bytes"] == 4 * 128256 * 2
    assert sorted(c["per_step"] for c in got["collectives"] if c["collective"] == "all_reduce") == [2, 320]


def test_prefill_gpipe_schedule():
    """One chip's stage takes t; pp 4 stages, m 4 micro-batches, no collectives that cost (tp 1, a link
    of zero latency and huge bandwidth): TTFT = (m + pp - 1) x t_b + t_h exactly as GPipe's
    schedule (the last micro-batch enters after m - 1 stage times), bubble (pp - 1) / (m + pp - 1)
    of the last stage's time when the head is free."""
    fast = Interconnect("fast", links=1, gbps_per_link=1e12, latency_us=0.0)
    share = {"latency_s": 2e-3, "energy_j": 1.0, "head_latency_s": 0.0, "head_energy_j": 0.0}
    w = {"phase": "prefill", "batch": 4, "seq": 128, "tokens": 512}
    got = system_step(CFG, w, System(pp=4, micro_batches=4, interconnect=fast), share, 16)
    hop = 1 * 8192 * 128 * 2 / 1e21  # 128 tokens per micro-batch, one hop: ~0
    assert got["ttft_s"] == pytest.approx((4 + 4 - 1) * 2e-3 + 3 * hop, rel=1e-9)
    assert got["bubble"] == pytest.approx(3 / 7, rel=1e-9)
    assert got["energy_j"] == pytest.approx(4 * 4 * 1.0)   # each micro-batch through 4 stages of 1 J


def test_decode_without_micro_batches_waits_for_every_stage():
    """pp 4, one micro-batch: a token needs all 4 stages in turn, each chip busy a quarter of it."""
    fast = Interconnect("fast", links=1, gbps_per_link=1e12, latency_us=0.0)
    share = {"latency_s": 2e-3, "energy_j": 1.0, "head_latency_s": 0.5e-3, "head_energy_j": 0.1}
    w = {"phase": "decode", "batch": 4, "tokens": 4, "seq": None}
    got = system_step(CFG, w, System(pp=4, interconnect=fast), share, 16)
    assert got["time_per_token_s"] == pytest.approx(4 * 1.5e-3 + 0.5e-3, rel=1e-9)
    assert got["bubble"] == pytest.approx(1 - 2e-3 / 6.5e-3, rel=1e-9)
    assert got["energy_j"] == pytest.approx(4 * 0.9 + 0.1)


def test_system_table_errors_name_the_key():
    with pytest.raises(ValueError, match=r"system.tp = 0"):
        System.from_dict({"tp": 0})
    with pytest.raises(ValueError, match=r"system.chips = 6: expected tp x pp x ep x replicas = 8"):
        System.from_dict({"chips": 6, "tp": 8})
    with pytest.raises(ValueError, match=r"system.links = 2: no such key"):
        System.from_dict({"links": 2})
    with pytest.raises(ValueError, match=r"interconnect = 'nvlink9'"):
        System.from_dict({"interconnect": "nvlink9"})
    assert System.from_dict({"chips": 8}).tp == 8
    assert System.from_dict({"chips": 8, "pp": 2}).tp == 4
    assert math.isclose(System.from_dict({"interconnect": {"links": 4, "gbps_per_link": 50, "latency_us": 2}})
                        .interconnect.bytes_per_s, 200e9)
