"""Collectives on an interconnect (costmodel/system), by hand from the alpha-beta formulas (NCCL's
model, the bundled interconnects' default: tests/costmodel/test_nccl.py)."""

from dataclasses import replace

import pytest

from costmodel.system.collectives import collective_cost
from costmodel.system.interconnect import INTERCONNECTS, Interconnect, interconnect


def _alpha_beta(name):
    """A bundled interconnect costed by the alpha-beta model (the bundled ones default to NCCL's)."""
    return replace(interconnect(name), model="alpha_beta")


def test_ring_all_reduce_of_8192_halves_on_8_chips_by_hand():
    net = _alpha_beta("nvlink3")   # 12 links x 25 GB/s per direction = 300e9 B/s per chip, 8.92 us per hop
    c = collective_cost("all_reduce", 8192 * 2, 8, net)
    # 2 (p - 1) hops of latency + 2 (p - 1) / p of the 16,384 bytes at 300 GB/s
    assert c.time_s == pytest.approx(14 * 8.92e-6 + 14 / 8 * 16384 / 300e9, rel=1e-12)
    assert c.sent_bytes == 14 / 8 * 16384 and c.link_bytes == 8 * 14 / 8 * 16384 and c.energy_pj is None


def test_the_other_collectives_by_hand():
    net = Interconnect("t", links=2, gbps_per_link=50.0, latency_us=1.0, topology="switch", pj_per_bit=2.0)
    b, a, s = 100e9, 1e-6, 4e6
    assert collective_cost("reduce_scatter", s, 4, net).time_s == pytest.approx(3 * a + 0.75 * s / b)
    assert collective_cost("all_gather", s, 4, net).time_s == pytest.approx(3 * a + 0.75 * s / b)
    assert collective_cost("send_recv", s, 4, net).time_s == pytest.approx(a + s / b)
    sw = collective_cost("all_to_all", s, 4, net)
    assert sw.time_s == pytest.approx(3 * a + 0.75 * s / b)
    assert sw.energy_pj == pytest.approx(4 * 0.75 * s * 8 * 2.0)   # every chip sends 3/4 of S, one hop each
    # a physical ring: chips 1 and 3 away get their share over 1 hop, the one 2 away over 2: 4 share-hops
    ring = collective_cost("all_to_all", s, 4, Interconnect("r", 2, 50.0, 1.0, "ring"))
    assert ring.time_s == pytest.approx(2 * a + (s / 4) * 4 / b)
    assert ring.link_bytes == pytest.approx(4 * (s / 4) * 4)
    # a ring all-reduce takes the same on a physical ring (half the data each way round)
    assert collective_cost("all_reduce", s, 4, Interconnect("r", 2, 50.0, 1.0, "ring")).time_s == \
        collective_cost("all_reduce", s, 4, net).time_s
    # one chip: nothing moves
    assert collective_cost("all_reduce", s, 1, net).time_s == 0.0


def test_bad_inputs_name_the_key():
    with pytest.raises(ValueError, match="collective = 'broadcast'"):
        collective_cost("broadcast", 1, 2, interconnect("nvlink3"))
    with pytest.raises(ValueError, match="chips = 0"):
        collective_cost("all_reduce", 1, 0, interconnect("nvlink3"))
    with pytest.raises(ValueError, match="interconnect.links = 0"):
        Interconnect("x", 0, 25.0, 1.0)
    with pytest.raises(ValueError, match="interconnect.topology = 'mesh'"):
        Interconnect("x", 1, 25.0, 1.0, "mesh")
    with pytest.raises(ValueError, match="f.toml: interconnect.speed = 3: no such key"):
        Interconnect.from_dict({"links": 1, "gbps_per_link": 1, "latency_us": 0, "speed": 3}, "f.toml")
    with pytest.raises(ValueError, match="interconnect = 'nvlink9'"):
        Interconnect.from_dict("nvlink9")
    assert Interconnect.from_dict("nvlink4") is INTERCONNECTS["nvlink4"]
    assert Interconnect.from_dict({"links": 4, "gbps_per_link": 50, "latency_us": 2}).bytes_per_s == 200e9


def test_bundled_figures_from_their_sources():
    assert interconnect("nvlink3").bytes_per_s * 2 == 600e9    # 600 GB/s per A100, both ways
    assert interconnect("nvlink4").bytes_per_s * 2 == 900e9    # 900 GB/s per H100
    assert interconnect("pcie4_x16").bytes_per_s == pytest.approx(16e9 * 16 * 128 / 130 / 8, rel=0.001)


def _allreduce_measured():
    from pathlib import Path
    path = Path(__file__).resolve().parents[1] / "data" / "llmcompass_a100" / "allreduce_A100.csv"
    rows = [ln.split(",") for ln in path.read_text().splitlines() if ln and not ln.startswith("#")]
    return [(int(s), float(us) * 1e-6) for s, us in rows]


def test_all_reduce_on_4_a100s_against_llmcompass_measurement():
    """What docs/silicon.md says of the alpha-beta model on 4 A100s over NVLink (measured by
    LLMCompass): large messages ours 22-26% fast (NCCL's bus bandwidth 234 GB/s = 78% of the links'
    300 GB/s), small ones 3-4x slow (NCCL's floor about 12.5 us for the 6 ring steps whose latency we
    count at LLMCompass's 8.92 us each). NCCL's model: tests/costmodel/test_nccl.py."""
    net = _alpha_beta("nvlink3")
    pts = _allreduce_measured()
    assert len(pts) == 32 and pts[-1] == (17179869184, 110277e-6)
    big = [(s, t) for s, t in pts if s >= 2 ** 27]
    for s, t in big:
        ratio = collective_cost("all_reduce", s, 4, net).time_s / t
        assert 0.74 <= ratio <= 0.78
    s, t = pts[-1]
    assert 1.5 * s / t / 1e9 == pytest.approx(233.7, abs=0.1)   # NCCL's bus bandwidth, GB/s
    for s, t in pts[:8]:   # <= 1 KiB: the measured floor
        assert 12.3e-6 <= t <= 14e-6
        assert collective_cost("all_reduce", s, 4, net).time_s / t == pytest.approx(53.52e-6 / t, rel=1e-3)


