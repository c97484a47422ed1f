"""The campaign files' configuration, read and checked (the TOML files themselves live in the
top-level ``campaigns/`` folder): the tables every campaign has, networks, architecture spaces
(presets, files, grids, constraints, area budgets), expressions, the ``[report]`` table, and
tuning campaigns. Every finding of a file is reported at once (`sweep.common.errors.CampaignError`)."""
