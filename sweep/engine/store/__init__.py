"""The result store of a campaign run: Parquet fragments committed through a catalog that is a redo
log (`sweep.engine.store.core`, `sweep.engine.store.catalog`), one writer at a time
(`sweep.engine.store.lock`), durable file operations (`sweep.engine.store.fsops`), what
``--resume`` mends (`sweep.engine.store.repair`) and ``sweep check`` (`sweep.engine.store.check`)."""

from sweep.engine.store.core import FORMAT, MANIFEST, Store, code_version

__all__ = ["Store", "code_version", "MANIFEST", "FORMAT"]
