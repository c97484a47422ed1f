"""The engine: a campaign expanded into tasks with deterministic ids (`tasks`, `layer_tasks`), run
through the one bounded `executor` (in-process or Ray), written by the `runner` into the Parquet
`store` (content-named fragments, resumable, compactable)."""
