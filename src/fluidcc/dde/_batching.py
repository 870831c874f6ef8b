"""What the JAX solvers share: a batch run in chunks over the devices, and refinement by rungs.

Both JAX methods (RK4, `_solve`; exponential Chebyshev, `_chebyshev`) integrate any subset of a
batch at one resolution with a kernel of fixed shape, and refine a point by solving it again at
the next resolution until two successive solutions agree. They differ only in the kernel they
launch, in their ladder of resolutions and in how they turn two solutions into an error
estimate.
"""

from __future__ import annotations

import functools
import warnings
from typing import Any, Callable, Sequence

import jax
import numpy as np

from ..errors import ParameterError, ShapeError


class Spread:
    """Where one launch of `run_in_chunks` runs: `count` chunks side by side, one per JAX device
    (the first `count` of `jax.local_devices()`). `put` places a pytree of arrays whose leading
    axis is the count's chunks laid end to end, each device holding its chunk; `call(kernel,
    *args)` runs the kernel (a function of one chunk, jitted or not, the same object for the same
    kernel) on every device at once.

    With more than one device the kernel runs as one program over the devices (`jax.shard_map`),
    compiled once for all of them: a single-device program is compiled for its device, so
    dealing chunks to the devices in turn compiled every kernel once per device (once per core
    on a CPU). Each device runs the kernel on its own chunk as before, so the solutions do not
    change."""

    def __init__(self, count: int):
        self.count = count
        self.devices = tuple(jax.local_devices()[:count])

    def put(self, tree):
        if self.count == 1:
            return jax.device_put(tree, self.devices[0])
        return jax.device_put(tree, _sharding(self.devices))

    def call(self, kernel: Callable, *args):
        if self.count == 1:
            return kernel(*args)
        return _spread(kernel, self.devices)(*args)


@functools.lru_cache(maxsize=None)
def _mesh(devices: tuple):
    return jax.sharding.Mesh(np.array(devices), ("chunks",))


def _sharding(devices: tuple):
    return jax.sharding.NamedSharding(_mesh(devices), jax.sharding.PartitionSpec("chunks"))


@functools.lru_cache(maxsize=256)
def _spread(kernel: Callable, devices: tuple):
    """`kernel` as one jitted program over `devices`, each running it on its block of the leading
    axis of every argument and output. (The kernels' devices do not talk to each other, so their
    values are not typed by axis: `check_vma=False`.)"""
    spec = jax.sharding.PartitionSpec("chunks")
    return jax.jit(jax.shard_map(kernel, mesh=_mesh(devices), in_specs=spec, out_specs=spec, check_vma=False))


