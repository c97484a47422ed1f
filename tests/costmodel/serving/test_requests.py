"""Traces read as the public traces spell them, bad rows refused naming the file, row and column;
synthetic loads seeded and distributed as asked."""

import json

import numpy as np
import pytest

from costmodel.serving import TraceError, parse_lengths, read_trace, synthetic


def write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return p


@pytest.mark.parametrize("name, text", [
    ("vidur.csv", "arrived_at,num_prefill_tokens,num_decode_tokens\n0.5,100,10\n1.0,200,20\n"),
    ("azure.csv", "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,100,10\n"
                  "2023-11-16 18:15:47.1805900,200,20\n"),
    ("vllm.jsonl", '{"arrival_time": 3.0, "input_len": 100, "output_len": 10}\n'
                   '{"arrival_time": 3.5, "input_len": 200, "output_len": 20}\n'),
])
def test_each_public_spelling_is_read(tmp_path, name, text):
    r = read_trace(write(tmp_path, name, text))
    np.testing.assert_allclose(r.arrival_s, [0.0, 0.5])     # from the first arrival
    assert r.prompt.tolist() == [100, 200] and r.output.tolist() == [10, 20]


def test_other_names_are_mapped_and_a_length_only_file_arrives_at_once(tmp_path):
    p = write(tmp_path, "mine.csv", "t,in,out\n1,5,6\n")
    r = read_trace(p, {"arrival": "t", "prompt": "in", "output": "out"})
    assert r.prompt.tolist() == [5]
    r = read_trace(write(tmp_path, "lens.csv", "in,out\n5,6\n7,8\n"), {"arrival": None, "prompt": "in", "output": "out"})
    assert r.arrival_s.tolist() == [0.0, 0.0]


@pytest.mark.parametrize("text, match", [
    ("arrived_at,num_prefil_tokens,num_decode_tokens\n0,1,1\n", r"no prompt column: looked for .*num_prefill_tokens"),
    ("arrived_at,num_prefill_tokens,num_decode_tokens\n0,abc,1\n", r"row 1, column num_prefill_tokens: 'abc' is not a number"),
    ("arrived_at,num_prefill_tokens,num_decode_tokens\n0,10,1\n-1,10,1\n", r"row 2, column arrived_at: arrival '-1' is before"),
    ("arrived_at,num_prefill_tokens,num_decode_tokens\n-2,10,1\n", r"row 1, column arrived_at: negative arrival"),
    ("arrived_at,num_prefill_tokens,num_decode_tokens\n0,10,0\n", r"row 1, column num_decode_tokens: '0': a request needs at least 1"),
    ("arrived_at,num_prefill_tokens,num_decode_tokens\n0,10.5,1\n", r"not a whole number"),
    ("arrived_at,num_prefill_tokens,num_decode_tokens\n0,9000,1\n", r"row 1, column num_prefill_tokens: a prompt of 9,000 tokens is longer than the model's context of 8,192"),
    ("arrived_at,num_prefill_tokens,num_decode_tokens\n", r"no requests"),
    ("arrived_at,num_prefill_tokens,num_decode_tokens\nyesterday,1,1\n", r"neither seconds nor a date-time"),
])
def test_bad_rows_name_the_file_row_and_column(tmp_path, text, match):
    p = write(tmp_path, "bad.csv", text)
    with pytest.raises(TraceError, match=match) as e:
        read_trace(p, max_context=8192)
    assert "bad.csv" in str(e.value)


def test_bad_jsonl_and_missing_files(tmp_path):
    with pytest.raises(TraceError, match=r"row 2: not a JSON object"):
        read_trace(write(tmp_path, "x.jsonl", json.dumps({"arrival_time": 0, "input_len": 1, "output_len": 1}) + "\n{oops\n"))
    with pytest.raises(TraceError, match="no such trace file"):
        read_trace(tmp_path / "none.csv")
    with pytest.raises(TraceError, match="column 'zz' \\(given for prompt\\) is not in the file"):
        read_trace(write(tmp_path, "y.csv", "arrived_at,a,num_decode_tokens\n0,1,1\n"), {"prompt": "zz"})


def test_a_synthetic_load_is_seeded_and_poisson():
    a = synthetic(5.0, count=20000, prompt="lognormal:1000:0.5", output="uniform:10:20", seed=7)
    b = synthetic(5.0, count=20000, prompt="lognormal:1000:0.5", output="uniform:10:20", seed=7)
    np.testing.assert_array_equal(a.arrival_s, b.arrival_s)
    gaps = np.diff(a.arrival_s)
    assert gaps.mean() == pytest.approx(0.2, rel=0.03) and gaps.std() / gaps.mean() == pytest.approx(1.0, rel=0.03)
    assert np.median(a.prompt) == pytest.approx(1000, rel=0.03)
    assert a.output.min() == 10 and a.output.max() == 20
    g = synthetic(5.0, count=20000, cv=3.0, seed=1)
    gg = np.diff(g.arrival_s)
    assert gg.std() / gg.mean() == pytest.approx(3.0, rel=0.1)


def test_a_duration_and_trace_lengths(tmp_path):
    d = synthetic(10.0, duration_s=100.0, seed=1)
    assert len(d) == pytest.approx(1000, rel=0.1) and d.arrival_s[-1] < 100
    tr = read_trace(write(tmp_path, "t.csv", "arrived_at,num_prefill_tokens,num_decode_tokens\n0,11,3\n1,22,4\n"))
    s = synthetic(2.0, count=50, prompt="trace", output="trace", lengths_from=tr, seed=0)
    assert set(zip(s.prompt.tolist(), s.output.tolist())) <= {(11, 3), (22, 4)}   # pairs kept together


@pytest.mark.parametrize("kw, match", [({"rate": 0}, "rate = 0"), ({"rate": -1}, "rate = -1"),
                                       ({"rate": 1, "cv": 0}, "cv = 0"), ({"rate": 1, "count": 0}, "requests = 0")])
def test_bad_load_options(kw, match):
    kw.setdefault("count", 10)
    with pytest.raises(TraceError, match=match):
        synthetic(**kw)


@pytest.mark.parametrize("text", ["0", "uniform:5:2", "lognormal:0:1", "normal:3:4", "x"])
def test_bad_lengths(text):
    with pytest.raises(TraceError, match="prompt"):
        parse_lengths(text, "prompt")


def test_at_rate_scales_the_gaps():
    a = synthetic(2.0, count=100, seed=1)
    b = a.at_rate(4.0)
    np.testing.assert_allclose(b.arrival_s, a.arrival_s * a.rate / 4.0)
    assert b.rate == pytest.approx(4.0)
