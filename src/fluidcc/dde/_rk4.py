"""Fixed-step RK4 method of steps with cubic Hermite interpolation of delayed states.

Layout (per point; the whole kernel is vmapped over the batch and jitted once per shape):

* The step is h = tau_min / M, with M steps per smallest delay. Time is cut into *chunks* of M
  steps (one smallest delay each). Every delayed argument used inside chunk c lies in chunks
  before c, so a chunk's delayed values can all be interpolated *before* the chunk is integrated.
* An outer `lax.scan` walks the chunks, carrying a buffer of the last H chunks of nodes (values
  and derivatives), H = ceil(tau_max / tau_min). An inner `lax.scan` runs the M RK4 steps reading
  their delayed values by slices of an array prepared for the chunk. The buffer is rewritten once
  per chunk, not once per step (a ring buffer written inside a vmapped scan is rewritten whole
  at every step).
* Delayed states come from the cubic Hermite interpolant of the stored nodes and derivatives
  (fourth order), so the method is of order 4 overall. Where every delay is a whole number of
  steps (one delay, or delays that are multiples of the smallest) the interpolation points are
  nodes and midpoints; otherwise they are anywhere in a step. The history's left derivative at
  t = 0 and the solution's right derivative are stored separately, so the derivative jump at
  t = 0 is not smeared. Breakpoints of higher order at non-grid times (incommensurate delays)
  lower the order there (errors fell about 6x per halving of h on a two-delay test, against 16x
  with breakpoints on the grid); the rtol refinement in `solve` measures that.
* State components the model marks positive may be integrated in log coordinates.
* State components the model keeps >= 0 (a queue, `DDESystem.nonnegative_components`) are
  projected onto [0, inf) after every step (the projected RK4 step), and so are their
  interpolated delayed and saved values. The model's field already stops them at 0; the
  projection removes the small negative value a step crossing 0 (or an interpolant between two
  nodes near 0) would leave. What the projection adds to a component is subtracted from the
  component the model names in `DDESystem.projection_ledger` (a departures counter), so a
  model's fluid accounting stays exact.
"""

from __future__ import annotations

import functools
import math
import time
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ..errors import ParameterError
from ._batching import (chunk_width, climb, host_delays, largest_magnitude, max_difference, round_down_pow2,
                        round_up_pow2, run_in_chunks, take)
from ._method import Method
from ._solution import Solution, statuses
from ._system import DDESystem, to_mixed, to_natural


#: RK4 steps unrolled per iteration of the inner loop (measured fastest on a 2-core CPU for the
#: single-link models) ...
_UNROLL = 8
#: ... and for larger systems (more than _SMALL_SYSTEM states x delays), where unrolling 8 steps
#: doubled the compile time and ran no faster (benchmarks/RESULTS.md, appendix, "Networks: XCP
#: vs iXCP, MIAIMD parking lot", 2026-11-22).
_UNROLL_LARGE = 2
_SMALL_SYSTEM = 8


@dataclass(frozen=True)
class KernelShape:
    """Static configuration of one compiled kernel (everything that fixes array shapes)."""

    steps_per_delay: int  # M
    n_chunks: int  # number of smallest-delay intervals integrated
    history_chunks: int  # H
    n_delays: int  # K
    n_states: int  # n
    n_saves: int  # S
    save_slots: int  # P: most save times in one chunk
    log_mask: tuple[bool, ...]
    nonnegative_mask: tuple[bool, ...] = ()
    ledger: tuple[int, ...] = ()  # per component: where its projection correction is booked (-1: none)


def _hermite(z0, z1, f0, f1, theta, h):
    """Cubic Hermite interpolation on one step of length h at fraction theta in [0, 1]."""
    t2 = theta * theta
    t3 = t2 * theta
    h00 = 2.0 * t3 - 3.0 * t2 + 1.0
    h10 = t3 - 2.0 * t2 + theta
    h01 = -2.0 * t3 + 3.0 * t2
    h11 = t3 - t2
    return h00 * z0 + h10 * h * f0 + h01 * z1 + h11 * h * f1


def _interpolate(buf_z, buf_fr, buf_fl, index, theta, h):
    """Interpolate a node buffer at (index, theta); index/theta broadcast over leading dims."""
    z0 = buf_z[index]
    z1 = buf_z[index + 1]
    f0 = buf_fr[index]
    f1 = buf_fl[index + 1]
    return _hermite(z0, z1, f0, f1, theta[..., None], h)