def run_in_chunks(points: np.ndarray, chunk: int, n_saves: int, n_states: int,
                  launch: Callable, progress=None, sink: Callable | None = None):
    """Launch `launch(padded, spread)` for the chunks of `points` (indices into the batch), as
    many side by side as there are JAX devices (`Spread`; fewer if the batch has fewer chunks):
    `padded` holds their points end to end, the last chunk padded with copies of the last point,
    and a launch that holds fewer chunks than the others with whole chunks of it. `launch`
    returns (saves (points, n_saves, n_states), overflow time (points,), non-finite time
    (points,)) for the points of `padded`. JAX dispatches asynchronously: a launch's outputs are
    collected once two later launches are dispatched, so the devices run those while the host
    collects it.

    Without `sink`, returns the three gathered over `points`. With it, each launch's outputs go to
    `sink(rows, saves, over, nan)` as it finishes (rows: the slice of `points` it holds), in
    order, while the devices run the launch after it, and nothing is returned.
    `progress(done, total)` is called as launches finish."""
    size = len(points)
    spread = Spread(max(1, min(len(jax.local_devices()), -(-size // chunk))))
    width = chunk * spread.count
    gather = sink is None
    if gather:
        saves = np.empty((size, n_saves, n_states))
        over = np.empty(size)
        nan = np.empty(size)

        def sink(rows, s, o, m):
            saves[rows], over[rows], nan[rows] = s, o, m

    def collect(item):
        start, n, outputs = item
        s, o, m = (np.asarray(a)[:n] for a in outputs)
        sink(slice(start, start + n), s, o, m)
        if progress is not None:
            progress(start + n, size)

    pending = []
    for start in range(0, size, width):
        sel = points[start : start + width]
        padded = np.concatenate([sel, np.full(width - len(sel), sel[-1])])
        pending.append((start, len(sel), launch(padded, spread)))
        while len(pending) > 2:
            collect(pending.pop(0))
    for item in pending:
        collect(item)
    return (saves, over, nan) if gather else None


def round_up_pow2(value: int) -> int:
    """The smallest power of two >= value (1 for value <= 1): a static size rounded so that small
    changes reuse a compiled kernel."""
    return 1 << (max(value, 1) - 1).bit_length()


def round_down_pow2(value: int) -> int:
    """The largest power of two <= value (value >= 1)."""
    return 1 << (value.bit_length() - 1)


def chunk_width(size: int, devices: int, cap: int, smallest: int = 1) -> int:
    """Points per chunk when `size` points run on `devices` devices, at most `cap` per chunk.

    The chunks run one per device at once (`run_in_chunks`) and the last one is padded, so the
    width is chosen for as many rounds of chunks as the cap requires, every device busy in every
    round: ceil(size / (devices x rounds)) points, rounded up to a power of two or to a multiple
    of an eighth of the cap (each width is one compilation of a kernel, so there are few of them).
    At least `smallest` (below it the per-step loop overhead dominates), unless the batch itself
    is smaller.
    """
    cap = max(1, cap)
    rounds = -(-size // (devices * cap))
    want = max(1, -(-size // (devices * max(rounds, 1))))
    granule = max(1, cap // 8)
    width = min(cap, -(-want // granule) * granule, round_up_pow2(want))
    return max(width, min(smallest, round_up_pow2(size), cap))


def climb(run: Callable, size: int, rungs: Sequence, estimate: Callable, rtol: float | None):
    """Refinement by rungs. Every point is solved at rungs[0] and, with rtol, at rungs[1]; from
    then on, rung by rung, only the points whose estimate (of their last two solutions) is above
    rtol and whose solution is still finite. The finer solution is kept.

    run(points, rung, sink, coarse=False) hands the solutions of those points to sink(rows, saves,
    overflow time, non-finite time) chunk by chunk (`run_in_chunks`): each chunk is compared with
    the point's previous solution and stored while the devices run the next chunks. The first
    call returns its solutions instead, with coarse=True when they will all be replaced; a point
    whose coarse solution is not finite while its second one is gets rungs[0] again in full
    (coarse=False) for its estimate.
    estimate(fine, coarse) -> error per point. Returns saves, overflow, non-finite, the index of
    the rung each point ended on, the error estimate (None without rtol) and the points that are
    finite but did not reach rtol."""
    everyone = np.arange(size)
    # with rtol and a second rung, every point is solved again at rungs[1], which replaces the
    # first solution: that one only serves as the comparison (run may then solve it more cheaply)
    coarse = rtol is not None and len(rungs) > 1
    saves, over, nan = run(everyone, rungs[0], None, coarse=coarse)
    rung = np.zeros(size, dtype=np.int64)
    if rtol is None:
        return saves, over, nan, rung, None, np.zeros(size, dtype=bool)
    error = np.full(size, np.inf)
    pending = everyone
    for index, resolution in enumerate(rungs[1:], start=1):
        if not pending.size:
            break

        def keep(rows, finer, over_f, nan_f, points=pending):
            at = points[rows]  # a chunk's points: a few thousand rows at most
            error[at] = estimate(finer, saves[at])
            saves[at], over[at], nan[at] = finer, over_f, nan_f

        run(pending, resolution, keep)
        rung[pending] = index
        healthy = ~np.isfinite(over[pending]) & ~np.isfinite(nan[pending])
        if index == 1 and coarse:
            # where the cheaper first solution failed (a float32 one overflows far sooner) and the
            # second did not, compare the second with the first rung solved in full instead
            again = pending[healthy & ~np.isfinite(error[pending])]
            if again.size:
                error[again] = estimate(saves[again], run(again, rungs[0], None)[0])
        pending = pending[(error[pending] > rtol) & healthy]
    failed = np.zeros(size, dtype=bool)  # (with one rung only, every finite point: no estimate)
    failed[pending[~np.isfinite(over[pending]) & ~np.isfinite(nan[pending])]] = True
    return saves, over, nan, rung, error, failed


#: Rows (points) per block of the host-side work on whole-batch arrays (checking save grids,
#: comparing two solutions): its temporaries then stay a few blocks' worth, whatever the batch,
#: and with a few hundred saves per point they stay in the CPU's cache (benchmarks/RESULTS.md,
#: "DDE memory", and its appendix, 2026-11-24).
ROW_BLOCK = 1 << 10


def row_blocks(size: int):
    """Slices of at most `ROW_BLOCK` consecutive rows covering range(size)."""
    return (slice(start, min(start + ROW_BLOCK, size)) for start in range(0, size, ROW_BLOCK))


def largest_magnitude(saves: np.ndarray) -> np.ndarray:
    """Per point and component, the largest magnitude over the saves (at least 1e-300), shape
    (B, 1, n)."""
    out = np.empty((saves.shape[0], 1, saves.shape[2]))
    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all NaN: a failed point, its estimate is inf anyway
        for rows in row_blocks(saves.shape[0]):
            out[rows] = np.maximum(np.nanmax(np.abs(saves[rows]), axis=1, keepdims=True), 1e-300)
    return out


def max_difference(fine: np.ndarray, coarse: np.ndarray, scale_of: Callable) -> np.ndarray:
    """max over saves and components of |fine - coarse| / scale_of(fine), per point; inf where
    either solution (or the quotient) is not finite. scale_of(rows of fine) -> a scale that
    broadcasts against them. Block by block of rows, so that the temporaries stay small."""
    out = np.empty(fine.shape[0])
    for rows in row_blocks(fine.shape[0]):
        f, c = fine[rows], coarse[rows]
        with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
            # a non-finite save in either solution makes the quotient NaN or inf there (the
            # scale is finite or comes from that same non-finite value), and the largest
            # of a row is NaN if any of its values is NaN
            diff = np.subtract(f, c)
            np.abs(diff, out=diff)
            np.divide(diff, scale_of(f), out=diff)
            largest = np.max(diff, axis=(1, 2))
        out[rows] = np.where(np.isnan(largest), np.inf, largest)
    return out

def batch_size(params: Any) -> int:
    """The leading-axis length shared by every leaf of a parameter batch."""
    leaves = jax.tree_util.tree_leaves(params)
    if not leaves:
        raise ShapeError("params", params, "a parameter batch with at least one array")
    sizes = {np.shape(leaf)[0] if np.ndim(leaf) else None for leaf in leaves}
    if None in sizes:
        raise ShapeError("params", "a scalar leaf", "every parameter with a leading batch axis")
    if len(sizes) != 1:
        raise ShapeError("params", sorted(sizes), "one batch size shared by every parameter")
    size = sizes.pop()
    if size == 0:
        raise ShapeError("params", "an empty batch", "a batch of at least one parameter point")
    return int(size)


def take(params: Any, index: np.ndarray) -> Any:
    """Select points of a parameter batch (numpy fancy indexing on every leaf)."""
    return jax.tree_util.tree_map(lambda leaf: np.asarray(leaf)[index], params)


def batch_vector(name: str, value, size: int) -> np.ndarray:
    """A scalar or a (B,) array as a float64 (B,) array (raises naming `name`)."""
    array = np.asarray(value, dtype=np.float64)
    if array.ndim == 0:
        array = np.full(size, float(array))
    if array.shape != (size,):
        raise ShapeError(name, f"shape {array.shape}", f"a scalar or shape ({size},) for a batch of {size}")
    return array


def save_grid(save_times, t_final: np.ndarray) -> np.ndarray:
    """The save times as a checked (B, S) grid: (S,) shared or (B, S), sorted, within [0, t_final];
    None saves the final state only."""
    size = t_final.shape[0]
    if save_times is None:
        return t_final[:, None].copy()
    grid = np.asarray(save_times, dtype=np.float64)
    if grid.ndim == 1:
        grid = np.broadcast_to(grid, (size, grid.shape[0])).copy()
    if grid.ndim != 2 or grid.shape[0] != size or grid.shape[1] == 0:
        raise ShapeError(
            "save_times", f"shape {np.shape(save_times)}", f"shape (S,) or ({size}, S) with S >= 1"
        )
    for rows in row_blocks(size):  # by blocks of points: no temporaries as large as the grid
        block = grid[rows]
        if not np.all(np.isfinite(block)) or np.any(block < 0):
            raise ParameterError("save_times", block.min(), "finite times >= 0 s")
        if np.any(np.diff(block, axis=1) < 0):
            raise ParameterError("save_times", "an unsorted grid", "times sorted in increasing order")
        if np.any(block > t_final[rows, None] * (1 + 1e-12)):
            raise ParameterError("save_times", float(block.max()), "times <= t_final of their point")
    return grid


def host_delays(system, params) -> np.ndarray:
    """The delays of every point (B, K) in seconds, all finite and > 0 (raises naming the point)."""
    delays = np.asarray(jax.vmap(system.delays)(params), dtype=np.float64)
    bad = ~(np.isfinite(delays) & (delays > 0))
    if np.any(bad):
        point = int(np.argwhere(bad)[0][0])
        raise ParameterError(
            "delay", float(delays[bad][0]), f"every delay finite and > 0 s (point {point} of the batch)"
        )
    return delays
