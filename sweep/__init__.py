"""dse-sweep's orchestration layer (campaigns, the engine, reports, the ``sweep`` command line).

From Python: ``from sweep import api`` (`sweep.api`: map a layer or a network, evaluate a mapping,
load accelerators and networks, run a campaign from a file or a dict, read results as DataFrames).
Nothing is imported here, so ``sweep --help`` stays quick.
"""