def _delay_positions(shape: KernelShape, delays_in_steps):
    """Buffer index and fraction of every half-step time of a chunk, for every delay.

    Half-step q (0..2M) of chunk c is at time (cM + q/2) h; its delayed time for delay k sits at
    position H*M + q/2 - d_k in the buffer, which holds nodes (c - H) M ... c M.
    Returns index (2M+1, K) int and theta (2M+1, K).
    """
    M, H = shape.steps_per_delay, shape.history_chunks
    half_steps = jnp.arange(2 * M + 1) / 2.0
    position = H * M + half_steps[:, None] - delays_in_steps[None, :]
    index = jnp.clip(jnp.floor(position), 0, H * M - 1)
    theta = position - index
    return index.astype(jnp.int32), theta


def _static_delay_positions(shape: KernelShape):
    """The same as `_delay_positions` for one delay equal to the chunk (positions known statically)."""
    M, H = shape.steps_per_delay, shape.history_chunks
    position = (H * M + np.arange(2 * M + 1) / 2.0 - M)[:, None]
    index = np.clip(np.floor(position), 0, H * M - 1).astype(np.int32)
    return index, jnp.asarray(position - index)


def _integrate_point(system: DDESystem, shape: KernelShape, params, t_final, save_pos, save_start):
    """Integrate one parameter point. Vmapped by `build_kernel`.

    save_pos: (S,) position of each save time in steps from the start of its chunk, in [0, M].
    save_start: (n_chunks + 1,) index of the first save time in each chunk (sorted save times).
    Returns (z_saved (S, n), first_overflow_t, first_nonfinite_t).
    """
    M, H, K, n = shape.steps_per_delay, shape.history_chunks, shape.n_delays, shape.n_states
    log_mask = np.asarray(shape.log_mask)
    delays = system.delays(params)
    tau_min = jnp.min(delays)
    h = tau_min / M
    field = functools.partial(_field, system, params, log_mask)
    nonnegative = np.asarray(shape.nonnegative_mask or (False,) * n, dtype=bool) & ~log_mask
    project = bool(nonnegative.any())
    ledger = np.asarray(shape.ledger or (-1,) * n)
    booked = project and bool(np.any(ledger[nonnegative] >= 0))
    if booked:  # book[i, j] = 1: what the projection adds to component i is taken from j
        book = np.zeros((n, n))
        rows = np.flatnonzero(nonnegative & (ledger >= 0))
        book[rows, ledger[rows]] = 1.0
        book = jnp.asarray(book)

    if K == 1 and H == 1:
        delay_index, delay_theta = _static_delay_positions(shape)
        delay_index = jnp.asarray(delay_index)
    else:
        delay_index, delay_theta = _delay_positions(shape, M * (delays / tau_min))

    # Initial buffer: history nodes at t = (p - H M) h, p = 0 .. H M.
    node_t = (jnp.arange(H * M + 1) - H * M) * h

    def history_mixed(t):
        return to_mixed(system.history(t, params), log_mask)

    buf_z, buf_f = jax.vmap(lambda t: jax.jvp(history_mixed, (t,), (jnp.ones_like(t),)))(node_t)
    buf_fr = buf_fl = buf_f

    def chunk_step(carry, chunk):
        buf_z, buf_fr, buf_fl, first_over, first_nan = carry
        t0 = chunk * M * h
        delayed = _interpolate(buf_z, buf_fr, buf_fl, delay_index, delay_theta, h)  # (2M+1, K, n)
        if project:  # the interpolant of a component kept >= 0 may dip below 0 between nodes
            delayed = jnp.where(nonnegative, jnp.maximum(delayed, 0.0), delayed)
        at_start, at_half, at_end = delayed[0:-1:2], delayed[1::2], delayed[2::2]

        def rk4_step(z, xs):
            j, d0, dh, d1 = xs
            t = t0 + j * h
            k1 = field(t, z, d0)
            k2 = field(t + 0.5 * h, z + 0.5 * h * k1, dh)
            k3 = field(t + 0.5 * h, z + 0.5 * h * k2, dh)
            k4 = field(t + h, z + h * k3, d1)
            z_next = z + (h / 6.0) * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
            if project:
                projected = jnp.where(nonnegative, jnp.maximum(z_next, 0.0), z_next)
                if booked:
                    projected = projected - (projected - z_next) @ book
                z_next = projected
            return z_next, (z_next, k1)

        z_start = buf_z[-1]
        unroll = _UNROLL if n * K <= _SMALL_SYSTEM else _UNROLL_LARGE
        z_last, (z_nodes, k_nodes) = jax.lax.scan(
            rk4_step, z_start, (jnp.arange(M), at_start, at_half, at_end), unroll=unroll
        )
        f_end = field(t0 + M * h, z_last, at_end[-1])
        chunk_z = jnp.concatenate([z_start[None], z_nodes])
        chunk_fr = jnp.concatenate([k_nodes, f_end[None]])
        chunk_fl = jnp.concatenate([buf_fl[-1:], k_nodes[1:], f_end[None]])

        # Health of the nodes inside [0, t_final].
        node_times = t0 + jnp.arange(1, M + 1) * h
        inside = node_times <= t_final * (1.0 + 1e-12)
        x_nodes = to_natural(z_nodes, log_mask)
        is_nan = jnp.any(jnp.isnan(z_nodes), axis=-1) & inside
        is_over = jnp.any(jnp.isinf(x_nodes) & ~jnp.isnan(z_nodes), axis=-1) & inside
        first_over = jnp.minimum(first_over, jnp.min(jnp.where(is_over, node_times, jnp.inf)))
        first_nan = jnp.minimum(first_nan, jnp.min(jnp.where(is_nan, node_times, jnp.inf)))

        # Save times falling in this chunk.
        slot = save_start[chunk] + jnp.arange(shape.save_slots)
        valid = slot < save_start[chunk + 1]
        slot = jnp.where(valid, slot, shape.n_saves)  # out of range: dropped by the scatter
        pos = jnp.clip(save_pos[jnp.minimum(slot, shape.n_saves - 1)], 0.0, M)
        index = jnp.clip(jnp.floor(pos), 0, M - 1).astype(jnp.int32)
        saved = _interpolate(chunk_z, chunk_fr, chunk_fl, index, pos - index, h)
        if project:
            saved = jnp.where(nonnegative, jnp.maximum(saved, 0.0), saved)

        new_buf_z = jnp.concatenate([buf_z[M:], z_nodes])
        new_buf_fr = jnp.concatenate([buf_fr[M:-1], chunk_fr])
        new_buf_fl = jnp.concatenate([buf_fl[M:], chunk_fl[1:]])
        return (new_buf_z, new_buf_fr, new_buf_fl, first_over, first_nan), (slot, saved)

    init = (buf_z, buf_fr, buf_fl, jnp.asarray(jnp.inf), jnp.asarray(jnp.inf))
    (_, _, _, first_over, first_nan), (slots, saved) = jax.lax.scan(
        chunk_step, init, jnp.arange(shape.n_chunks)
    )
    z_saved = jnp.full((shape.n_saves, n), jnp.nan, dtype=saved.dtype)
    z_saved = z_saved.at[slots.reshape(-1)].set(saved.reshape(-1, n), mode="drop")
    return z_saved, first_over, first_nan


