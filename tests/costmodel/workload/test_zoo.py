"""Tests of the network zoo (costmodel/zoo): data files, loader, MAC totals vs published figures."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from costmodel.workload import Layer, Network
from costmodel.zoo import (
    DEFAULT_TOLERANCE,
    is_transformer,
    list_networks,
    load_network,
    load_network_file,
    network_file_info,
    network_info,
)
from paths import DATA, SHARED

CANONICAL = [
    "alexnet", "vgg16", "googlenet_v1", "squeezenet_v11", "resnet18", "resnet34", "resnet50",
    "resnext50_32x4d", "darknet19", "mobilenet_v2", "yolov2", "deepbench_ocr", "deepbench_face",
]
DEEPOPT = ["alexnet", "vgg16", "googlenet_v1", "squeezenet_v11", "resnet50"]
ALL = CANONICAL + [f"{n}_deepopt" for n in DEEPOPT]

#: DeepOpt's layer tables, shipped (tests/data/deepopt/README.md: copies of
#: ../shared/reference/deepopt/, from the authors' repository manasiumn37/DeepOpt).
DEEPOPT_REF = DATA / "deepopt"
SHARED_DEEPOPT = SHARED / "reference" / "deepopt"
#: The CSV layer tables (the transformers are configs with published parameter counts instead,
#: tests/costmodel/workload/test_transformers.py).
CSV_NETWORKS = [n for n in list_networks() if not is_transformer(n)]


def layer(net: Network, name: str) -> Layer:
    for l, _ in net:
        if l.name == name:
            return l
    raise AssertionError(f"{net.name} has no layer {name!r}")


# ----------------------------------------------------------------------------- listing & metadata

def test_list_networks_has_the_zoo():
    names = list_networks()
    assert names == sorted(names)
    assert set(ALL) <= set(names)


@pytest.mark.parametrize("name", CSV_NETWORKS)
def test_metadata_complete(name):
    info = network_info(name)
    for key in ("name", "description", "source", "published_macs", "published_macs_source"):
        assert info.get(key) not in (None, ""), f"{name}: metadata {key!r} missing"
    assert info["name"] == name
    assert isinstance(info["published_macs"], int) and info["published_macs"] > 0
    assert 0 <= info["tolerance"] < 0.1
    assert "conv" in info["description"].lower() and "fully-connected" in info["description"].lower()


@pytest.mark.parametrize("name", CSV_NETWORKS)
def test_total_macs_match_published(name):
    """Conv + FC MACs of the layer table vs the figure published by the cited source."""
    net = load_network(name)
    info = network_info(name)
    pub = info["published_macs"]
    rel = abs(net.macs - pub) / pub
    assert rel <= info["tolerance"], (
        f"{name}: {net.macs:,} MACs vs published {pub:,} ({info['published_macs_source']}): "
        f"relative error {rel:.4%} > tolerance {info['tolerance']:.4%}")


@pytest.mark.parametrize("name", list_networks())
def test_rows_well_formed(name):
    net = load_network(name)
    names = [l.name for l, _ in net]
    assert len(names) == len(set(names))
    for l, r in net:
        assert r >= 1
        if l.kind == "fc":
            assert (l.OY, l.OX, l.FY, l.FX, l.G) == (1, 1, 1, 1, 1)
        if l.kind == "dwconv":
            assert l.C == 1 and l.G > 1
    assert net.source


def test_load_network_is_cached_and_info_is_a_copy():
    assert load_network("resnet50") is load_network("resnet50")
    info = network_info("resnet50")
    info["published_macs"] = 0
    assert network_info("resnet50")["published_macs"] == 4_089_000_000


def test_default_tolerance():
    assert DEFAULT_TOLERANCE == 0.005


# ----------------------------------------------------------------------------- hand-checked spot checks

def test_vgg16_spot_checks():
    net = load_network("vgg16")
    assert layer(net, "conv1_1").macs == 224 * 224 * 64 * 3 * 9 == 86_704_128
    assert layer(net, "conv5_3").macs == 14 * 14 * 512 * 512 * 9
    assert layer(net, "fc6").macs == 25088 * 4096
    assert net.layer_count == 16
    assert sum(l.macs * r for l, r in net if l.kind == "fc") == 123_633_664
    assert round(net.macs / 1e9, 2) == 15.47  # torchvision 15.47 GFLOPS (= GMACs)


def test_resnet50_spot_checks():
    net = load_network("resnet50")
    assert net.layer_count == 54  # 53 conv + 1 fc
    assert sum(r for l, r in net if l.kind == "conv") == 53
    assert sum(r for l, r in net if l.kind == "fc") == 1
    assert round(net.macs / 1e9, 2) == 4.09  # torchvision "GFLOPS 4.09"
    conv1 = layer(net, "conv1")
    assert conv1.macs == 112 * 112 * 64 * 3 * 49 == 118_013_952
    # v1.5: stride 2 on the 3x3 of the first block of stages 2-4, the 1x1 before it at full size
    assert (layer(net, "layer2.0.conv1").OY, layer(net, "layer2.0.conv1").SY) == (56, 1)
    assert (layer(net, "layer2.0.conv2").OY, layer(net, "layer2.0.conv2").SY) == (28, 2)
    assert layer(net, "fc").macs == 2048 * 1000


def test_resnet18_34_layer_counts():
    assert load_network("resnet18").layer_count == 21  # 17 conv3x3 + 3 projections + fc
    assert load_network("resnet34").layer_count == 37  # 33 conv3x3 + 3 projections + fc


def test_alexnet_grouped():
    net = load_network("alexnet")
    expected = (
        55 * 55 * 96 * 3 * 11 * 11            # conv1
        + 2 * 27 * 27 * 128 * 48 * 5 * 5      # conv2, 2 groups
        + 13 * 13 * 384 * 256 * 3 * 3         # conv3
        + 2 * 13 * 13 * 192 * 192 * 3 * 3     # conv4, 2 groups
        + 2 * 13 * 13 * 128 * 192 * 3 * 3     # conv5, 2 groups
        + 9216 * 4096 + 4096 * 4096 + 4096 * 1000
    )
    assert net.macs == expected == 724_406_816  # Sze et al. 2017: 724M
    assert [l.G for l, _ in net][:5] == [1, 2, 1, 2, 2]
    assert layer(net, "conv1").IY == 227
    assert layer(net, "conv2").IY == 31


def test_googlenet_layer_count_and_modules():
    net = load_network("googlenet_v1")
    assert net.layer_count == 58  # 3 stem convs + 9 x 6 inception convs + fc
    i3a = [l for l, _ in net if l.name.startswith("inception3a")]
    assert sum(l.macs for l in i3a) == 128_049_152  # Table 1 lists 128M ops for inception (3a)
    assert layer(net, "inception5b_5x5").FY == 5


def test_mobilenet_v2_depthwise():
    net = load_network("mobilenet_v2")
    dws = [(l, r) for l, r in net if l.kind == "dwconv"]
    assert sum(r for _, r in dws) == 17
    first = layer(net, "block1_dw")
    assert (first.G, first.K, first.C, first.OY) == (32, 1, 1, 112)
    assert first.macs == 32 * 112 * 112 * 9
    assert net.layer_count == 53  # stem + 2 + 16*3 + conv 1x1 + classifier


def test_resnext_grouped_conv():
    l2 = layer(load_network("resnext50_32x4d"), "layer2.x.conv2")
    assert (l2.G, l2.K, l2.C, l2.OY) == (32, 8, 8, 28)


def test_darknet_family():
    d19 = load_network("darknet19")
    assert d19.layer_count == 19
    assert round(2 * d19.macs / 1e9, 2) == 5.58  # YOLO9000: "5.58 billion operations"
    y2 = load_network("yolov2")
    assert layer(y2, "conv1").OY == 416 and layer(y2, "conv23_detect").K == 125
    assert layer(y2, "conv22").C == 1024 + 4 * 64  # reorg of the 64-channel passthrough
    assert round(2 * y2.macs / 1e9, 2) == 29.36  # 29.371 BFLOPs incl. 0.011 of max pools


def test_deepbench_kernels():
    ocr = load_network("deepbench_ocr")
    assert [(l.C, l.K, l.OY, l.OX) for l, _ in ocr] == [(1, 16, 48, 480), (16, 32, 24, 240),
                                                         (32, 64, 12, 120), (64, 128, 6, 60)]
    face = load_network("deepbench_face")
    f1 = layer(face, "face1_108x108x3_k64")
    assert (f1.OY, f1.OX, f1.SY, f1.PY) == (54, 54, 2, 1)
    assert all(l.B == 1 and r == 1 for l, r in list(ocr) + list(face))


# ----------------------------------------------------------------------------- loader errors

def test_unknown_network_keyerror_lists_names():
    with pytest.raises(KeyError) as ei:
        load_network("resnet51")
    msg = str(ei.value)
    assert "resnet51" in msg and "resnet50" in msg and "vgg16" in msg
    with pytest.raises(KeyError):
        network_info("nope")


GOOD = """\
# name: tiny
# description: a test net
#   continued description
# published_macs: 1_000
name,K,C,OY,OX,FY,FX,B,G,SY,SX,PY,PX,kind,repeat
c1,8,3,4,4,3,3,1,1,1,1,1.5,1,conv,2
# a comment between rows
dw,1,1,4,4,3,3,1,8,1,1,1,1,dwconv,1

