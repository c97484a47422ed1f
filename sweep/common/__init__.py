"""Small helpers every room of `sweep` uses (the engine, the campaign files' readers, the kinds, the
reports, the commands): `errors` (SweepError and its subclasses, which the CLI maps to exit codes),
`ids` (stable_hash, behind every task id, problem id and config hash; strict JSON), `fmt` (numbers
as people read them) and `notice` (the one-time notice of a cold Numba cache). They import nothing
of `sweep`, and nothing heavy, so ``sweep --help`` stays quick."""
