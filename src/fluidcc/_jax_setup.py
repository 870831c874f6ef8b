"""JAX configuration fluidcc needs, applied once at import.

* float64 everywhere (``jax_enable_x64``).
* On a CPU, one JAX device per core (``jax_num_cpu_devices``) so that the engine can integrate
  several chunks of a batch at once; a GPU build is unaffected. Set the environment variable
  ``FLUIDCC_CPU_DEVICES`` to a number to choose the count (1 turns this off). It only takes effect
  if JAX's backends have not been initialised yet when fluidcc is imported.
* A persistent compilation cache (``~/.cache/fluidcc/jax``, or ``FLUIDCC_JAX_CACHE``; set it
  to an empty string to turn it off), so kernels compiled once are reused by later runs. Every
  kernel is kept, however quick its compilation: a refinement compiles a dozen small kernels (one
  per resolution and chunk width), each quick to compile but together a large part of a new
  process's first call if compiled again; kept, they are loaded instead (benchmarks/RESULTS.md,
  appendix, "DDE throughput and accuracy", 2026-11-24).
* `compile_options`: the XLA options the packet engine's programs are compiled with. On a CPU,
  XLA's newer (MLIR) fusion emitters are turned off for them: those programs are large loops of
  small operations, and the older emitters compile them in about three quarters of the time;
  runs of 20 s took 0.7-1.1 times as long as with XLA's defaults, and the runs compared had the same
  packets, events and counts (a router's series may differ in its last bit: the emitters sum in
  other orders; benchmarks/RESULTS.md, "Fifth pass: compile options"). Per program, not global:
  the DDE kernels keep XLA's emitters.
* On a CPU, XLA compiles each loop (``while``) into one function of its own (`HOIST_LOOPS`),
  where its runtime would otherwise call every operation of a loop's body separately at every
  iteration. The packet engine's event loops are such loops of many small operations: a run
  takes about three quarters of the time, with the same outputs bit for bit; the DDE kernels
  take the same time and give the same numbers (benchmarks/RESULTS.md, "Sixth pass"). XLA takes
  this only as a process-wide flag (``XLA_FLAGS``), read when its first backend starts, so it is
  added there at import if JAX has not started one yet; an ``XLA_FLAGS`` that already names
  ``xla_backend_extra_options`` is left as it is (set ``FLUIDCC_HOIST_LOOPS=0`` to leave it out).
  The flag is process-wide: the user's own JAX code on the CPU and child processes that inherit
  the environment get it too. (Extra options given through ``--flagfile`` are not seen here and
  would be replaced.)
"""

from __future__ import annotations

import functools
import os

import jax


#: XLA's CPU option (a backend extra option) under which a loop whose buffers XLA counts below
#: this many bytes is compiled as one function: here every loop.
HOIST_LOOPS = "xla_cpu_small_while_loop_byte_threshold=1000000000000"


def _backends_started() -> bool:
    try:
        from jax._src import xla_bridge
        return bool(xla_bridge.backends_are_initialized())
    except (ImportError, AttributeError):
        return True  # cannot tell: leave XLA's flags alone


def hoist_loops() -> None:
    """Add `HOIST_LOOPS` to ``XLA_FLAGS`` (see the module docstring) where that can still take effect."""
    flags = os.environ.get("XLA_FLAGS", "")
    if os.environ.get("FLUIDCC_HOIST_LOOPS", "1") == "0" or "xla_backend_extra_options" in flags:
        return
    if _backends_started():
        return
    os.environ["XLA_FLAGS"] = f"{flags} --xla_backend_extra_options={HOIST_LOOPS}".strip()


def configure() -> None:
    hoist_loops()
    jax.config.update("jax_enable_x64", True)
    cache = os.environ.get("FLUIDCC_JAX_CACHE", os.path.join(os.path.expanduser("~"), ".cache", "fluidcc", "jax"))
    if cache and jax.config.jax_compilation_cache_dir is None:
        try:
            jax.config.update("jax_compilation_cache_dir", cache)
            jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
        except (AttributeError, RuntimeError):
            pass
    wanted = int(os.environ.get("FLUIDCC_CPU_DEVICES", os.cpu_count() or 1))
    try:
        if wanted > 1 and jax.config.jax_num_cpu_devices in (-1, 1, None):
            jax.config.update("jax_num_cpu_devices", wanted)
    except (AttributeError, RuntimeError):
        # Older JAX without the option, or backends already initialised: one CPU device.
        pass


#: The XLA options `compile_options` gives on a CPU (see the module docstring).
CPU_PACKET_OPTIONS = {"xla_cpu_use_fusion_emitters": False}


@functools.lru_cache(maxsize=None)
def compile_options() -> dict:
    """XLA compile options for the packet engine's programs (`jax.jit(..., compiler_options=...)`):
    `CPU_PACKET_OPTIONS` on a CPU backend whose XLA knows them, else none (a GPU, or a JAX whose
    XLA lacks the option: its defaults, the same results)."""
    if jax.default_backend() != "cpu":
        return {}
    try:
        jax.jit(lambda x: x + 1, compiler_options=CPU_PACKET_OPTIONS).lower(1.0).compile()
    except Exception as error:
        # an XLA without the option refuses it by name: its defaults then (nothing else is lost);
        # any other failure is not this function's to hide
        if any(name in str(error) for name in CPU_PACKET_OPTIONS):
            return {}
        raise
    return dict(CPU_PACKET_OPTIONS)


configure()
