"""Requests to serve: a trace file read as the public LLM-serving traces spell it, or a seeded
synthetic load.

A request is (arrival time s, prompt tokens, output tokens). `Requests` holds them as arrays sorted
by arrival (ties kept in file order), arrivals measured from the first request (0 s).

**Trace files** (`read_trace`): CSV or JSONL (one JSON object a line), a header naming the columns.
Each of the three fields is found under the first of its spellings the file has (case as written):

========================  ===========================================================================
field                     spellings (source)
========================  ===========================================================================
arrival (s)               ``arrived_at`` (Vidur, Splitwise), ``TIMESTAMP`` (Azure LLM inference
                          traces 2023/2024: a date-time, or seconds), ``arrival_time``, ``timestamp``
prompt tokens             ``num_prefill_tokens`` (Vidur), ``ContextTokens`` (Azure), ``prompt_len``,
                          ``input_len`` / ``input_lens`` (vLLM benchmark outputs), ``prompt_tokens``
output tokens             ``num_decode_tokens`` (Vidur), ``GeneratedTokens`` (Azure),
                          ``output_len`` / ``output_lens`` (vLLM), ``output_tokens``
========================  ===========================================================================

``columns`` maps a field to another column name (``{"arrival": "t", "prompt": "in", "output": "out"}``).
A file with no arrival column (a length-only dataset) is refused unless ``columns["arrival"] =
None`` is given, whose requests all arrive at 0 (a synthetic load can then sample its lengths).

**Synthetic loads** (`synthetic`): arrivals of a Poisson process at ``rate`` (exponential gaps) or a
Gamma renewal process of coefficient of variation ``cv`` (gaps Gamma(shape 1/cv^2, mean 1/rate);
cv = 1 is Poisson, the burstiness knob of the serving literature, e.g. DistServe, OSDI'24, Sec. 6);
lengths fixed, uniform on [lo, hi], lognormal (median, sigma of the log), or sampled with
replacement from a trace's (prompt, output) pairs; ``count`` requests or those arriving before
``duration`` s; one `numpy.random.Generator` from ``seed``: the same seed gives the same requests.

Errors: `TraceError` (a ValueError) naming the file, the row (1-based, the header not counted) and the
column, or the option and its value.
"""

from __future__ import annotations

import csv
import datetime as _dt
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping

import numpy as np

__all__ = ["Requests", "TraceError", "read_trace", "trace_path", "BUNDLED", "synthetic", "Lengths", "parse_lengths", "SPELLINGS"]

#: The column spellings each field is read from, first found wins (module docstring).
SPELLINGS: dict[str, tuple[str, ...]] = {
    "arrival": ("arrived_at", "TIMESTAMP", "arrival_time", "timestamp"),
    "prompt": ("num_prefill_tokens", "ContextTokens", "prompt_len", "input_len", "input_lens", "prompt_tokens"),
    "output": ("num_decode_tokens", "GeneratedTokens", "output_len", "output_lens", "output_tokens"),
}


class TraceError(ValueError):
    """A trace or load that cannot be served: the message names the file, row and column (or the
    option) and the value."""


@dataclass(frozen=True)
class Requests:
    """Requests sorted by arrival.

    Attributes:
        arrival_s: float64 (n,), seconds from the first arrival (non-decreasing, first 0 unless the
            load says otherwise).
        prompt: int64 (n,), prompt tokens (>= 1).
        output: int64 (n,), output tokens to generate (>= 1).
        source: where they come from (a file's name, or the synthetic load's description).
    """

    arrival_s: np.ndarray
    prompt: np.ndarray
    output: np.ndarray
    source: str = ""
    dropped: tuple[int, ...] = ()    # rows of the file left out (prompts past the context, on request)

    def __post_init__(self) -> None:
        n = len(self.arrival_s)
        if len(self.prompt) != n or len(self.output) != n:
            raise TraceError(f"{self.source}: arrival, prompt and output arrays differ in length")

    def __len__(self) -> int:
        return len(self.arrival_s)

    @property
    def duration_s(self) -> float:
        """Seconds from the first arrival to the last."""
        return float(self.arrival_s[-1] - self.arrival_s[0]) if len(self) else 0.0

    @property
    def rate(self) -> float:
        """Offered load (requests/s): (n - 1) / duration; inf for one request or all at once."""
        d = self.duration_s
        return (len(self) - 1) / d if d > 0 else math.inf

    def at_rate(self, rate: float) -> "Requests":
        """The same requests with their arrival gaps scaled so the offered load is ``rate``
        requests/s (a trace replayed faster or slower, its burstiness kept)."""
        _positive("rate", rate)
        if self.duration_s <= 0:
            raise TraceError(f"{self.source}: every request arrives at once: no rate to scale")
        scale = self.rate / rate
        return Requests(self.arrival_s * scale, self.prompt, self.output, f"{self.source} at {rate:g} req/s",
                        self.dropped)

    def head(self, n: int) -> "Requests":
        """The first ``n`` requests (and the rows dropped among the file's rows up to the n-th kept one)."""
        last = n
        for d in sorted(self.dropped):
            if d <= last:
                last += 1
        return Requests(self.arrival_s[:n], self.prompt[:n], self.output[:n], self.source,
                        tuple(d for d in self.dropped if d <= last))


