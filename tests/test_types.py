"""The mappers and the cost model type-check: mypy with the project's settings (``[tool.mypy]`` in
pyproject.toml: which files, which checks, which modules are left out for now) reports no error.

It runs mypy in-process (`mypy.api.run`) from the repository root, so it checks exactly what
``mypy`` run there checks; the cache goes to the test's temporary folder (a cold run, about 3 s on
one core with mypy 2.4), so a stale cache can never hide an error.
"""

from pathlib import Path

from mypy import api

ROOT = Path(__file__).resolve().parents[1]


def test_mappers_and_costmodel_type_check(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)  # [tool.mypy] files are relative to the repository root
    stdout, stderr, status = api.run(["--config-file", str(ROOT / "pyproject.toml"),
                                      "--cache-dir", str(tmp_path / "mypy_cache")])
    assert status == 0 and "Success" in stdout, stdout + stderr
