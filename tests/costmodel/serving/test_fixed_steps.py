"""`costmodel.serving.table.fixed_steps`: the fixed-batch step figures read off a cost table,
worked by hand on a toy table (every part's cost in closed form, tests/serving_util.py)."""

import pytest

from costmodel.serving import fixed_steps
from tests.serving_util import toy_table


def test_a_prompt_alone_and_a_decode_batch_by_hand():
    # dense(T) = 1 ms + 2 us x T; head 0.5 ms; a decode's attention 0.1 ms + 1 ns x c;
    # a chunk's attention 1 ns per query-key pair
    t = toy_table(dense=(1e-3, 2e-6), head=5e-4, decode=(1e-4, 1e-9), chunk_per_pair=1e-9)
    got = fixed_steps(t, max_tokens=1024, prompt=2048, batch=16, context=2048)
    # the prompt in two chunks of 1,024: pairs 1024*0 + 1024*1025/2, then 1024*1024 + 1024*1025/2
    first = 1e-3 + 2e-6 * 1024 + 5e-4 + 1e-9 * (1024 * 1025 / 2)
    second = 1e-3 + 2e-6 * 1024 + 5e-4 + 1e-9 * (1024 * 1024 + 1024 * 1025 / 2)
    assert got["prefill_s"] == pytest.approx(first + second, rel=1e-9)
    # 16 decodes at context 2,048: dense(16) + head + 16 x (0.1 ms + 2,048 ns)
    dec = 1e-3 + 2e-6 * 16 + 5e-4 + 16 * (1e-4 + 1e-9 * 2048)
    assert got["decode_s"] == pytest.approx(dec, rel=1e-9)
    assert got["decode_tokens_per_s"] == pytest.approx(16 / dec, rel=1e-9)


def test_counts_below_one_are_refused():
    with pytest.raises(ValueError, match="counts >= 1"):
        fixed_steps(toy_table(), max_tokens=0)