def _positive(key: str, v: Any) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
        raise TraceError(f"{key} = {v!r}: expected a number > 0")
    return float(v)


def _rows(path: Path) -> tuple[list[str], Iterable[tuple[int, Mapping[str, Any]]]]:
    """(the column names, (row number, row) pairs) of a CSV or JSONL file."""
    if path.suffix.lower() in (".jsonl", ".json", ".ndjson"):
        lines = path.read_text().splitlines()
        objs = []
        for i, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                o = json.loads(line)
            except json.JSONDecodeError as e:
                raise TraceError(f"{path}: row {i}: not a JSON object ({e.msg})") from None
            if not isinstance(o, dict):
                raise TraceError(f"{path}: row {i}: not a JSON object")
            objs.append((i, o))
        cols = list(objs[0][1]) if objs else []
        return cols, objs
    f = path.open(newline="")
    reader = csv.DictReader(f)
    cols = [c.strip() for c in reader.fieldnames or []]
    reader.fieldnames = cols
    return cols, ((i, r) for i, r in enumerate(reader, 1))


def _seconds(v: Any, where: str) -> float:
    """A time as seconds: a number, or an ISO date-time (Azure's ``2023-11-16 18:15:46.6805900``:
    7 fractional digits, which Python's parser does not take, are cut to 6)."""
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        x = float(v)
    else:
        s = str(v).strip()
        try:
            x = float(s)
        except ValueError:
            head, dot, frac = s.partition(".")
            digits = "".join(ch for ch in frac if ch.isdigit())
            tail = frac[len(digits):]
            try:
                t = _dt.datetime.fromisoformat(head + (dot + digits[:6] if dot else "") + tail)
            except ValueError:
                raise TraceError(f"{where}: {v!r} is neither seconds nor a date-time") from None
            if t.tzinfo is None:
                t = t.replace(tzinfo=_dt.timezone.utc)
            x = t.timestamp()
    if not math.isfinite(x):
        raise TraceError(f"{where}: {v!r} is not a finite time")
    return x


def _tokens(v: Any, where: str) -> int:
    try:
        x = float(v)
    except (TypeError, ValueError):
        raise TraceError(f"{where}: {v!r} is not a number of tokens") from None
    if not math.isfinite(x) or x != int(x):
        raise TraceError(f"{where}: {v!r} is not a whole number of tokens")
    if x < 1:
        raise TraceError(f"{where}: {v!r}: a request needs at least 1 token")
    return int(x)


#: Traces shipped with the package (`costmodel/serving/traces/README.md`: source, licence).
BUNDLED = {"azure_conv_2023": "azure_conv_2023.csv"}


def trace_path(name: str | Path) -> Path:
    """A bundled trace's file (`BUNDLED`), or ``name`` as a path."""
    if str(name) in BUNDLED:
        return Path(__file__).with_name("traces") / BUNDLED[str(name)]
    return Path(name)