def test_gpt3_block_all_reduces_on_4_a100s_against_llmcompass():
    """LLMCompass's GPT-3 175B block on 4 A100s (tensor parallel, batch 8; transformer_A100.csv and
    transformerAR_A100.csv, their last two rows: the all-reduces after attention and after the FFN).
    Prefill: 8 x 2,048 tokens x 12,288 x 2 B = 402,653,184 B each, measured 2.891 ms; ours 6 hops of
    8.92 us + 1.5 x S / 300 GB/s = 2.067 ms (0.71x: NCCL's bus bandwidth, 78% of the links', as for the
    large all-reduces above). Decode: 8 x 12,288 x 2 B = 196,608 B, measured 26.04 us; ours 54.50 us
    (2.1x: the hops' latency, LLMCompass's 8.92 us each, as for the small ones): the alpha-beta model.
    NCCL's (nvlink3's default): prefill ring Simple 28.8 us + 1.5 x S / 240 GB/s = 2.545 ms (0.88x),
    decode ring LL 10.2 us + 196,608 B at 58.47 GB/s on 12 of 24 channels = 16.93 us (0.65x)."""
    from pathlib import Path
    base = Path(__file__).resolve().parents[1] / "data" / "llmcompass_a100"
    measured = {}
    for name, phase in (("transformer_A100.csv", "prefill"), ("transformerAR_A100.csv", "decode")):
        vals = [float(x) for x in (base / name).read_text().split()]
        assert len(vals) == 12 and vals[-1] == vals[-2]   # AllReduce_MHA, AllReduce_FFN
        measured[phase] = vals[-1]
    assert measured == {"prefill": 0.0028909, "decode": 26.04e-6}
    net = _alpha_beta("nvlink3")
    pre = collective_cost("all_reduce", 8 * 2048 * 12288 * 2, 4, net).time_s
    dec = collective_cost("all_reduce", 8 * 12288 * 2, 4, net).time_s
    assert pre == pytest.approx(6 * 8.92e-6 + 1.5 * 402653184 / 300e9, rel=1e-12)
    assert pre / measured["prefill"] == pytest.approx(0.715, abs=0.005)
    assert dec / measured["decode"] == pytest.approx(2.093, abs=0.005)
    nccl = interconnect("nvlink3")
    pre = collective_cost("all_reduce", 8 * 2048 * 12288 * 2, 4, nccl).time_s
    dec = collective_cost("all_reduce", 8 * 12288 * 2, 4, nccl)
    assert pre == pytest.approx((28.8 + 402653184 / (240e3 * 4 / 6)) * 1e-6, rel=1e-9)
    assert pre / measured["prefill"] == pytest.approx(0.880, abs=0.005)
    # 196,608 B = 12 x 512 threads x 8 x 4 ranks: 12 of the 24 channels, 87.7 x 4 / 6 GB/s x 12 / 24
    assert dec.time_s == pytest.approx((10.2 + 196608 * 24 / 12 / (87.7e3 * 4 / 6)) * 1e-6, rel=1e-9)
    assert dec.time_s / measured["decode"] == pytest.approx(0.650, abs=0.005)


def test_2d_torus_all_reduce_by_hand():
    """8 chips on a 2D torus: a grid of 2 x 4; 4 links of 25 GB/s per chip, half (50 GB/s) along each
    dimension; 1 us per hop. All-reduce of S = 1 MB: reduce-scatter over the 2 rows' chips (1 hop,
    S / 2 sent), all-reduce of S / 2 over 4 (6 hops, 2 x 3/4 x S / 2 sent), all-gather (1 hop, S / 2):
    8 hops = 8 us and (0.5 + 0.75 + 0.5) MB / 50 GB/s = 35 us. 9 chips: 3 x 3."""
    net = Interconnect("t", links=4, gbps_per_link=25.0, latency_us=1.0, topology="torus2d")
    c = collective_cost("all_reduce", 1e6, 8, net)
    assert c.time_s == pytest.approx(8e-6 + 1.75e6 / 50e9, rel=1e-12)
    assert c.sent_bytes == pytest.approx(1.75e6)
    # 3 x 3: 2 x 2 + 2 x 2 hops; (2 x 2/3 + 2 x 2/3 / 3) x S
    assert collective_cost("all_reduce", 1e6, 9, net).time_s == pytest.approx(8e-6 + (4 / 3 + 4 / 9) * 1e6 / 50e9)
    # a prime count is one row: a ring over all the links
    ring = Interconnect("r", links=4, gbps_per_link=25.0, latency_us=1.0, topology="ring")
    assert collective_cost("all_reduce", 1e6, 7, net).time_s == collective_cost("all_reduce", 1e6, 7, ring).time_s
    # the torus moves less per chip than one ring over its 8 chips, at half the bandwidth per dimension
    assert collective_cost("all_gather", 1e6, 8, net).time_s == pytest.approx(4e-6 + 0.875e6 / 50e9)
