"""Reports of served requests: one served load (`load`: the summary as text, the timeline and
latency-against-rate plots)."""

from .load import read_serving, serving_plots, summary_lines

__all__ = ["read_serving", "serving_plots", "summary_lines"]
