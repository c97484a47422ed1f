"""How a GPU runs a step's kernels: the execution effects a loop nest does not express (a kernel's
fixed time on the device, a GEMM's CTA tiles and waves, the clock a power-bound kernel sustains,
the DRAM bandwidth a kernel reaches by its access pattern and its CTAs), from a preset's ``[gpu]``
and ``[power]`` tables (`costmodel.gpu.spec`), costed by `costmodel.gpu.kernels`."""
