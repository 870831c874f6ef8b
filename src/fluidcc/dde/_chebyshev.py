"""Exponential Chebyshev method of steps, for systems linear in the current state with one delay.

A system that provides `DDESystem.linear_form` has, component by component,

    x'(t) = a(t, x(t - tau)) x(t) + b(t, x(t - tau)),

one constant delay tau per point. On each delay interval [k tau, (k + 1) tau] the delayed state is
the (already computed) solution on the previous interval, so the equation is a linear ODE with
known coefficients, solved by variation of constants:

    x(t) = e^{A(t)} [ x(t_0) + int_{t_0}^t e^{-A(s)} b(s) ds ],   A(t) = int_{t_0}^t a(s) ds.

Each interval is cut into M equal pieces, each carrying the solution at n Chebyshev-Lobatto
nodes. Because the pieces of consecutive intervals are one delay apart, the delayed state at a
node is the state at the same node of the previous interval: no interpolation is needed and the
history is sampled at the nodes of [-tau, 0]. The two integrals are spectral (the integral of the
polynomial that interpolates the integrand at the nodes), so a piece's error falls faster than
any power of n while the solution is smooth on it; the solution is analytic inside each delay
interval (its derivative jumps only at the interval ends, which are piece ends), which is what
makes few nodes enough. The pieces of one interval are chained by an associative scan of their
affine maps x_start -> x_end, so an interval costs two small matrix products per piece and one
exponential per node, with no sequential loop over pieces.

Save times anywhere in [0, t_final] are read from the piece that holds them by barycentric
interpolation at its nodes; when every save time is the end of a delay interval (one save per
delay, say), the kernel keeps each interval's last node and reads the saves from those instead.
A point fails with a status, never a wrong number: overflow when a component becomes infinite,
non-finite when it becomes NaN.

A batch runs in chunks of nearly equal width on every device (`_batching.chunk_width`), each
chunk at most `ChebyshevRunner.NODE_BUDGET` nodes wide so that its arrays stay in the cache.
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ..errors import ParameterError
from ._batching import (chunk_width, climb, host_delays, largest_magnitude, max_difference, round_down_pow2,
                        round_up_pow2, row_blocks, run_in_chunks, take)
from ._method import Method, whole_at_least
from ._solution import Solution, statuses


@functools.lru_cache(maxsize=None)
def lobatto_nodes(n: int) -> np.ndarray:
    """The n Chebyshev-Lobatto points mapped to [0, 1], ascending (0 and 1 included)."""
    return 0.5 * (1.0 - np.cos(np.pi * np.arange(n) / (n - 1)))


@functools.lru_cache(maxsize=None)
def integration_matrix(n: int) -> np.ndarray:
    """Q (n, n): (Q f)_i = int_0^{x_i} p(s) ds, p the polynomial interpolating f at the nodes x."""
    from numpy.polynomial import chebyshev

    x = 2.0 * lobatto_nodes(n) - 1.0
    to_coefficients = np.linalg.inv(chebyshev.chebvander(x, n - 1))
    basis_integrals = np.empty((n, n))
    for k in range(n):
        unit = np.zeros(n)
        unit[k] = 1.0
        basis_integrals[:, k] = chebyshev.chebval(x, chebyshev.chebint(unit, lbnd=-1.0))
    return 0.5 * basis_integrals @ to_coefficients  # 0.5: d s / d x on [0, 1]


@functools.lru_cache(maxsize=None)
def barycentric_weights(n: int) -> np.ndarray:
    """Barycentric weights of the Chebyshev-Lobatto points: (-1)^j, halved at both ends."""
    weights = (-1.0) ** np.arange(n)
    weights[0] *= 0.5
    weights[-1] *= 0.5
    return weights


def _interpolate(values: jnp.ndarray, local: jnp.ndarray, n: int) -> jnp.ndarray:
    """Barycentric interpolation: values (..., n) at the nodes, local (...) in [0, 1]."""
    nodes = jnp.asarray(lobatto_nodes(n))
    weights = jnp.asarray(barycentric_weights(n))
    diff = local[..., None] - nodes
    exact = diff == 0.0
    safe = jnp.where(exact, 1.0, diff)
    terms = weights / safe
    value = jnp.sum(terms * values, axis=-1) / jnp.sum(terms, axis=-1)
    hit = jnp.sum(jnp.where(exact, values, 0.0), axis=-1)
    return jnp.where(jnp.any(exact, axis=-1), hit, value)


def _combine(left, right):
    """Compose two affine maps x -> g x + h (left first)."""
    return left[0] * right[0], left[1] * right[0] + right[1]


def _batch_last(function):
    """vmap `function(t, x, params) -> (a, b)` of one point over a leading node axis, a piece
    axis and a trailing batch axis: t (n, M, B), x (n, M, S, B), params (B,) -> (n, M, S, B) each.
    The batch is the last (contiguous) axis, so elementwise work vectorizes across points and the
    integrals over nodes are one matrix product."""
    per_point = jax.vmap(function, in_axes=(0, 1, 0), out_axes=1)
    per_piece = jax.vmap(per_point, in_axes=(0, 0, None))
    return jax.vmap(per_piece, in_axes=(0, 0, None))


@functools.partial(jax.jit, static_argnames=("system", "pieces", "nodes", "n_intervals", "n_states", "slots",
                                             "at_ends", "dtype"))
def _kernel(system, pieces: int, nodes: int, n_intervals: int, n_states: int, slots: int, at_ends: bool, dtype: str,
            params, tau, grid):
    """Integrate a chunk of points over n_intervals delay intervals.

    params: the chunk's parameter pytree (B,); tau: (B,) delays; grid: (B, S) save times, sorted,
    in [0, n_intervals tau]; slots: the most save times any interval of any point holds (see
    `save_slots`); at_ends: every save time is 0 or the end of a delay interval (see
    `saves_at_ends`), so each interval's last node is kept and the saves are read from those at
    the end, with no search for the save times in the loop. dtype: the floating type the solution
    is computed in ("float64", or "float32" for a coarse rung, see `ChebyshevRunner.run`); the
    save times are located in float64 all the same. Returns the saves (B, S, n_states) and the
    first overflow time and first NaN time (B,), inf where none happened, in float64.

    Inside, arrays are laid out (nodes, pieces, states, points).
    """
    size = tau.shape[0]
    output = tau.dtype
    params = jax.tree_util.tree_map(lambda a: a.astype(dtype) if jnp.issubdtype(a.dtype, jnp.floating) else a,
                                    params)
    delay = tau.astype(dtype)  # the delays in the solution's type; `tau` locates the save times
    # Node offsets within one interval, in delay units: node j of piece p at (p + x_j) / M.
    offsets = jnp.asarray((np.arange(pieces)[None, :] + lobatto_nodes(nodes)[:, None]) / pieces, dtype=dtype)  # (n, M)
    q = jnp.asarray(integration_matrix(nodes) / pieces, dtype=dtype)  # integral over a piece of length 1/M

    linear_form = _batch_last(system.linear_form)
    history_nodes = jax.vmap(jax.vmap(jax.vmap(system.history, in_axes=(0, 0), out_axes=1),
                                      in_axes=(0, None)), in_axes=(0, None))

    def coefficients(times, previous, params):  # a model's (a, b) in the solution's type
        a, b = linear_form(times, previous, params)
        return a.astype(dtype), b.astype(dtype)

    def node_times(k):  # the nodes of delay interval k, [k tau, (k + 1) tau]: (n, M, B)
        return delay * (jnp.asarray(k).astype(dtype) + offsets[..., None])

    previous = history_nodes(node_times(-1.0), params).astype(dtype)  # the history on [-tau, 0]: (n, M, S, B)
    start = jax.vmap(system.history, in_axes=(0, 0), out_axes=1)(jnp.zeros_like(delay), params).astype(dtype)  # (S, B)

    def integrate(values):  # (n, M, S, B) -> integral from each piece's start, same shape
        return (q @ values.reshape(nodes, -1)).reshape(values.shape)

    n_saves = grid.shape[1]
    slot_range = jnp.arange(slots)

    def step(carry, k):
        previous, start, over, nan, pointer = carry
        a, b = coefficients(node_times(k), previous, params)  # (n, M, S, B) each
        big_a = delay * integrate(a)
        # e^{-A}, computed once per node: without the barrier XLA fuses the exponential into both
        # of its uses below and turns the division by it into a product with e^{+A}, two
        # exponentials per node instead of one exponential and a division (measured on a CPU:
        # benchmarks/RESULTS.md, appendix, "DDE throughput and accuracy", 2026-11-24; not measured
        # on a GPU, where an exponential costs less)
        decay = jax.lax.optimization_barrier(jnp.exp(-big_a))
        forcing = delay * integrate(decay * b)
        gain = 1.0 / decay[-1]  # (M, S, B): x_end = gain x_start + shift
        shift = forcing[-1] * gain

        def first_nan_coefficient(_):
            # the node times and the coefficients computed again, from the carry, so that the loop
            # does not keep them for this rare branch at every interval
            times = node_times(k)
            field_a, field_b = coefficients(times, previous, params)
            return jnp.min(jnp.where(jnp.isnan(field_a) | jnp.isnan(field_b), times[:, :, None, :], jnp.inf),
                           axis=(0, 1, 2))

        # a NaN coefficient makes every integral over its piece NaN from the piece's second node on,
        # and so the state: the first NaN coefficient says when it appeared. It is looked for before
        # the state is computed (and only where an integral over a piece is NaN), so that the state
        # can take the place of `previous` without a copy of it
        field_nan = jnp.any(jnp.isnan(big_a[-1]) | jnp.isnan(forcing[-1]), axis=(0, 1)) & jnp.isinf(nan)
        in_field = jax.lax.cond(jnp.any(field_nan), first_nan_coefficient, lambda _: jnp.full_like(nan, jnp.inf),
                                None)
        # (in_field is never NaN: the state's start depends on it only so that the search above
        # runs before the state is written in place of `previous`)
        start = jnp.where(jnp.isnan(in_field), jnp.nan, start)
        if pieces > 1:
            gains, shifts = jax.lax.associative_scan(_combine, (gain, shift), axis=0)
            ends = start * gains + shifts
            starts = jnp.concatenate([start[None], ends[:-1]], axis=0)
        else:
            starts = start[None]
        x = (starts + forcing) / decay  # (n, M, S, B)

        # failures: the largest magnitude is NaN if any node is NaN (the point is then non-finite,
        # even if another node is infinite), else inf if any is infinite (overflow); the time of
        # the first failing node is only looked for in the intervals where some point fails
        largest = jnp.max(jnp.abs(x), axis=(0, 1, 2))
        new_over = jnp.isinf(over) & jnp.isinf(largest)
        new_nan = jnp.isinf(nan) & jnp.isnan(largest)

        def first_failures(_):
            times = jnp.broadcast_to(node_times(k)[:, :, None, :], x.shape)
            first = lambda bad: jnp.min(jnp.where(bad, times, jnp.inf), axis=(0, 1, 2))  # noqa: E731
            return first(jnp.isinf(x)), jnp.where(jnp.isfinite(in_field), in_field, first(jnp.isnan(x)))

        first_over, first_nan = jax.lax.cond(jnp.any(new_over | new_nan), first_failures,
                                             lambda _: (over, nan), None)
        over = jnp.where(new_over, first_over, over)
        nan = jnp.where(new_nan, first_nan, nan)
        failed = jnp.isfinite(over) | jnp.isfinite(nan)
        end = x[-1, -1]  # (S, B)
        if at_ends:
            return (x, end, over, nan, pointer), jnp.where(failed, jnp.nan, end).astype(output)

        # saves: the next `slots` save times of each point, those that fall in this interval read
        # at their node, or interpolated (barycentric) on the piece that holds them; the
        # interpolation only runs in intervals where some save falls between nodes
        index = pointer[:, None] + slot_range  # (B, K)
        when = jnp.take_along_axis(grid, jnp.minimum(index, n_saves - 1), axis=1)
        ratio = when / tau[:, None]
        here = (index < n_saves) & (_interval_of(ratio, n_intervals) <= k)
        scaled = jnp.clip(ratio - k, 0.0, 1.0) * pieces
        piece = jnp.clip(jnp.floor(scaled), 0, pieces - 1)
        within = scaled - piece
        nearest = jnp.rint(jnp.arccos(jnp.clip(1.0 - 2.0 * within, -1.0, 1.0)) * (nodes - 1) / jnp.pi).astype(jnp.int32)
        on_node = jnp.abs(within - jnp.asarray(lobatto_nodes(nodes))[nearest]) <= NODE_SNAP * pieces
        piece = piece.astype(jnp.int32)
        by_point = jnp.transpose(x, (3, 1, 2, 0))  # (B, M, S, n)
        flat = jnp.swapaxes(by_point, 2, 3).reshape(size, pieces * nodes, n_states)
        at_node = jnp.take_along_axis(flat, (piece * nodes + nearest)[:, :, None], axis=1)  # (B, K, S)

        def between_nodes(_):
            held = by_point if pieces == 1 else jnp.take_along_axis(by_point, piece[:, :, None, None], axis=1)
            return _interpolate(held.astype(output), within[:, :, None], nodes)  # (B, K, S)

        at_node = at_node.astype(output)
        saved = jax.lax.cond(jnp.any(here & ~on_node), between_nodes, lambda _: at_node, None)
        saved = jnp.where(on_node[..., None], at_node, saved)
        saved = jnp.where(failed[:, None, None], jnp.nan, saved)
        destination = jnp.where(here, index, n_saves)  # n_saves: dropped below
        pointer = pointer + jnp.sum(here, axis=1, dtype=pointer.dtype)
        return (x, end, over, nan, pointer), (saved, destination)

    inf = jnp.full(tau.shape, jnp.inf, dtype=dtype)
    pointer = jnp.sum(grid <= 0.0, axis=1).astype(jnp.int32)  # saves at t = 0: the history's value
    (_, _, over, nan, _), out = jax.lax.scan(
        step, (previous, start, inf, inf, pointer), jnp.arange(n_intervals, dtype=tau.dtype)
    )
    at_zero = (grid <= 0.0)[..., None]
    start, over, nan = start.astype(output), over.astype(output), nan.astype(output)
    if at_ends:
        # out: (n_intervals, S, B), the state at the end of each interval; save j of a point is
        # the end of its interval round(t_j / tau) - 1 (or the history's value at t = 0)
        ends = jnp.transpose(out, (2, 0, 1))  # (B, n_intervals, S)
        interval = jnp.clip(jnp.rint(grid / tau[:, None]).astype(jnp.int32) - 1, 0, n_intervals - 1)
        ys = jnp.take_along_axis(ends, interval[..., None], axis=1)
        return jnp.where(at_zero, start.T[:, None, :], ys), over, nan
    saved, destination = out
    ys = jnp.where(at_zero, start.T[:, None, :], jnp.nan)  # every other save is set below
    rows = jnp.broadcast_to(jnp.arange(size)[None, :, None], destination.shape)
    ys = ys.at[rows, destination].set(saved, mode="drop")
    return ys, over, nan


@functools.lru_cache(maxsize=256)
def _kernel_of(system, pieces: int, nodes: int, n_intervals: int, n_states: int, slots: int, at_ends: bool,
               dtype: str):
    """`_kernel` with its static arguments bound: a function of (params, tau, grid), the same
    object for the same arguments (`_batching.Spread` compiles one program per kernel)."""
    return functools.partial(_kernel, system, pieces, nodes, n_intervals, n_states, slots, at_ends, dtype)


def _interval_of(ratio, n_intervals: int):
    """The delay interval holding each time (in delay units): k for times in (k, k + 1]."""
    return jnp.clip(jnp.ceil(ratio) - 1, 0, n_intervals - 1)




#: A save time within this fraction of a delay of a node is read at the node.
NODE_SNAP = 1e-12


#: The most bytes the per-interval ends of one chunk may take for the `at_ends` layout of saves.
ENDS_BUDGET = 1 << 28


def saves_at_ends(tau: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """Per point (B,), whether every save time is 0 or the end of a delay interval (k tau,
    k >= 1, within `NODE_SNAP` of a delay), as on the grid of one save per delay."""
    out = np.empty(grid.shape[0], dtype=bool)
    for rows in row_blocks(grid.shape[0]):  # (in place: a third of the time of the same in new arrays)
        block = grid[rows]
        ratio = block / tau[rows, None]
        off = np.rint(ratio)
        np.subtract(ratio, off, out=off)
        np.abs(off, out=off)
        end = off <= NODE_SNAP  # within NODE_SNAP of a whole number of delays ...
        end &= ratio >= 0.5  # ... that is at least 1
        end |= block <= 0.0
        out[rows] = end.all(axis=1)
    return out


def save_slots(tau: np.ndarray, grid: np.ndarray, n_intervals: int) -> int:
    """The most save times (t > 0) that one delay interval of one point holds (at least 1).

    Interval k holds the times in (k tau, (k + 1) tau], as the kernel assigns them.
    """
    most = 1
    columns = np.arange(grid.shape[1])[None, :]
    for rows in row_blocks(grid.shape[0]):
        block = grid[rows]
        interval = np.clip(np.ceil(block / tau[rows, None]) - 1, 0, n_intervals - 1)
        interval = np.where(block > 0.0, interval, -1.0)
        is_first = np.ones(block.shape, dtype=bool)
        is_first[:, 1:] = interval[:, 1:] != interval[:, :-1]
        first = np.maximum.accumulate(np.where(is_first, columns, 0), axis=1)
        runs = np.where(interval >= 0, columns - first + 1, 0)
        most = max(most, int(runs.max()))
    return most


class ChebyshevRunner:
    """Runs the kernel over any subset of a batch at one resolution, chunked over the devices."""

    #: Most nodes (points x pieces x nodes) of one chunk: larger chunks leave the CPU cache.
    NODE_BUDGET = 32768

    def __init__(self, system, params, tau, t_final, grid, n_states, batch_chunk, progress, take,
                 coarse_float32: bool = False):
        self.system, self.params, self.tau, self.t_final, self.grid = system, params, tau, t_final, grid
        self.n_states, self.batch_chunk, self.progress, self.take = n_states, batch_chunk, progress, take
        self.coarse_float32 = coarse_float32  # see `run`
        self.devices = jax.local_devices()
        self.at_ends = saves_at_ends(tau, grid)  # (B,): decided once, read per subset

    def chunk_size(self, size: int, pieces: int, nodes: int) -> int:
        cap = max(16, self.NODE_BUDGET // (pieces * nodes))
        return chunk_width(size, len(self.devices), min(self.batch_chunk, round_down_pow2(cap)))

    def run(self, points: np.ndarray, resolution: tuple[int, int], sink=None, coarse: bool = False):
        """Integrate `points` (indices into the batch) at (pieces per delay, nodes per piece); the
        outputs are returned, or handed to `sink` chunk by chunk (`_batching.run_in_chunks`).

        coarse: the solution only serves as the comparison for the next rung, which replaces it
        (`_batching.climb`): it is then computed in float32 if the runner was made with
        `coarse_float32` (chosen by the caller from the tolerance, see `COARSE_FLOAT32_RTOL`)."""
        pieces, nodes = resolution
        n_intervals = max(1, int(np.max(np.ceil(self.t_final[points] / self.tau[points] - 1e-9))))
        chunk = self.chunk_size(len(points), pieces, nodes)
        at_ends = n_intervals * self.n_states * chunk * 8 <= ENDS_BUDGET and bool(np.all(self.at_ends[points]))
        dtype = "float32" if coarse and self.coarse_float32 else "float64"
        slots = 1  # (unused when the saves are read from the interval ends)
        if not at_ends:
            slots = round_up_pow2(save_slots(self.tau[points], self.grid[points], n_intervals))

        kernel = _kernel_of(self.system, pieces, nodes, n_intervals, self.n_states, slots, at_ends, dtype)

        def launch(padded, spread):
            # one transfer for every array of the launch
            params, tau, grid = spread.put((self.take(self.params, padded), self.tau[padded], self.grid[padded]))
            return spread.call(kernel, params, tau, grid)

        return run_in_chunks(points, chunk, self.grid.shape[1], self.n_states, launch, self.progress, sink)


#: With a tolerance at least this loose, the refinement's first rung is solved in float32
#: (`ChebyshevRunner.run`): every point is solved again at the second rung, in float64, which
#: replaces it, so it only serves as the comparison that estimates the second rung's error, and a
#: float32 pass costs less than a float64 one on a CPU. Its rounding (float32's unit roundoff is
#: 6e-8) adds to the estimate: at rtol 1e-6 that is no longer far below rtol, and some points go
#: on one more rung. Where the float32 solution fails and the float64 one does not, the first rung
#: is solved again in float64 for the comparison (`_batching.climb`). Every kept solution is
#: float64. Below 1e-6 every rung is float64. What this saves and what it does to the kept
#: solutions' errors, measured on MIAIMD: benchmarks/RESULTS.md, "Chebyshev refinement: error
#: against tolerance", and its appendix, "DDE throughput and accuracy", 2026-11-24.
COARSE_FLOAT32_RTOL = 1e-6


#: The most nodes per piece the refinement adds before it doubles the pieces.
MAX_NODES = 128


def more_nodes(nodes: int) -> int:
    """The next number of nodes per piece on the ladder: the next power of two or one and a half
    times a power of two (..., 8, 12, 16, 24, 32, 48, 64, 96, 128, ...)."""
    power = round_down_pow2(nodes)
    return power * 3 // 2 if nodes < power * 3 // 2 else power * 2


def resolution_ladder(pieces: int, nodes: int, max_pieces: int,
                      max_nodes: int = MAX_NODES) -> list[tuple[int, int]]:
    """Resolutions tried in turn by the refinement: more nodes (`more_nodes`) up to max_nodes,
    then twice the pieces up to max_pieces.

    Nodes come first, and up to many of them: one polynomial of high degree over a delay interval
    follows the steep part of an oscillating point's interval for less work than more pieces of
    fewer nodes (benchmarks/chebyshev_ladder.py; benchmarks/RESULTS.md, "Chebyshev refinement: the
    ladder")."""
    ladder = [(pieces, nodes)]
    while ladder[-1][1] < max_nodes:
        ladder.append((pieces, min(max_nodes, more_nodes(ladder[-1][1]))))
    while ladder[-1][0] * 2 <= max_pieces:
        ladder.append((ladder[-1][0] * 2, ladder[-1][1]))
    return ladder


def relative_difference(fine: np.ndarray, coarse: np.ndarray, positive: tuple[bool, ...]) -> np.ndarray:
    """max |fine - coarse| per point (B,): relative to the value itself for positive components
    (windows, rates), relative to the component's largest magnitude for the others."""
    mask = np.asarray(positive)
    if mask.all():
        return max_difference(fine, coarse, np.abs)
    if not mask.any():
        return max_difference(fine, coarse, largest_magnitude)
    return max_difference(fine, coarse, lambda x: np.where(mask, np.abs(x), largest_magnitude(x)))


def refine(runner: ChebyshevRunner, size: int, ladder: list[tuple[int, int]], rtol: float | None,
           positive: tuple[bool, ...]):
    """Solve at ladder[0]; with rtol, climb the ladder per point until two successive resolutions
    agree to rtol (the finer one is kept; `_batching.climb`). Returns ys, over, nan, the
    resolution index used, the error estimate (None without rtol) and the points that did not
    reach rtol."""
    return climb(runner.run, size, ladder, lambda fine, coarse: relative_difference(fine, coarse, positive), rtol)


@dataclass(frozen=True)
class Chebyshev(Method):
    """The exponential Chebyshev method of steps (module docstring), for models linear in their
    current state with one delay (`DDESystem.linear_form`).

    pieces_per_delay, nodes: each delay interval is cut into this many pieces of `nodes`
    Chebyshev-Lobatto nodes (nodes >= 4). With `solve`'s rtol, the refinement first adds nodes
    (about 1.5 times as many per rung: 12, 16, 24, 32, 48, 64, 96, 128), then doubles the
    pieces up to `max_pieces_per_delay`, per point, until two successive resolutions agree to
    rtol (relative, component by component for positive components, else relative to the
    component's largest magnitude); the finer solution is kept. The estimate is that of the
    coarser solution, so the kept one is usually far more accurate than rtol (measured on one
    model, not a bound: benchmarks/RESULTS.md, "Chebyshev refinement: error against
    tolerance"); at loose tolerances two coarse resolutions can agree on a wrong solution. For
    rtol >= `COARSE_FLOAT32_RTOL` the first resolution, which every point's second one replaces,
    is computed in float32: it only serves as the comparison for the second (computed again in
    float64 where the float32 solution fails and the second does not), and every kept solution
    is float64.
    """

    nodes: int = 16
    pieces_per_delay: int = 1
    max_pieces_per_delay: int = 256
    name = "chebyshev"
    adaptive = True

    def __post_init__(self):
        whole_at_least("pieces_per_delay", self.pieces_per_delay, 1)
        whole_at_least("nodes", self.nodes, 4)
        whole_at_least("max_pieces_per_delay", self.max_pieces_per_delay, 1)

    def ladder(self) -> list[tuple[int, int]]:
        """The (pieces per delay, nodes) resolutions the refinement tries in turn."""
        return resolution_ladder(self.pieces_per_delay, self.nodes, max(self.max_pieces_per_delay, self.pieces_per_delay),
                                 max_nodes=max(MAX_NODES, self.nodes))

    def require(self, system, params) -> None:
        require_linear_form(system, params)

    def run(self, system, params, size, t_final, grid, names, rtol, batch_chunk, progress, started) -> Solution:
        point = jax.tree_util.tree_map(lambda a: a[0], take(params, np.array([0])))
        delays = require_linear_form(system, params)
        n_states = system.state_size(point)
        positive = tuple(bool(b) for b in system.log_components(point))
        runner = ChebyshevRunner(system, params, delays[:, 0], t_final, grid, n_states, batch_chunk, progress, take,
                                 coarse_float32=rtol is not None and rtol >= COARSE_FLOAT32_RTOL)
        ladder = self.ladder()
        ys, over, nan, level, error, failed = refine(runner, size, ladder if rtol is not None else ladder[:1], rtol,
                                                     positive)
        # failures after a point's own end time (a batch runs to its longest horizon) do not count
        over = np.where(over <= t_final, over, np.inf)
        nan = np.where(nan <= t_final, nan, np.inf)
        status, messages = statuses(over, nan, failed)
        used = np.array(ladder)[level]
        info = {"wall_s": time.perf_counter() - started, "batch_chunk": batch_chunk, "rtol": rtol,
                "pieces_per_delay": used[:, 0], "nodes": used[:, 1]}
        return Solution(grid, ys, status, messages, names, "chebyshev", None, error, info)


def require_linear_form(system, params: Any, field: str = "method") -> np.ndarray:
    """Raise a ParameterError naming `field` unless `method="chebyshev"` can integrate the system:
    it must provide `linear_form` and have one delay. Returns the delays, shape (B, 1)."""
    point = jax.tree_util.tree_map(lambda a: a[0], take(params, np.array([0])))
    try:
        system.linear_form(jnp.zeros(()), system.history(jnp.zeros(()), point), point)
    except NotImplementedError:
        raise ParameterError(field, "chebyshev",
                             f"rk4, or chebyshev for a model linear in its current state with one delay "
                             f"({system.name} is not)") from None
    delays = host_delays(system, params)
    if delays.shape[1] != 1:
        raise ParameterError(field, "chebyshev", f"rk4, or chebyshev for a model with one delay "
                                                 f"({system.name} has {delays.shape[1]})")
    return delays
