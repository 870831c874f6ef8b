"""The XLA options the packet engine's programs are compiled with (`fluidcc._jax_setup.compile_options`):
XLA's older fusion emitters on a CPU, nothing elsewhere or where XLA lacks the option, and the
options reach every packet program. What they save is a speed figure:
`benchmarks/packet_compile.py --options` (benchmarks/RESULTS.md)."""

from __future__ import annotations

import jax
import pytest

from fluidcc import _jax_setup
from fluidcc.network import Flow, Link, Network
from fluidcc.packet import _run_exact, simulate_exact
from fluidcc.packet.exact_protocols import VCP


@pytest.fixture
def fresh(monkeypatch):
    """compile_options computed again in the test (its answer is cached per process), and again after."""
    _jax_setup.compile_options.cache_clear()
    yield monkeypatch
    _jax_setup.compile_options.cache_clear()


@pytest.mark.skipif(jax.default_backend() != "cpu", reason="the options are a CPU's")
def test_a_cpu_gets_the_older_fusion_emitters(fresh):
    assert _jax_setup.compile_options() == {"xla_cpu_use_fusion_emitters": False}


def test_another_backend_gets_xla_defaults(fresh):
    fresh.setattr(_jax_setup.jax, "default_backend", lambda: "gpu")
    assert _jax_setup.compile_options() == {}


@pytest.mark.skipif(jax.default_backend() != "cpu", reason="the options are a CPU's")
def test_an_xla_without_the_option_gets_its_defaults(fresh):
    fresh.setattr(_jax_setup, "CPU_PACKET_OPTIONS", {"xla_cpu_no_such_option_here": False})
    assert _jax_setup.compile_options() == {}


@pytest.mark.skipif(jax.default_backend() != "cpu", reason="the options are a CPU's")
def test_another_failure_of_the_probe_is_not_hidden(fresh):
    def failing(*args, **kwargs):
        raise RuntimeError("out of memory")
    fresh.setattr(_jax_setup.jax, "jit", failing)
    with pytest.raises(RuntimeError, match="out of memory"):
        _jax_setup.compile_options()


@pytest.mark.parametrize("seeds, batch", [([0], "auto"), ([0, 1], "vmap")], ids=["one run", "vmapped batch"])
def test_the_options_reach_the_packet_programs(monkeypatch, seeds, batch):
    """An option XLA does not know, given as the packet programs' options, is refused by name when
    the run compiles: so the run's program (one run's, or a vmapped batch's) is compiled with
    what compile_options gives."""
    monkeypatch.setattr(_run_exact, "compile_options", lambda: {"xla_cpu_no_such_option_here": False})
    monkeypatch.setattr(_run_exact, "_CACHE", {})
    network = Network((Link("l", 1000.0, 0.01),), (Flow("f", ("l",), access_delay_s=0.01),))
    with pytest.raises(Exception, match="xla_cpu_no_such_option_here"):
        simulate_exact(network, VCP(), duration_s=0.5, seeds=seeds, batch=batch)