def read_trace(path: str | Path, columns: Mapping[str, str | None] | None = None,
               max_context: int | None = None, drop_long: bool = False) -> Requests:
    """The requests of a trace file (module docstring), sorted by arrival (stable).

    Args:
        path: a ``.csv`` or ``.jsonl`` file, or a bundled trace's name (`BUNDLED`).
        columns: ``{"arrival" | "prompt" | "output": column name}`` over the spellings found;
            ``"arrival": None``: no arrival column, every request at 0 s.
        max_context: the model's context (tokens): a prompt longer is refused naming its row.
        drop_long: leave such requests out instead (their rows in `Requests.dropped`).

    Returns:
        `Requests`, arrivals from the first request's (absolute times such as Azure's date-times
        made relative).

    Raises:
        TraceError: no such file; a column missing or misspelt (the spellings looked for and the
            columns the file has); an unreadable number, a token count < 1 or not whole, a negative
            or decreasing arrival time (row and column named); an empty file; a prompt past
            ``max_context``.
    """
    path = trace_path(path)
    if not path.is_file():
        raise TraceError(f"{path}: no such trace file")
    given = dict(columns or {})
    for k in given:
        if k not in SPELLINGS:
            raise TraceError(f"{path}: column option {k!r}: expected one of {list(SPELLINGS)}")
    cols, rows = _rows(path)
    use: dict[str, str | None] = {}
    for field, names in SPELLINGS.items():
        if field in given:
            name = given[field]
            if name is not None and name not in cols:
                raise TraceError(f"{path}: column {name!r} (given for {field}) is not in the file; its columns: {cols}")
            use[field] = name
            continue
        found = next((n for n in names if n in cols), None)
        if found is None:
            raise TraceError(f"{path}: no {field} column: looked for {list(names)}; the file has {cols} "
                             f"(name yours with --column {field}=NAME)")
        use[field] = found
    arr: list[float] = []
    pr: list[int] = []
    out: list[int] = []
    prev = -math.inf
    dropped: list[int] = []
    for i, r in rows:
        if use["arrival"] is not None:
            col = use["arrival"]
            t = _seconds(r.get(col), f"{path}: row {i}, column {col}")
            if arr and t < prev:
                raise TraceError(f"{path}: row {i}, column {col}: arrival {r.get(col)!r} is before the previous "
                                 f"row's: a trace's rows are in arrival order")
            if t < 0:
                raise TraceError(f"{path}: row {i}, column {col}: negative arrival time {r.get(col)!r}")
            prev = t
            arr.append(t)
        else:
            arr.append(0.0)
        pcol, ocol = str(use["prompt"]), str(use["output"])
        p = _tokens(r.get(pcol), f"{path}: row {i}, column {pcol}")
        o = _tokens(r.get(ocol), f"{path}: row {i}, column {ocol}")
        if max_context is not None and p > max_context:
            if drop_long:
                dropped.append(i)
                arr.pop()
                continue
            raise TraceError(f"{path}: row {i}, column {use['prompt']}: a prompt of {p:,} tokens is longer than "
                             f"the model's context of {max_context:,} (--drop-long-prompts leaves such requests out)")
        pr.append(p)
        out.append(o)
    if not arr:
        raise TraceError(f"{path}: no requests")
    a = np.asarray(arr, dtype=np.float64)
    return Requests(a - a[0], np.asarray(pr, dtype=np.int64), np.asarray(out, dtype=np.int64), path.name,
                    tuple(dropped))


@dataclass(frozen=True)
class Lengths:
    """A distribution of token counts: ``fixed`` (a), ``uniform`` (integers a..b), ``lognormal``
    (median a, sigma b of the log; rounded, at least 1), or ``trace`` (sampled with the trace's
    pairs, `synthetic`)."""

    kind: str
    a: float = 0.0
    b: float = 0.0

    def draw(self, rng: np.random.Generator, n: int) -> np.ndarray:
        if self.kind == "fixed":
            return np.full(n, int(self.a), dtype=np.int64)
        if self.kind == "uniform":
            return rng.integers(int(self.a), int(self.b) + 1, size=n, dtype=np.int64)
        if self.kind == "lognormal":
            return np.maximum(1, np.rint(self.a * np.exp(self.b * rng.standard_normal(n)))).astype(np.int64)
        raise TraceError(f"lengths {self.kind!r}: drawn from a trace by `synthetic`")

    def __str__(self) -> str:
        return {"fixed": f"{self.a:g}", "uniform": f"uniform:{self.a:g}:{self.b:g}",
                "lognormal": f"lognormal:{self.a:g}:{self.b:g}"}.get(self.kind, "trace")


