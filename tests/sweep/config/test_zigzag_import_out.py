"""`sweep import zigzag --out` that cannot be written (issue 23, defect 4): an existing directory
(before the fix: a 40-line IsADirectoryError traceback), a missing folder, a folder where no file
can be created. Each: exit 2, the message names --out and the value, nothing written, no traceback.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
INPUTS = ROOT / "tests" / "data" / "zigzag" / "inputs"
ARGS = ["--accelerator", str(INPUTS / "hardware" / "tpu_like.yaml"),
        "--mapping", str(INPUTS / "mapping" / "tpu_like.yaml")]


def _import(out: Path | str) -> subprocess.CompletedProcess:
    """The command in a real subprocess, as a user runs it (tracebacks would reach stderr)."""
    return subprocess.run([sys.executable, "-m", "sweep.cli", "import", "zigzag", *ARGS, "--out", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)


def _files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.rglob("*"))


def _refused(p: subprocess.CompletedProcess, out: Path | str, words: str) -> None:
    assert p.returncode == 2, p.stdout + p.stderr
    assert f"--out = '{out}'" in p.stderr and words in p.stderr, p.stderr
    assert "Traceback" not in p.stderr and "Error:" not in p.stderr.replace("error:", ""), p.stderr
    assert p.stdout == ""


def test_out_is_an_existing_directory(tmp_path):
    d = tmp_path / "accs"
    d.mkdir()
    (d / "keep.txt").write_text("x")
    p = _import(d)
    _refused(p, d, "is a directory")
    assert str(d / "tpu_like.toml") in p.stderr  # what to give instead
    assert _files(tmp_path) == ["accs", "keep.txt"]  # no temp file left, nothing replaced


def test_out_in_a_missing_folder(tmp_path):
    out = tmp_path / "nope" / "x.toml"
    _refused(_import(out), out, "directory does not exist")
    assert _files(tmp_path) == []


def test_out_under_a_file(tmp_path):
    (tmp_path / "f").write_text("x")
    out = tmp_path / "f" / "x.toml"
    _refused(_import(out), out, "directory does not exist")
    assert _files(tmp_path) == ["f"]


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux's /proc, where no file can be created")
def test_out_where_no_file_can_be_created():
    """/proc takes no new files, even for root (a read-only folder would not stop root)."""
    _refused(_import("/proc/x.toml"), "/proc/x.toml", "cannot write in /proc")


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_out_in_a_read_only_folder(tmp_path):
    d = tmp_path / "ro"
    d.mkdir()
    d.chmod(0o500)
    try:
        _refused(_import(d / "x.toml"), d / "x.toml", "cannot write in")
        assert _files(d) == []
    finally:
        d.chmod(0o700)


def test_out_replaces_an_existing_file(tmp_path):
    """The one case that writes: a file at --out is replaced (atomically)."""
    out = tmp_path / "acc.toml"
    out.write_text("old")
    p = _import(out)
    assert p.returncode == 0, p.stderr
    assert "[[memory]]" in out.read_text() or "[memory" in out.read_text()
    assert _files(tmp_path) == ["acc.toml"]
