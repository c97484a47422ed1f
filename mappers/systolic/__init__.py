"""Systolic-array mappers: `deepopt` (DeepOpt, ASP-DAC 2021), layer-specific optimal and fixed
scheduling of networks over a grid of J x K hardware points (`costmodel.systolic`)."""

from mappers.systolic.deepopt import DEEPOPT, AllocationProblem, DeepOptMapper

__all__ = ["DEEPOPT", "DeepOptMapper", "AllocationProblem"]
