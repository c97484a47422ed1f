"""Campaign files (TOML) -> validated campaigns: networks, architecture spaces (presets, files,
grids, constraints, area budgets), expressions, and tuning campaigns. Every finding of a file is
reported at once (`sweep.errors.CampaignError`)."""
