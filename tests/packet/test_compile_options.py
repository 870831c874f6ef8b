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


_PROBE = """
import os, sys
{before}
import fluidcc, jax, jax.numpy as jnp
loop = lambda x: jax.lax.while_loop(lambda c: c[0] < 10, lambda c: (c[0] + 1, c[1] * 2.0), (0, x))[1]
text = jax.jit(loop).lower(jnp.ones(100_000)).compile().as_text()
print(os.environ.get("XLA_FLAGS", ""))
print("hoisted" if "xla_cpu_small_call" in text else "not hoisted")
"""


def _probe(env_changes: dict, before: str = "") -> tuple[str, str]:
    """A new process that imports fluidcc (after `before`) and compiles a loop over 100 000 numbers
    (far above XLA's own threshold for loops it compiles as one function): its XLA_FLAGS and
    whether the loop was compiled as one function."""
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", "FLUIDCC_HOIST_LOOPS")}
    env.update(env_changes)
    out = subprocess.run([sys.executable, "-c", _PROBE.format(before=before)], env=env, check=True,
                         capture_output=True, text=True).stdout.strip().splitlines()
    return out[-2] if len(out) > 1 else "", out[-1]


@pytest.mark.skipif(jax.default_backend() != "cpu", reason="the option is a CPU's")
def test_importing_fluidcc_has_xla_compile_every_loop_as_one_function():
    flags, hoisted = _probe({})
    assert _jax_setup.HOIST_LOOPS in flags and hoisted == "hoisted"


@pytest.mark.skipif(jax.default_backend() != "cpu", reason="the option is a CPU's")
@pytest.mark.parametrize("env, before", [
    ({"FLUIDCC_HOIST_LOOPS": "0"}, ""),
    ({"XLA_FLAGS": "--xla_backend_extra_options=xla_cpu_disable_loop_unrolling"}, ""),
    ({}, "import jax.numpy as jnp; jnp.ones(2).block_until_ready()"),
], ids=["turned off", "the user's extra options", "a backend already started"])
def test_xla_flags_are_left_alone_where_asked_or_too_late(env, before):
    flags, hoisted = _probe(env, before)
    assert _jax_setup.HOIST_LOOPS not in flags and hoisted == "not hoisted"
    assert flags == env.get("XLA_FLAGS", "")
