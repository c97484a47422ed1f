"""Several chips as one system: the interconnect between them and the collectives a split step
needs (`costmodel.system.interconnect`, `costmodel.system.collectives`). A level above the chip:
per-chip shares go through the loop-nest model like any step; what crosses the links is costed here."""
