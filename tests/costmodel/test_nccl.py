"""Collectives as NCCL runs them (costmodel/system/nccl.py): hand calculations from NCCL's formulas,
its protocol choice, the NVLink domain and its crossing, the interconnect tables' errors, and the
agreement with measured A100 all-reduces (costmodel/system/nccl_check.py)."""

import pytest

from costmodel.system.collectives import collective_cost, domain_crossing
from costmodel.system.interconnect import INTERCONNECTS, Interconnect, interconnect
from costmodel.system.nccl import layout, nccl_collective, predict

A100 = interconnect("nvlink3")


def _pair(choices, algo, proto):
    return next(c for c in choices if (c.algorithm, c.protocol) == (algo, proto))


def test_the_a100_node_as_nccl_sees_it():
    # 12 NVLinks x 20 GB/s (topo.h SM80_NVLINK_BW) = 240 GB/s; the search's first speed 40 fits 6 times
    # (240 exactly), duplicated (40 >= 25) to 12 channels of 20; the runtime doubles them to 24.
    lay = layout(A100, 8)
    assert (lay.nodes, lay.intra, lay.channels, lay.bw_channel, lay.runtime_channels, lay.ll128) == \
        (1, "nvlink", 12, 20.0, 24, True)


def test_ring_protocols_by_hand_on_8_a100s():
    # Ring LL, 1 KiB: latency 6.6 + 14 steps x 0.6 = 15.0 us; bus min(87.7 llMax, 0.5 x 240) = 87.7 GB/s,
    # algorithm bandwidth 87.7 x 8 / 14 = 50.114 GB/s: predicted 15.0 + 1024 / 50,114 = 15.0204 us. It runs
    # on 1 of the 24 channels (1,024 B < 1 x 512 threads x 8 x 8 ranks): 15.0 + 1024 x 24 / 50,114 = 15.490.
    c = _pair(predict("all_reduce", 1024, layout(A100, 8)), "ring", "LL")
    assert (c.latency_us, c.algbw_gbps, c.channels) == (pytest.approx(15.0), pytest.approx(87.7 * 8 / 14), 1)
    assert c.predicted_us == pytest.approx(15.0 + 1024 / (1000 * 87.7 * 8 / 14))
    assert c.time_us == pytest.approx(15.0 + 1024 * 24 / (1000 * 87.7 * 8 / 14))
    # Ring LL128, 8 MiB: 14 + 14 x 1.9 = 40.6 us; bus min(0.92 x 240, 12 x 20) = 220.8, x 8 / 14 = 126.17
    # GB/s: 40.6 + 8,388,608 / 126,171 = 107.086 us, on all 24 channels.
    c = _pair(predict("all_reduce", 8 << 20, layout(A100, 8)), "ring", "LL128")
    assert c.predicted_us == pytest.approx(40.6 + 8388608 / (1000 * 220.8 * 8 / 14)) == c.time_us
    assert c.predicted_us == pytest.approx(107.086, abs=1e-3)
    # Ring Simple, 16 GiB on 4: 8.4 + 6 x 3.4 = 28.8 us; 240 x 4 / 6 = 160 GB/s: 28.8 + 107,374.18 us
    # (measured by LLMCompass: 110,277 us, ours 2.6% fast).
    c = _pair(predict("all_reduce", 1 << 34, layout(A100, 4)), "ring", "Simple")
    assert c.time_us == pytest.approx(28.8 + 2 ** 34 / 160e3)


def test_tree_protocols_by_hand():
    one = predict("all_reduce", 1024, layout(A100, 8))
    # Tree LL, 1 KiB in one node: 6.8 + 2 x 7 x 0.6 = 15.2 us; bus min(0.92 x 240, 12 x 24) = 220.8, LL
    # min(220.8 / 3.8, 87.7) = 58.105, x 0.5 = 29.053, x the correction 0.9 (log2(1024 / 64) = 4): 26.147.
    assert _pair(one, "tree", "LL").predicted_us == pytest.approx(15.2 + 1024 / (1000 * 220.8 / 3.8 * 0.5 * 0.9))
    # Tree Simple, 8 MiB in one node: 8.4 + 14 x 4.0 = 64.4 us; 220.8 x 0.5 x 0.8 (log2 = 17) = 88.32 GB/s.
    big = predict("all_reduce", 8 << 20, layout(A100, 8))
    assert _pair(big, "tree", "Simple").predicted_us == pytest.approx(64.4 + 8388608 / 88320)
    # Tree LL128 on 16 A100s, 2 DGX nodes over HDR: speed 24 (<= 25 GB/s NIC), 8 channels (one per NIC),
    # no duplication; bus min(0.92 x 192, 8 x 23.6) = 176.64, LL128 min(x 120 / 128, 8 x 20) = 160, x 0.5
    # x 0.6 (1 MiB: log2 = 14) = 48 GB/s; latency 14 + 2 x (7 x 1.25 + 1 x 8.5) = 48.5 us.
    c = nccl_collective("all_reduce", 1 << 20, 16, A100)
    assert (c.algorithm, c.protocol) == ("tree", "LL128")
    assert c.time_us == pytest.approx(48.5 + 1048576 / 48000)