fc,10,128,1,1,1,1,4,1,1,1,0,0,fc,1
"""


def test_user_file_loads(tmp_path):
    p = tmp_path / "mynet.csv"
    p.write_text(GOOD)
    net = load_network_file(p)
    assert net.name == "tiny"
    assert net.repeats == (2, 1, 1)
    assert net.layers[0].PY == 1.5 and net.layers[0].PX == 1 and isinstance(net.layers[0].PX, int)
    assert net.macs == 2 * 8 * 3 * 16 * 9 + 8 * 16 * 9 + 4 * 10 * 128
    info = network_file_info(p)
    assert info["description"] == "a test net continued description"
    assert info["published_macs"] == 1000 and info["tolerance"] == DEFAULT_TOLERANCE


def test_user_file_minimal_and_default_repeat(tmp_path):
    p = tmp_path / "plain.csv"
    p.write_text("name,K,C,OY,OX,FY,FX,B,G,SY,SX,PY,PX,kind\nx,4,4,2,2,1,1,1,1,1,1,0,0,conv\n")
    net = load_network_file(p)
    assert net.name == "plain" and net.repeats == (1,)


def test_zoo_file_loads_as_user_file():
    import costmodel.zoo as zoo
    path = Path(zoo.__file__).with_name("resnet50.csv")
    assert load_network_file(path) == load_network("resnet50")


HEAD = "name,K,C,OY,OX,FY,FX,B,G,SY,SX,PY,PX,kind,repeat\n"


@pytest.mark.parametrize("row, col, colname, fragment", [
    ("c,abc,3,4,4,3,3,1,1,1,1,1,1,conv,1", 2, "K", "'abc'"),
    ("c,8,3,4,4,3,3,1,1,1,1,1,1,conv,0", 15, "repeat", "'0'"),
    ("c,8,-3,4,4,3,3,1,1,1,1,1,1,conv,1", 3, "C", "'-3'"),
    ("c,8,3,4,4,3,3,1,1,1,1,x,1,conv,1", 12, "PY", "'x'"),
    ("c,8,3,4,4,3,3,1,1,1,1,1,-1,conv,1", 13, "PX", "'-1'"),
    ("c,8,3,4,4,3,3,1,1,1,1,1,1,pool,1", 14, "kind", "'pool'"),
    ("c,8,3,,4,3,3,1,1,1,1,1,1,conv,1", 4, "OY", "empty"),
    ("c,8,3,4,4,3,3,1,1,1,1,1,1.5e,conv,1", 13, "PX", "'1.5e'"),
    ("c,8,3,2,2,1,1,1,1,1,1,0,0,fc,1", 4, "OY", "fc"),
    ("c,1,2,2,2,3,3,1,4,1,1,1,1,dwconv,1", 3, "C", "dwconv"),
    ("c,8,3,4,4,3,3,1,1,1.5,1,1,1,conv,1", 10, "SY", "'1.5'"),
])
def test_bad_rows_name_line_and_column(tmp_path, row, col, colname, fragment):
    p = tmp_path / "bad.csv"
    p.write_text("# name: bad\n" + HEAD + "ok,8,3,4,4,3,3,1,1,1,1,1,1,conv,1\n" + row + "\n")
    with pytest.raises(ValueError) as ei:
        load_network_file(p)
    msg = str(ei.value)
    assert f"{p}:4" in msg, msg
    assert f"column {col} ('{colname}')" in msg, msg
    assert fragment in msg, msg


def test_bad_file_structure(tmp_path):
    p = tmp_path / "bad.csv"
    p.write_text(HEAD + "a,8,3,4,4,3,3,1,1,1,1,1,1,conv\n")
    with pytest.raises(ValueError, match=r"bad\.csv:2: expected 15 columns, got 14"):
        load_network_file(p)
    p.write_text(HEAD + "a,8,3,4,4,3,3,1,1,1,1,1,1,conv,1\na,8,3,4,4,3,3,1,1,1,1,1,1,conv,1\n")
    with pytest.raises(ValueError, match=r"bad\.csv:3: column 1 \('name'\): duplicate layer name 'a'"):
        load_network_file(p)
    p.write_text("name,K,C,OY,OX,FY,FX,B,G,SY,SX,PY,PX,kind,wat\n")
    with pytest.raises(ValueError, match=r"bad\.csv:1: column 15 \('wat'\): unknown column"):
        load_network_file(p)
    p.write_text("# name: x\nname,K,C,OY,OX,FY,FX,B,G,SY,SX,PY,kind\n")
    with pytest.raises(ValueError, match=r"bad\.csv:2: header lacks column\(s\) PX"):
        load_network_file(p)
    p.write_text("# only comments\n")
    with pytest.raises(ValueError, match="no CSV header"):
        load_network_file(p)
    p.write_text(HEAD)
    with pytest.raises(ValueError, match="no layer rows"):
        load_network_file(p)
    p.write_text("# published_macs: lots\n" + HEAD + "a,8,3,4,4,3,3,1,1,1,1,1,1,conv,1\n")
    with pytest.raises(ValueError, match="published_macs must be an integer"):
        load_network_file(p)
    with pytest.raises(ValueError, match="cannot read"):
        load_network_file(tmp_path / "missing.csv")


# ----------------------------------------------------------------------------- DeepOpt variants

GROUPED = {"alexnet": {2, 4, 5}}


def _ref(net: str) -> list[dict]:
    """DeepOpt's table of ``net`` from the shipped copy; where the shared reference folder is
    beside the repository, the copy must still equal it."""
    path = DEEPOPT_REF / f"deepopt_{net}.csv"
    shared = SHARED_DEEPOPT / path.name
    if shared.is_file():
        assert path.read_bytes() == shared.read_bytes(), f"{path} differs from {shared}: copy it again"
    with path.open() as f:
        return list(csv.DictReader(f))


@pytest.mark.parametrize("net", DEEPOPT)
def test_deepopt_variant_reproduces_every_row(net):
    rows = _ref(net)
    zoo = load_network(f"{net}_deepopt")
    assert len(zoo) == len(rows) and zoo.layer_count == len(rows)
    total = 0
    for (l, rep), r in zip(zoo, rows):
        n = int(r["layer"])
        assert l.name.startswith(f"L{n:02d}_")
        K = int(r.get("K") or r["K(filters)"])
        E, R, S = int(r["ofmap_HW"]), int(r["R=S"]), int(r["stride"])
        fc = r["fc"] == "1"
        G = 2 if n in GROUPED.get(net, ()) else 1
        assert rep == 1
        assert (l.K, l.C, l.G) == (K, int(r["C"]), G), l.name
        assert (l.OY, l.OX, l.FY, l.FX, l.SY, l.SX) == (E, E, R, R, S, S), l.name
        assert l.B == int(r["batch"]), l.name
        assert l.kind == ("fc" if fc else "conv"), l.name
        if "pad" in r:
            pad = float(r["pad"])
            assert l.PY == l.PX == pad, l.name
            assert l.IY == l.IX == int(r["ifmap_unpadded_HW"]) + 2 * pad, l.name
        else:
            assert l.IY == l.IX == int(r["ifmap_padded_HW"]), l.name
        total += G * int(r["batch"]) * K * int(r["C"]) * R * R * E * E
    assert zoo.macs == total == network_info(f"{net}_deepopt")["published_macs"]


@pytest.mark.parametrize("net", ["alexnet", "vgg16", "googlenet_v1"])
def test_deepopt_convs_equal_canonical(net):
    """Where DeepOpt's shapes agree with the canonical network, only the FC batch (and the
    fractional conv1 pad of GoogLeNet) differ."""
    can = [l for l, _ in load_network(net) if l.kind != "fc"]
    var = [l for l, _ in load_network(f"{net}_deepopt") if l.kind != "fc"]
    key = lambda l: (l.K, l.C, l.OY, l.OX, l.FY, l.FX, l.B, l.G, l.SY, l.SX, l.IY)
    assert sorted(map(key, can)) == sorted(map(key, var))
    for l, _ in load_network(f"{net}_deepopt"):
        if l.kind == "fc":
            assert l.B == 16


def test_deepopt_documented_differences():
    sq = load_network("squeezenet_v11_deepopt")
    c1 = sq.layers[0]
    assert (c1.OY, c1.PY, c1.IY) == (113, 1.5, 227)
    assert load_network("squeezenet_v11").layers[0].OY == 111
    rn = load_network("resnet50_deepopt")
    l12 = layer(rn, "L12_res3a_branch2a")
    assert (l12.FY, l12.SY, l12.OY, l12.IY) == (1, 2, 28, 55)  # stride on the 1x1, trimmed ifmap
    assert layer(rn, "L01_conv1").PY == 2.5
    conv_macs = sum(l.macs for l, _ in rn if l.kind == "conv")
    assert round(conv_macs / 1e9, 2) == 3.86  # ResNet-50 v1 conv MACs (Sze et al. 2017: 3.86G)
