"""Shared test configuration: Hypothesis profiles (``ci`` is chosen when CI is set)."""

import gc
import os

import jax
import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci", max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True
)
settings.register_profile("dev", max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("thorough", max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))


@pytest.fixture(autouse=True, scope="module")
def _release_compiled_programs():
    """Drop JAX's compiled programs after each test module. Every XLA CPU executable keeps memory
    mappings of its code; one test process that compiles the whole suite's kernels would otherwise
    pass the kernel's limit on mappings per process (vm.max_map_count, 65 530 by default) and die
    inside the compiler."""
    yield
    jax.clear_caches()
    gc.collect()
