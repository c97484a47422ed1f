"""A set of J x K systolic hardware points as columns (DeepOpt's hardware-allocation space)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["SystolicPoints", "HW_COLUMNS"]

#: The columns that define a systolic hardware point.
HW_COLUMNS = ("J", "K", "fsram_kib", "isram_kib", "psram_kib")


@dataclass(frozen=True)
class SystolicPoints:
    """Hardware points, columns of shape (P,): J x K PE array, filter / ifmap / psum SRAM sizes
    (KiB) and area (mm^2, `costmodel.systolic.area.area_mm2`). ``spec`` records how the set was given."""

    J: np.ndarray
    K: np.ndarray
    fsram_kib: np.ndarray
    isram_kib: np.ndarray
    psram_kib: np.ndarray
    area_mm2: np.ndarray
    spec: Any = None

    def __len__(self) -> int:
        return len(self.J)

    def take(self, idx) -> "SystolicPoints":
        """A subset (by index array or slice), same spec."""
        return SystolicPoints(self.J[idx], self.K[idx], self.fsram_kib[idx], self.isram_kib[idx], self.psram_kib[idx],
                              self.area_mm2[idx], spec=self.spec)

    def columns(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(J, K, fsram_kib, isram_kib, psram_kib) (`HW_COLUMNS`), the arguments of
        `costmodel.systolic.evaluate`."""
        return self.J, self.K, self.fsram_kib, self.isram_kib, self.psram_kib

    def digest(self) -> str:
        """sha256 of the point columns (identifies exactly this set, in this order)."""
        h = hashlib.sha256()
        for c in HW_COLUMNS:
            h.update(np.ascontiguousarray(getattr(self, c), dtype=np.int64).tobytes())
        return h.hexdigest()

    def describe(self) -> dict[str, Any]:
        """JSON-able description: the spec as given plus point count and digest."""
        return {"spec": self.spec, "points": len(self), "digest": self.digest()}
