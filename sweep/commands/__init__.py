"""What the command line's commands do besides running campaigns, in-process and without Ray:
`map_eval` (`sweep map` / `sweep eval`: one layer or network mapped or a given mapping costed,
also the Python API's `map_layer` / `map_network` / `evaluate`), `catalog` (`sweep list`), and the
text people read: `text` (tables, option checks, `--help`) and `llm_step` (a transformer step's
options and its mapped text). The Typer app itself is `sweep.cli`. Nothing is imported here, so
``sweep --help`` stays quick."""
