"""Serving requests over time (issue 53): arrivals and traces (`requests`), vLLM V1's scheduler
settings and the paged KV cache's size (`scheduler`), the event loop (`simulate`), an iteration's
work as networks (`iteration`), the interpolated iteration costs (`table`), and what a served trace
comes to (`metrics`). A pure function of a cost table, the requests and the scheduler's settings:
the engine (`sweep`) maps the table's parts and fans designs and rates out."""

from .iteration import Deployment, attention_part, dense_part, head_part, iteration_network
from .metrics import SLO, goodput, request_figures, summary
from .requests import Lengths, Requests, TraceError, parse_lengths, read_trace, synthetic
from .scheduler import GRAPH_MODES, SchedulerConfig, capture_sizes, kv_blocks, vllm_defaults
from .simulate import ITERATION_COLUMNS, SimResult, simulate
from .table import CostTable, default_grids, fixed_steps

__all__ = ["Deployment", "attention_part", "dense_part", "head_part", "iteration_network", "SLO", "goodput",
           "request_figures", "summary", "Lengths", "Requests", "TraceError", "parse_lengths", "read_trace", "synthetic",
           "GRAPH_MODES", "SchedulerConfig", "capture_sizes", "kv_blocks", "vllm_defaults", "ITERATION_COLUMNS",
           "SimResult", "simulate", "CostTable", "default_grids", "fixed_steps"]
