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
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ._system import DDESystem, to_mixed, to_natural


#: RK4 steps unrolled per iteration of the inner loop (measured fastest on a 2-core CPU for the
#: single-link models) ...
_UNROLL = 8
#: ... and for larger systems (more than _SMALL_SYSTEM states x delays), where unrolling 8 steps
#: doubled the compile time (12.5 s against 7.3 s for iXCP on a 3-link, 8-flow network) and ran
#: no faster.
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


def launch_kernel(system: DDESystem, shape: KernelShape, params: Any, t_final, save_pos, save_start):
    """Dispatch the compiled kernel on one padded chunk of the batch; returns JAX arrays (async)."""
    return build_kernel(system, shape)(params, t_final, save_pos, save_start)