def parse_lengths(text: str | int, key: str) -> Lengths:
    """``"512"``, ``"uniform:LO:HI"``, ``"lognormal:MEDIAN:SIGMA"`` or ``"trace"`` -> `Lengths`.

    Raises:
        TraceError: naming ``key`` and the value, and the forms accepted.
    """
    s = str(text).strip()
    forms = "N, uniform:LO:HI, lognormal:MEDIAN:SIGMA or trace"
    if s == "trace":
        return Lengths("trace")
    parts = s.split(":")
    try:
        nums = [float(x) for x in parts[1:]] if len(parts) > 1 else [float(parts[0])]
    except ValueError:
        raise TraceError(f"{key} = {text!r}: expected {forms}") from None
    if len(parts) == 1:
        if nums[0] < 1 or nums[0] != int(nums[0]):
            raise TraceError(f"{key} = {text!r}: a fixed length is a whole number >= 1")
        return Lengths("fixed", nums[0])
    kind = parts[0]
    if kind == "uniform" and len(nums) == 2 and 1 <= nums[0] <= nums[1] and all(x == int(x) for x in nums):
        return Lengths("uniform", nums[0], nums[1])
    if kind == "lognormal" and len(nums) == 2 and nums[0] >= 1 and nums[1] >= 0:
        return Lengths("lognormal", nums[0], nums[1])
    raise TraceError(f"{key} = {text!r}: expected {forms} (uniform: whole 1 <= LO <= HI; lognormal: "
                     "MEDIAN >= 1, SIGMA >= 0)")


def synthetic(rate: float, *, count: int | None = None, duration_s: float | None = None,
              prompt: Lengths | str = "512", output: Lengths | str = "128", cv: float = 1.0,
              lengths_from: Requests | None = None, seed: int = 0) -> Requests:
    """A seeded synthetic load (module docstring).

    Args:
        rate: mean arrivals per second (> 0).
        count: requests (>= 1); or ``duration_s``: those arriving before it (one of the two).
        prompt: prompt lengths, `Lengths` or their text (`parse_lengths`); ``trace`` for either
            samples (prompt, output) pairs with replacement from ``lengths_from`` (both then come
            from it).
        output: output lengths, as ``prompt``.
        cv: coefficient of variation of the gaps (> 0; 1: Poisson; > 1 burstier).
        seed: the generator's seed.

    Raises:
        TraceError: a rate, cv or duration <= 0; neither or both of count and duration; a count
            < 1; ``trace`` lengths without ``lengths_from``.
    """
    _positive("rate", rate)
    _positive("cv", cv)
    if (count is None) == (duration_s is None):
        raise TraceError("give the number of requests or a duration, one of the two")
    if count is not None and (isinstance(count, bool) or not isinstance(count, int) or count < 1):
        raise TraceError(f"requests = {count!r}: expected a whole number >= 1")
    if duration_s is not None:
        _positive("duration", duration_s)
    p = parse_lengths(prompt, "prompt") if isinstance(prompt, str) else prompt
    o = parse_lengths(output, "output") if isinstance(output, str) else output
    rng = np.random.default_rng(seed)
    shape = 1.0 / (cv * cv)

    def gaps(n: int) -> np.ndarray:
        return rng.gamma(shape, 1.0 / (rate * shape), size=n)

    if count is not None:
        g = gaps(count)
        g[0] = 0.0
        arrival = np.cumsum(g)
    else:
        span = float(duration_s or 0.0)
        chunks, t = [], 0.0
        while True:
            g = gaps(max(16, int(rate * span * 1.2) + 16))
            c = t + np.cumsum(g)
            chunks.append(c)
            t = float(c[-1])
            if t >= span:
                break
        arrival = np.concatenate(chunks)
        arrival = arrival[arrival < span]
        if not len(arrival):
            raise TraceError(f"duration = {duration_s!r}: no request arrives in it at rate {rate:g}")
        arrival = arrival - arrival[0]
    n = len(arrival)
    if "trace" in (p.kind, o.kind):
        if lengths_from is None or not len(lengths_from):
            raise TraceError("lengths 'trace': give a trace to sample the prompt and output lengths from")
        idx = rng.integers(0, len(lengths_from), size=n)
        pl = lengths_from.prompt[idx] if p.kind == "trace" else p.draw(rng, n)
        ol = lengths_from.output[idx] if o.kind == "trace" else o.draw(rng, n)
    else:
        pl, ol = p.draw(rng, n), o.draw(rng, n)
    how = "Poisson" if cv == 1 else f"Gamma cv {cv:g}"
    src = f"{how} at {rate:g} req/s, prompt {p}, output {o}, seed {seed}"
    return Requests(arrival.astype(np.float64), pl.astype(np.int64), ol.astype(np.int64), src)