def _field(system: DDESystem, params, log_mask, t, z, z_delayed):
    return system.vector_field_log(t, z, z_delayed, params, log_mask)


@functools.lru_cache(maxsize=64)
def build_kernel(system: DDESystem, shape: KernelShape):
    """The jitted, vmapped kernel for one system and one static shape (cached)."""

    def one(params, t_final, save_pos, save_start):
        return _integrate_point(system, shape, params, t_final, save_pos, save_start)

    return jax.jit(jax.vmap(one))


def plan_saves(tau_min: np.ndarray, steps_per_delay: int, n_chunks: int, save_times: np.ndarray):
    """Host-side bookkeeping of where each save time falls.

    tau_min: (B,) smallest delay per point, seconds; save_times: (B, S) seconds, sorted.
    Returns save_pos (B, S) in steps from the start of the chunk, save_start (B, n_chunks + 1)
    and the largest number of save times in one chunk.
    """
    chunk_of = np.clip(np.floor(save_times / tau_min[:, None]), 0, n_chunks - 1).astype(np.int64)
    save_pos = save_times / tau_min[:, None] * steps_per_delay - chunk_of * steps_per_delay
    chunks = np.arange(n_chunks + 1)
    save_start = np.stack([np.searchsorted(row, chunks, side="left") for row in chunk_of])
    slots = int(np.max(np.diff(save_start, axis=1))) if save_times.shape[1] else 1
    return save_pos, save_start.astype(np.int32), max(slots, 1)


