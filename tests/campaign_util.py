"""A small DeepOpt campaign for engine tests (72 hardware points, 9 tasks)."""

from pathlib import Path

TINY = """
name = "tiny"
output = "{out}"
networks = ["alexnet_deepopt", "squeezenet_v11_deepopt"]
objectives = ["E", "D", "ED"]

[architectures]
kind = "systolic"
[architectures.grid]
J = {{ start = 16, stop = 24, step = 4 }}
K = {{ start = 16, stop = 24, step = 4 }}
fsram_kib = [16, 32]
isram_kib = [16, 32]
psram_kib = [8, 16]
constraints = ["area_mm2 <= 16"]

[[mappers]]
name = "deepopt"

[run]
chunk_points = {chunk}
flush_rows = {flush}
"""


def write_tiny(tmp_path: Path, out: Path | None = None, flush: int = 1, extra: str = "",
               chunk: int = 8, name: str = "tiny.toml") -> Path:
    out = out or tmp_path / "out"
    p = tmp_path / name
    p.write_text(TINY.format(out=out.as_posix(), flush=flush, chunk=chunk) + extra)
    return p
