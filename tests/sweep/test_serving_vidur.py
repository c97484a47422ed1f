"""Side by side with Vidur on the same 300 requests (`scripts/serving_vidur.py`; Vidur's run pinned in
tests/data/peers_serving/, SOURCES.md): with our costs scaled to Vidur's median decode iteration, the
two schedulers form the same batches (the scheduling alone compared); unscaled, the gap is the
per-operation cost gap docs/serving.md decomposes (ours faster on the A100: GEMMs streaming weights
nearer the HBM's peak, element-wise kernels without a fixed time, no CPU cost in either)."""

import json

import numpy as np
import pytest

from sweep.commands.peers_serving import PINNED, batch_figures, serve_pinned
from sweep.serving.serve import setup

pytestmark = pytest.mark.slow
GRIDS = {"tokens": [1, 2, 4, 8, 16, 24, 32, 48, 64, 128, 256, 512, 1024, 1536, 2048], "seqs": [1, 8, 16, 64, 256],
         "contexts": [1, 256, 1024, 2048, 4096, 8192], "chunk_q": [2, 64, 256, 1024, 2048],
         "chunk_p": [0, 512, 2048, 4096, 8190]}


@pytest.fixture(scope="module")
def runs():
    pinned = json.loads(PINNED.read_text())
    st = setup("llama3_8b", "a100", launch_us=0.0, host_s=0.0, grids=GRIDS, workers=2,
               scheduler={"max_num_seqs": 256, "max_num_batched_tokens": 2048, "block_size": 16, "graphs": "graph"})
    ours = serve_pinned(st, pinned)
    vb = pinned["batches"]
    vidur = batch_figures(vb["tokens"], vb["prefill_tokens"], vb["decode_tokens"], vb["size"], vb["time_s"])
    fig = lambda r: batch_figures(r.iterations["tokens"], r.iterations["prefill_tokens"],  # noqa: E731
                                  r.iterations["decode_tokens"], r.iterations["sequences"], r.iterations["duration_s"])
    scale = vidur["decode_iteration_p50_ms"] / fig(ours)["decode_iteration_p50_ms"]
    matched = serve_pinned(st, pinned, scale)
    return pinned, vidur, fig(ours), fig(matched), matched, scale


def test_same_work_same_mixed_iterations(runs):
    _, vidur, ours, matched, _, _ = runs
    assert ours["tokens_total"] == matched["tokens_total"]
    assert ours["tokens_total"] == pytest.approx(vidur["tokens_total"], rel=0.002)   # +1 token each: ours samples at prefill
    assert matched["mixed"] == pytest.approx(vidur["mixed"], rel=0.03)               # 336 in Vidur: chunks beside decodes


def test_with_costs_matched_the_batches_are_vidurs(runs):
    _, vidur, _, matched, _, _ = runs
    assert matched["iterations"] == pytest.approx(vidur["iterations"], rel=0.10)
    assert matched["mean_size"] == pytest.approx(vidur["mean_size"], rel=0.10)
    assert matched["size_p90"] == pytest.approx(vidur["size_p90"], abs=1)


def test_with_costs_matched_the_latencies_are_vidurs(runs):
    pinned, _, _, _, matched, _ = runs
    from costmodel.serving import request_figures
    f = request_figures(matched)
    for k in ("e2e_s", "tpot_s"):
        assert np.median(f[k]) == pytest.approx(np.median(pinned["requests"][k]), rel=0.10), k


def test_our_a100_decode_iteration_is_faster_than_vidurs_measured_one(runs):
    # the silicon gap this comparison measures (docs/serving.md): when the a100 preset's GEMMs and
    # element-wise kernels take their measured times, this ratio moves to 1 and the pins must too
    _, vidur, ours, _, _, scale = runs
    assert 1.15 < scale < 1.45