def history_chunks(delays: np.ndarray) -> int:
    """H = ceil(tau_max / tau_min) over a batch of delays (B, K)."""
    ratio = np.max(delays, axis=1) / np.min(delays, axis=1)
    return max(1, int(math.ceil(float(np.max(ratio)) - 1e-12)))


@dataclass(frozen=True)
class RK4(Method):
    """Fixed-step RK4 by the method of steps (module docstring); the production solver.

    steps_per_delay: RK4 steps per smallest delay (the step is h = tau_min / steps_per_delay),
        an even whole number >= 2; raised (to a power of two) where the model's `max_step` asks
        for a smaller step.
    max_steps_per_delay: the finest resolution the refinement to `solve`'s rtol may use: each
        point is also integrated at half the resolution, and points whose estimated error
        exceeds rtol are integrated again at twice the resolution, up to this. The estimate is
        |z_M - z_{M/2}| / 15 (Richardson, order 4), in relative terms (log components) or
        relative to the component's largest magnitude.
    log_space: integrate the components the model marks positive as log x.
    """

    steps_per_delay: int = 64
    max_steps_per_delay: int = 4096
    log_space: bool = True
    name = "rk4"
    adaptive = True

    def __post_init__(self):
        check_resolution("steps_per_delay", self.steps_per_delay)
        check_resolution("max_steps_per_delay", self.max_steps_per_delay)

    def run(self, system, params, size, t_final, grid, names, rtol, batch_chunk, progress, started) -> Solution:
        point0 = take(params, np.array([0]))
        delays = host_delays(system, params)
        one_point = jax.tree_util.tree_map(lambda a: a[0], point0)
        n_states = system.state_size(one_point)
        log_mask = (tuple(bool(b) for b in system.log_components(one_point)) if self.log_space
                    else (False,) * n_states)
        nonnegative = tuple(bool(b) for b in system.nonnegative_components(one_point))
        ledger = tuple(int(i) for i in system.projection_ledger(one_point))
        steps_per_delay = max(self.steps_per_delay, steps_for_max_step(system, params, delays))
        max_steps_per_delay = max(self.max_steps_per_delay, steps_per_delay)
        runner = Runner(system, params, delays, t_final, grid, n_states, log_mask, batch_chunk, progress,
                        nonnegative, ledger)
        if rtol is None:
            z, over, nan = runner.run(np.arange(size), steps_per_delay)
            used = np.full(size, steps_per_delay)
            error = None
            tolerance_failed = np.zeros(size, dtype=bool)
        else:
            z, over, nan, used, error, tolerance_failed = refine(
                runner, size, steps_per_delay, max_steps_per_delay, rtol, log_mask
            )
        ys = z  # log components back to natural units, in place (no second batch-sized array)
        with np.errstate(over="ignore"):  # overflow is reported by the status, not a warning
            for component in np.flatnonzero(log_mask):
                np.exp(ys[..., component], out=ys[..., component])
        status, messages = statuses(over, nan, tolerance_failed)
        info = {"wall_s": time.perf_counter() - started, "batch_chunk": batch_chunk, "log_mask": log_mask,
                "rtol": rtol}
        return Solution(grid, ys, status, messages, names, "rk4", used, error, info)


def steps_for_max_step(system: DDESystem, params: Any, delays: np.ndarray) -> int:
    """Fewest steps per smallest delay that respect the model's `max_step` at every point
    (a power of two, like the refinement levels); 1 if the model sets no limit."""
    point0 = jax.tree_util.tree_map(lambda a: a[0], params)
    if system.max_step(point0) is None:
        return 1
    limit = np.asarray(jax.vmap(system.max_step)(params), dtype=np.float64).reshape(-1)
    ratio = np.min(delays, axis=1) / np.where(limit > 0, limit, np.nan)
    needed = float(np.nanmax(ratio)) if np.any(np.isfinite(ratio)) else 1.0
    return round_up_pow2(int(math.ceil(needed - 1e-9)))


def check_resolution(name: str, value: int) -> None:
    if not isinstance(value, (int, np.integer)) or value < 2 or value % 2:
        raise ParameterError(name, value, "an even whole number of steps per delay, >= 2")


