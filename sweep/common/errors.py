"""The exceptions of the engine, one root, each also the built-in it behaves like.

The CLI maps them to exit codes in one place (`sweep.cli`): `CampaignError` and `StoreError`
(bad input: a campaign file, an output directory) exit 2; any other `SweepError` (`StoreIOError`: the
file system refused a write) exits 1.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["SweepError", "CampaignError", "Finding", "StoreError", "StoreIOError", "StoreBusyError", "ExecutionError", "ClusterLostError", "DoesNotFitError"]


class SweepError(Exception):
    """Root of every error raised on purpose by dse-sweep."""


@dataclass(frozen=True)
class Finding:
    """One validation finding in a campaign (or a command-line option): where (the TOML key path),
    what value, what is wrong. `CampaignError` carries every finding of one file."""

    key: str
    value: object
    message: str

    def __str__(self) -> str:
        return f"{self.key} = {self.value!r}: {self.message}"


class CampaignError(SweepError, ValueError):
    """A campaign file is invalid. Carries every finding (``problems``), not just the first."""

    def __init__(self, source: str, problems: list[Finding]):
        self.source = source
        self.problems = list(problems)
        lines = "\n".join(f"  - {p}" for p in self.problems)
        super().__init__(f"{source}: {len(self.problems)} problem(s):\n{lines}")


class StoreError(SweepError, ValueError):
    """An output directory cannot be used (foreign files, another campaign's results, unreadable)."""


class StoreIOError(SweepError, OSError):
    """The file system refused a write of the result store (no space left, a read-only file system,
    a permission): one line naming the path and the cause; what was committed stays, the directory
    stays resumable. Exit 1 (the input was fine)."""


class StoreBusyError(StoreError):
    """Another command holds a result directory's writer lock (its pid, host and command named)."""


class ExecutionError(SweepError, RuntimeError):
    """The run failed at run time; what was stored stays resumable."""


class ClusterLostError(ExecutionError):
    """The Ray cluster went away under a run (its head node lost: the GCS does not answer, or the
    driver's raylet is gone). What finished before is stored; ``--resume`` completes the run. Exit 1."""


class DoesNotFitError(ExecutionError):
    """A transformer step needs more DRAM than the accelerator has (weights + KV cache + live
    activations, `costmodel.capacity.Footprint`); raised before any mapping is searched. Exit 1."""
