"""`sweep report`: paper-style tables and PNG plots of a result directory, one module per kind.

`sweep.kinds.build_report` reads the directory's manifest (`sweep.engine.store.Store`) and hands it
to the report module of its kind (`sweep.kinds.base.CampaignKind.report_module`);
`sweep.kinds.print_report` prints what that module built:

* ``systolic`` -- `sweep.reports.systolic`: DeepOpt's optimal hardware allocation;
* ``loopnest`` -- `sweep.reports.loopnest`: mappers compared per layer and network (SALSA, CoSA);
* ``npu`` -- `sweep.reports.npu`: the loop-nest report plus Flexer vs the best static schedule;
* ``tune`` -- `sweep.reports.tune`: a `sweep tune` study (trials, importances, held-out gap).

Each module has ``build(directory, manifest, plots_dir) -> dict`` and ``show(rep, console)``;
`sweep.reports.summary` holds the summary the first three share, `sweep.reports.plots` the one plot
helper of all four.
"""

