"""Shared fixtures: one Ray instance for the whole test session, a deterministic Hypothesis profile."""

import os
import signal
import tempfile

import pytest

os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")

# The suite run as a background job of a shell without job control (`pytest &`, a CI runner's
# script) starts with SIGINT ignored (POSIX), and so would every `sweep` it starts: the Ctrl-C tests
# stand for a user at a terminal, where Ctrl-C is delivered. Children started from here get SIGINT's
# default action back (a caught signal is reset on exec).
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

try:
    from hypothesis import settings
    settings.register_profile("ci", derandomize=True, deadline=None, max_examples=60)
    settings.load_profile("ci")
except ImportError:  # pragma: no cover
    pass


@pytest.fixture(scope="session")
def ray_session():
    """A local Ray with 2 CPUs, started once; its temp files outside the repository."""
    import ray
    if not ray.is_initialized():
        ray.init(num_cpus=2, include_dashboard=False, configure_logging=False,
                 _temp_dir=os.path.join(tempfile.gettempdir(), "ray_dse_sweep_tests"))
    yield ray
    ray.shutdown()


@pytest.fixture(autouse=True)
def _fresh_layer_mappings():
    """Each test starts without the layer mappings an earlier test kept in this process
    (`sweep.engine.design_tasks.mapped_layer`): a test that patches a mapper must see it run."""
    from sweep.engine import design_tasks
    design_tasks._MAPPINGS.clear()
    yield
