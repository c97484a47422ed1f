"""Architecture search driven by an Optuna study (`sweep.search.driver`)."""
