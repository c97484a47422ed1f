"""dse-sweep's orchestration layer (campaigns, the engine, reports, the ``sweep`` command line).

From Python: ``from sweep import api`` (`sweep.api`: map a layer or a network, evaluate a mapping,
load accelerators and networks, run a campaign from a file or a dict, read results as DataFrames).
Nothing is imported here, so ``sweep --help`` stays quick.
"""


def main() -> None:
    """The ``sweep`` console script: `sweep.cli.main`, with a Ctrl-C that comes while the command
    line is still importing (the first second on a loaded machine) ending as one later does: one
    line on stderr, exit 130, no traceback (nothing has run yet, so nothing is to resume); likewise a
    Ctrl-C that escapes the commands' own handling."""
    import sys

    from sweep.engine.signals import interrupts_deferred
    # recorded while importing, acted on after: a KeyboardInterrupt raised inside a compiled
    # module's import can be swallowed there ("Exception ignored in ..."), and the run would go on
    with interrupts_deferred() as got:
        try:
            from sweep.cli import main as cli_main
        except KeyboardInterrupt:
            got.append(2)
    if got:
        sys.stderr.write("interrupted while starting: nothing was run\n")
        raise SystemExit(130)
    try:
        cli_main()
    except KeyboardInterrupt:  # one that lands outside a command's own handling (Typer building the
        sys.stderr.write("interrupted\n")   # command line, before Click's): same end, no traceback
        raise SystemExit(130) from None