class Runner:
    """Runs the kernel over any subset of the batch, chunked and padded to a fixed size."""

    def __init__(self, system, params, delays, t_final, grid, n_states, log_mask, batch_chunk, progress,
                 nonnegative=(), ledger=()):
        self.system = system
        self.params = params
        self.delays = delays
        self.t_final = t_final
        self.grid = grid
        self.n_states = n_states
        self.log_mask = log_mask
        self.batch_chunk = batch_chunk
        self.progress = progress
        self.nonnegative = nonnegative
        self.ledger = ledger
        self.history_chunks = history_chunks(delays)
        self.tau_min = np.min(delays, axis=1)
        self.devices = jax.local_devices()

    def run(self, points: np.ndarray, steps: int, sink=None, coarse: bool = False):
        """Integrate `points` (indices into the batch) at `steps` per smallest delay; the outputs
        are returned, or handed to `sink` chunk by chunk (`_batching.run_in_chunks`). (`coarse`,
        the solution only serves as a comparison, changes nothing here: RK4 always runs in
        float64.)"""
        n_chunks = max(1, int(np.max(np.ceil(self.t_final[points] / self.tau_min[points] - 1e-9))))

        def launch(padded, spread):
            save_pos, save_start, slots = plan_saves(self.tau_min[padded], steps, n_chunks, self.grid[padded])
            shape = KernelShape(
                steps_per_delay=steps,
                n_chunks=n_chunks,
                history_chunks=self.history_chunks,
                n_delays=self.delays.shape[1],
                n_states=self.n_states,
                n_saves=self.grid.shape[1],
                save_slots=round_up_pow2(slots),
                log_mask=self.log_mask,
                nonnegative_mask=self.nonnegative,
                ledger=self.ledger,
            )
            # one transfer for every array of the launch
            params, t_final, save_pos, save_start = spread.put((take(self.params, padded), self.t_final[padded],
                                                                save_pos, save_start))
            return spread.call(build_kernel(self.system, shape), params, t_final, save_pos, save_start)

        return run_in_chunks(points, self.chunk_size(len(points), steps), self.grid.shape[1], self.n_states,
                             launch, self.progress, sink)

    def chunk_size(self, size: int, steps: int) -> int:
        """Points integrated together at `steps` per smallest delay.

        At most `batch_chunk`, small enough that a chunk's per-interval arrays (steps x points)
        stay in the CPU's cache, and as even as the devices allow (`_batching.chunk_width`). A
        batch smaller than _MIN_CHUNK is not padded up to it: the padding would only repeat its
        points (a single network simulation would do 16 times the work).
        """
        cache_cap = round_down_pow2(max(_MIN_CHUNK, _LANE_STEP_BUDGET // steps))
        return chunk_width(size, len(self.devices), min(self.batch_chunk, cache_cap), _MIN_CHUNK)


#: Largest steps-per-delay x points of one chunk: small enough that a chunk's per-interval arrays
#: stay in the CPU's cache at high resolution, large enough that a chunk of few points is not
#: dominated by the per-step loop overhead. Chosen by timing the refinement of the MIAIMD
#: throughput benchmark at several budgets (benchmarks/RESULTS.md, appendix, "DDE throughput and
#: accuracy", 2026-11-22).
_LANE_STEP_BUDGET = 32768
#: Fewest points in a chunk (below it the loop overhead per step dominates).
_MIN_CHUNK = 16


def rk4_error(z_fine: np.ndarray, z_coarse: np.ndarray, log_mask: tuple[bool, ...]) -> np.ndarray:
    """Richardson estimate of the fine solution's max error per point (order 4: difference / 15);
    log-space components absolutely (a relative error), the others relative to their largest
    magnitude."""
    mask = np.asarray(log_mask)
    return max_difference(z_fine, z_coarse, lambda z: 15.0 * np.where(mask, 1.0, largest_magnitude(z)))


def refine(runner: Runner, size: int, steps: int, max_steps: int, rtol: float, log_mask):
    """Fixed-step solves at steps/2, steps, 2 steps, ... (up to max_steps) per smallest delay,
    until each point's error estimate is at most rtol."""
    rungs = [steps // 2, steps]
    while rungs[-1] * 2 <= max_steps:
        rungs.append(rungs[-1] * 2)
    z, over, nan, rung, error, tolerance_failed = climb(
        runner.run, size, rungs, lambda fine, coarse: rk4_error(fine, coarse, log_mask), rtol)
    return z, over, nan, np.asarray(rungs)[rung], error, tolerance_failed
