"""The engine: a campaign expanded into tasks with deterministic ids (`tasks`: expand, count, run;
the task types `systolic_tasks`, `layer_tasks`, `design_tasks`), run through the one bounded
`executor` (in-process or Ray), written by the `runner` into the Parquet `store` (content-named
fragments, resumable, compactable)."""