def test_protocol_choice_by_size_on_8_a100s():
    pick = {s: (c.algorithm, c.protocol) for s in (1024, 8 << 20, 256 << 20)
            for c in [nccl_collective("all_reduce", s, 8, A100)]}
    assert pick == {1024: ("ring", "LL"), 8 << 20: ("ring", "LL128"), 256 << 20: ("ring", "Simple")}
    # NCCL's choice is its least predicted time; ring LL128's 107.1 us at 8 MiB beats Simple's 117.2
    table = predict("all_reduce", 8 << 20, layout(A100, 8))
    assert table[0].predicted_us == min(c.predicted_us for c in table)
    assert _pair(table, "ring", "Simple").predicted_us == pytest.approx(56.0 + 8388608 / (240e3 * 8 / 14))


def test_all_gather_and_point_to_point_by_hand():
    # all-gather of 64 MiB on 8: ring Simple 8.4 + 7 x 3.4 = 32.2 us + 67,108,864 / (240 x 8 / 7 GB/s)
    c = collective_cost("all_gather", 64 << 20, 8, A100)
    assert (c.algorithm, c.protocol) == ("ring", "Simple")
    assert c.time_s == pytest.approx((32.2 + 67108864 / (240e3 * 8 / 7)) * 1e-6)
    # send/receive of 1 MiB: one Simple step 8.4 + 3.4 us + 1 MiB at 240 GB/s
    assert collective_cost("send_recv", 1 << 20, 2, A100).time_s == pytest.approx((11.8 + 1048576 / 240e3) * 1e-6)
    # all-to-all of 8 MiB on 8: 7 shares of 1 MiB over NVLink at once
    assert collective_cost("all_to_all", 8 << 20, 8, A100).time_s == pytest.approx((11.8 + 7 * 1048576 / 240e3) * 1e-6)
    # on 16 (2 nodes): 8 shares of 512 KiB leave over the 25 GB/s NIC, the network's step 8.4 + 14 us
    assert collective_cost("all_to_all", 8 << 20, 16, A100).time_s == pytest.approx((22.4 + 8 * 524288 / 25e3) * 1e-6)


def test_the_domain_and_its_crossing():
    assert domain_crossing(A100, 8, "tp") is None and not collective_cost("all_reduce", 1e6, 8, A100).crosses_domain
    msg = "tp = 16 exceeds the nvlink3 domain of 8 GPUs: 8 GPUs per node, the rest over ib_hdr (25 GB/s per GPU)"
    assert domain_crossing(A100, 16, "tp") == msg
    c = collective_cost("all_reduce", 1e6, 16, A100)
    assert c.crosses_domain and c.warnings == (msg.replace("tp =", "chips ="),)
    assert layout(A100, 16).nodes == 2 and layout(A100, 16).nic_gbps == 25.0
    # A100 PCIe pairs: beyond the bridge the ring crosses PCIe Gen4 (NCCL: 16 x 120 / 80 = 24 GB/s), one node
    lay = layout(interconnect("nvlink3_bridge"), 4)
    assert (lay.nodes, lay.intra, lay.ll128, lay.channels * lay.bw_channel) == (1, "pci", False, 24.0)
    assert "2 GPUs per group, the rest over pcie4_x16" in domain_crossing(interconnect("nvlink3_bridge"), 4)
    nvl72 = interconnect("nvlink5_nvl72")
    assert layout(nvl72, 72).nodes == 1 and domain_crossing(nvl72, 72) is None
    # the alpha-beta model warns too, and costs it on its own links
    ab = Interconnect("ab", 12, 25.0, 1.0, domain=8, scale_out="ib_hdr")
    assert collective_cost("all_reduce", 1e6, 16, ab).crosses_domain


@pytest.mark.parametrize("table, match", [
    ({"model": "mpi"}, r"f.toml: interconnect.model = 'mpi': expected one of \['alpha_beta', 'nccl'\]"),
    ({"link": "nvswitch"}, r"f.toml: interconnect.link = 'nvswitch': expected one of"),
    ({"gpu_arch": "kepler"}, r"f.toml: interconnect.gpu_arch = 'kepler': expected one of"),
    ({"host_cpu": "power"}, r"f.toml: interconnect.host_cpu = 'power'"),
    ({"domain": 0}, r"f.toml: interconnect.domain = 0: expected a positive integer"),
    ({"domain": 8, "scale_out": "ib_xdr"}, r"f.toml: interconnect.scale_out = 'ib_xdr': expected one of"),
    ({"nccl_gbps_per_link": -1}, r"f.toml: interconnect.nccl_gbps_per_link = -1"),
    ({"model": "nccl", "topology": "torus2d"}, r"f.toml: interconnect.topology = 'torus2d': expected switch"),
])
def test_from_dict_errors_name_key_and_value(table, match):
    with pytest.raises(ValueError, match=match):
        Interconnect.from_dict({"links": 4, "gbps_per_link": 25.0, "latency_us": 1.0, **table}, "f.toml")


