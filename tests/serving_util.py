"""Toy cost tables for the event loop's hand-worked cases: every part's cost given in closed form,
so a test can work out each iteration's time on paper."""

import numpy as np

from costmodel.serving import CostTable


def toy_table(dense=(1.0, 0.0), head=0.0, decode=(0.0, 0.0), chunk_per_pair=0.0, max_tokens=8192,
              max_context=65536) -> CostTable:
    """dense(T) = dense[0] + dense[1] x T s; head(S) = head s; a decode's attention at context c =
    decode[0] + decode[1] x c s; a chunk's = chunk_per_pair x its pairs s. Energy: 1 J per second
    of each part. No launches, no host time."""
    tok = np.array([1.0, float(max_tokens)])
    seqs = np.array([1.0, 4096.0])
    ctx = np.array([1.0, float(max_context)])
    cq = np.array([2.0, float(max_tokens)])
    cp = np.array([0.0, float(max_context)])
    pairs = np.array([[q * p + q * (q + 1) / 2 for p in cp] for q in cq])
    d = dense[0] + dense[1] * tok
    dec = decode[0] + decode[1] * ctx
    ch = chunk_per_pair * pairs
    return CostTable(tokens=tok, dense_s=d, dense_j=d, dense_launches=np.zeros(2), seqs=seqs,
                     head_s=np.full(2, head), head_j=np.full(2, head), head_launches=0, contexts=ctx, decode_s=dec,
                     decode_j=dec, chunk_q=cq, chunk_p=cp, chunk_s=ch, chunk_j=ch)
