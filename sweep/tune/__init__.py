"""`sweep tune`: the Optuna driver (`driver`) that tunes an annealer's schedule, trials as calls of
the engine's executor; the objective it optimises is `sweep.tune.objective` (no Optuna, no Ray)."""
