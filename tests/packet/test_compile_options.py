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


def test_a_cpu_gets_the_older_fusion_emitters(fresh):
    assert jax.default_backend() == "cpu"
    assert _jax_setup.compile_options() == {"xla_cpu_use_fusion_emitters": False}


def test_another_backend_gets_xla_defaults(fresh):
    fresh.setattr(_jax_setup.jax, "default_backend", lambda: "gpu")
    assert _jax_setup.compile_options() == {}


def test_an_xla_without_the_option_gets_its_defaults(fresh):
    fresh.setattr(_jax_setup, "CPU_PACKET_OPTIONS", {"xla_cpu_no_such_option_here": False})
    assert _jax_setup.compile_options() == {}


def test_the_options_reach_the_packet_programs(monkeypatch):
    """An option XLA does not know, given as the packet programs' options, is refused when the run
    compiles: so the run's program is compiled with what compile_options gives."""
    monkeypatch.setattr(_run_exact, "compile_options", lambda: {"xla_cpu_no_such_option_here": False})
    monkeypatch.setattr(_run_exact, "_CACHE", {})
    network = Network((Link("l", 1000.0, 0.01),), (Flow("f", ("l",), access_delay_s=0.01),))
    with pytest.raises(Exception, match="xla_cpu_no_such_option_here"):
        simulate_exact(network, VCP(), duration_s=0.5)