def test_from_dict_nccl_tables_and_round_trip():
    with pytest.raises(ValueError, match=r"f.toml: interconnect: missing \['gbps_per_link'\]"):
        Interconnect.from_dict({"links": 4, "model": "nccl"}, "f.toml")
    net = Interconnect.from_dict({"links": 12, "gbps_per_link": 25.0, "model": "nccl", "domain": 8,
                                  "scale_out": "ib_hdr"}, "f.toml")
    assert net.latency_us == 0.0 and net.nccl_link_gbps == 20.0      # Ampere NVLink per NCCL
    for name, net in INTERCONNECTS.items():
        d = {k: v for k, v in vars(net).items() if v is not None and v != ""}
        assert Interconnect.from_dict(d) == net, name


def test_bundled_figures_from_their_sources():
    gb = {n: i.bytes_per_s / 1e9 for n, i in INTERCONNECTS.items()}
    assert gb["nvlink3"] == gb["nvlink3_bridge"] == 300 and gb["nvlink4"] == 450    # per direction
    assert gb["nvlink5"] == gb["nvlink5_nvl72"] == 900 and gb["infinity_fabric"] == 448
    assert gb["pcie5_x16"] == pytest.approx(32 * 16 * 128 / 130 / 8, rel=1e-3)
    assert (gb["ib_hdr"], gb["ib_ndr"]) == (25, 50)
    assert {n: i.domain for n, i in INTERCONNECTS.items() if i.domain and i.domain > 1} == {
        "nvlink3": 8, "nvlink3_bridge": 2, "nvlink4": 8, "nvlink5": 8, "nvlink5_nvl72": 72, "infinity_fabric": 8}
    # NCCL runs on every GPU link; a TPU's ICI torus stays alpha-beta
    assert {n for n, i in INTERCONNECTS.items() if i.model == "nccl"} == set(INTERCONNECTS) - {"ici_v5e", "ici_v6e"}
    # Google Cloud TPU docs: 1,600 / 3,584 Gbps per chip over 4 ICI ports, both directions
    assert (gb["ici_v5e"], gb["ici_v6e"]) == (1600 / 8 / 2, 3584 / 8 / 2)
    nccl = {n: i.nccl_link_gbps for n, i in INTERCONNECTS.items()}
    assert (nccl["nvlink3"], nccl["nvlink4"], nccl["nvlink5"], nccl["pcie4_x16"], nccl["pcie5_x16"]) == \
        (20.0, 20.6, 40.1, 24.0, 48.0)


@pytest.fixture(scope="module")
def summaries():
    from costmodel.system.nccl_check import points, summarize
    return {(s.set, s.gpus, s.per_node): s for s in summarize(points())}


# MAPE (%) measured with this model (scripts/silicon_allreduce.py); nothing fitted to the data.
AGREEMENT = {
    ("vidur_dgx", 2, 2): 45.4, ("vidur_dgx", 4, 4): 33.7, ("vidur_dgx", 8, 8): 27.5,
    ("llmcompass", 4, 4): 21.8,
    ("vidur_pairwise", 2, 2): 28.0, ("vidur_pairwise", 4, 4): 4.0,
    ("vidur_dgx", 2, 1): 72.8, ("vidur_dgx", 4, 2): 80.4, ("vidur_dgx", 8, 4): 75.0, ("vidur_dgx", 16, 8): 87.8,
}


@pytest.mark.parametrize("key", list(AGREEMENT))
def test_agreement_with_measured_all_reduces(summaries, key):
    s = summaries[key]
    assert s.n == (32 if key[0] == "llmcompass" else 2248 if key[0] == "vidur_pairwise" else 994)
    assert 100 * s.mape == pytest.approx(AGREEMENT[key], abs=2.0)


def test_the_large_band_and_the_pcie_pairs_agree(summaries):
    """Where NCCL's figures are the bottleneck, they hold: LLMCompass's >= 16 MiB band within 10.0% (16 GiB
    2.6% fast), the PCIe-joined pairs' 1-16 MiB and larger within 5%."""
    bands = {b[0]: b[4] for b in summaries[("llmcompass", 4, 4)].bands}
    assert bands[">= 16 MiB"] == pytest.approx(0.100, abs=0.01)
    pairs = {b[0]: b[4] for b in summaries[("vidur_pairwise", 4, 4)].bands}
    assert pairs["1-16 MiB"] < 0.05 and pairs[">= 16 MiB"] < 0.03
