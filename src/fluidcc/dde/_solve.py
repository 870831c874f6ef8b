"""`solve`: the one entry point of the DDE engine, for every method."""

from __future__ import annotations

import math
import time
from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np

from ..errors import ParameterError, ShapeError
from ._batching import (chunk_width, climb, largest_magnitude, max_difference, round_down_pow2, round_up_pow2,
                       row_blocks, run_in_chunks)
from ._rk4 import KernelShape, history_chunks, launch_kernel, plan_saves
from ._solution import Solution, Status, status_message
from ._system import DDESystem

METHODS = ("rk4", "chebyshev", "scipy", "ddeint")

#: Default number of points integrated together; bounds memory for any batch size.
DEFAULT_BATCH_CHUNK = 1024


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


def _as_batch_vector(name: str, value, size: int) -> np.ndarray:
    array = np.asarray(value, dtype=np.float64)
    if array.ndim == 0:
        array = np.full(size, float(array))
    if array.shape != (size,):
        raise ShapeError(name, f"shape {array.shape}", f"a scalar or shape ({size},) for a batch of {size}")
    return array


def _save_grid(save_times, t_final: np.ndarray) -> np.ndarray:
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


def _host_delays(system: DDESystem, params: Any) -> np.ndarray:
    delays = np.asarray(jax.vmap(system.delays)(params), dtype=np.float64)
    bad = ~(np.isfinite(delays) & (delays > 0))
    if np.any(bad):
        point = int(np.argwhere(bad)[0][0])
        raise ParameterError(
            "delay", float(delays[bad][0]), f"every delay finite and > 0 s (point {point} of the batch)"
        )
    return delays


def solve(
    system: DDESystem,
    params: Any,
    t_final,
    save_times=None,
    *,
    method: str = "rk4",
    steps_per_delay: int = 64,
    rtol: float | None = None,
    max_steps_per_delay: int = 4096,
    pieces_per_delay: int = 1,
    nodes: int = 16,
    max_pieces_per_delay: int = 256,
    log_space: bool = True,
    batch_chunk: int = DEFAULT_BATCH_CHUNK,
    progress: Callable[[int, int], None] | None = None,
) -> Solution:
    """Integrate a batch of parameter points of a delay-differential system.

    Parameters
    ----------
    system: the model (a `DDESystem`).
    params: a parameter batch (pytree with a leading batch axis on every leaf).
    t_final: end time in seconds, scalar or shape (B,).
    save_times: times to save in seconds, shape (S,) shared or (B, S) per point, sorted, within
        [0, t_final]; None saves the final state only.
    method: "rk4" (the JAX engine), "chebyshev" (the JAX exponential Chebyshev method of steps,
        for models linear in the current state with one delay, see `fluidcc.dde._chebyshev`),
        "scipy" (the SciPy reference: DOP853 by the method of steps, rtol 1e-11; slow, for tests
        and benchmarks) or "ddeint" (kept for comparison only).
    steps_per_delay: RK4 steps per smallest delay (the step is h = tau_min / steps_per_delay);
        raised (to a power of two) where the model's `max_step` asks for a smaller step.
    rtol: if given, each point is also integrated at half the resolution, and points whose
        estimated error exceeds rtol are integrated again at twice the resolution, up to
        `max_steps_per_delay`. The estimate is |z_M - z_{M/2}| / 15 (Richardson, order 4),
        in relative terms (log components) or relative to the component's largest magnitude.
    pieces_per_delay, nodes: "chebyshev" only: each delay interval is cut into this many pieces
        of `nodes` Chebyshev-Lobatto nodes (nodes >= 4). With rtol, the refinement first adds
        nodes (about 1.5 times as many per rung: 12, 16, 24, 32, 48, 64, 96, 128), then doubles
        the pieces up to `max_pieces_per_delay`, per point,
        until two successive resolutions agree to rtol (relative, component by component for
        positive components, else relative to the component's largest magnitude); the finer
        solution is kept. The estimate is that of the coarser solution, so the kept one is
        usually far more accurate than rtol: on two sets of 10 000 MIAIMD points
        (benchmarks/chebyshev_tolerance.py) its largest error was rtol / 61 to rtol / 72 for
        rtol from 5e-5 to 1e-6, a measurement on one model, not a bound. At loose tolerances two
        coarse resolutions can agree on a wrong solution: at rtol 1e-4, 140-141 of each 10 000
        points ended above 1e-6, and the 12- and 16-node solutions of one oscillating point
        agreed to 6e-5 and were both 6 % off. For rtol >= 1e-6, the first resolution, which
        every point's second one replaces, is computed in float32 (about 0.4 times the cost on a
        CPU): it only serves as the comparison for the second (computed again in float64 where
        the float32 solution fails and the second does not), and every kept solution is float64
        (`_chebyshev.COARSE_FLOAT32_RTOL`).
    log_space: integrate the components the model marks positive as log x.
    batch_chunk: the most points integrated together. The batch is cut into chunks of nearly
        equal width on every device (`_batching.chunk_width`; fewer points at high resolution,
        so a chunk's arrays stay in the CPU cache), the last one padded, so what the devices
        hold does not grow with the batch (the host's bookkeeping grows by some 30-50 bytes per
        point besides the parameters and the saves: benchmarks/dde_memory.py) and few kernel
        shapes are compiled.
    progress: called as progress(points_done, points_total) after each chunk.

    Returns a `Solution`. Failing points carry a status and a message; bad input raises a
    `fluidcc.errors.ParameterError` at once.
    """
    if method not in METHODS:
        raise ParameterError("method", method, f"one of {', '.join(METHODS)}")
    size = batch_size(params)
    system.validate(params)
    t_final_arr = _as_batch_vector("t_final", t_final, size)
    if not np.all(np.isfinite(t_final_arr) & (t_final_arr > 0)):
        raise ParameterError("t_final", float(t_final_arr.min()), "a finite end time > 0 s")
    grid = _save_grid(save_times, t_final_arr)
    point0 = take(params, np.array([0]))
    names = system.state_names(jax.tree_util.tree_map(lambda a: a[0], point0))
    started = time.perf_counter()

    if method in ("scipy", "ddeint"):
        from ._reference import solve_ddeint, solve_reference

        if method == "scipy":
            ys, status, messages = solve_reference(system, params, t_final_arr, grid, log_space=log_space)
        else:
            ys, status, messages = solve_ddeint(system, params, t_final_arr, grid, log_space=log_space)
        return Solution(grid, ys, status, messages, names, method,
                        info={"wall_s": time.perf_counter() - started})

    if method == "chebyshev":
        return _solve_chebyshev(system, params, size, t_final_arr, grid, names, rtol, pieces_per_delay, nodes,
                                max_pieces_per_delay, batch_chunk, progress, started)

    _check_resolution("steps_per_delay", steps_per_delay)
    _check_resolution("max_steps_per_delay", max_steps_per_delay)
    if rtol is not None and not (np.isfinite(rtol) and rtol > 0):
        raise ParameterError("rtol", rtol, "a tolerance > 0, or None for a single fixed-step solve")
    if batch_chunk < 1:
        raise ParameterError("batch_chunk", batch_chunk, "a whole number >= 1")

    delays = _host_delays(system, params)
    one_point = jax.tree_util.tree_map(lambda a: a[0], point0)
    n_states = system.state_size(one_point)
    log_mask = tuple(bool(b) for b in system.log_components(one_point)) if log_space else (False,) * n_states
    nonnegative = tuple(bool(b) for b in system.nonnegative_components(one_point))
    ledger = tuple(int(i) for i in system.projection_ledger(one_point))
    steps_per_delay = max(steps_per_delay, _steps_for_max_step(system, params, delays))
    max_steps_per_delay = max(max_steps_per_delay, steps_per_delay)
    runner = _Runner(system, params, delays, t_final_arr, grid, n_states, log_mask, batch_chunk, progress,
                     nonnegative, ledger)

    if rtol is None:
        z, over, nan = runner.run(np.arange(size), steps_per_delay)
        used = np.full(size, steps_per_delay)
        error = None
        tolerance_failed = np.zeros(size, dtype=bool)
    else:
        z, over, nan, used, error, tolerance_failed = _refine(
            runner, size, steps_per_delay, max_steps_per_delay, rtol, log_mask
        )

    ys = z  # log components back to natural units, in place (no second batch-sized array)
    with np.errstate(over="ignore"):  # overflow is reported by the status, not a warning
        for component in np.flatnonzero(log_mask):
            np.exp(ys[..., component], out=ys[..., component])
    status, messages = _statuses(over, nan, tolerance_failed)
    info = {
        "wall_s": time.perf_counter() - started,
        "batch_chunk": batch_chunk,
        "log_mask": log_mask,
        "rtol": rtol,
    }
    return Solution(grid, ys, status, messages, names, "rk4", used, error, info)


def _solve_chebyshev(system, params, size, t_final, grid, names, rtol, pieces, nodes, max_pieces, batch_chunk,
                     progress, started) -> Solution:
    from ._chebyshev import COARSE_FLOAT32_RTOL, MAX_NODES, ChebyshevRunner, refine, resolution_ladder

    for name, value, low in (("pieces_per_delay", pieces, 1), ("nodes", nodes, 4),
                             ("max_pieces_per_delay", max_pieces, 1)):
        if not isinstance(value, (int, np.integer)) or value < low:
            raise ParameterError(name, value, f"a whole number >= {low}")
    if rtol is not None and not (np.isfinite(rtol) and rtol > 0):
        raise ParameterError("rtol", rtol, "a tolerance > 0, or None for a single solve")
    if batch_chunk < 1:
        raise ParameterError("batch_chunk", batch_chunk, "a whole number >= 1")
    point = jax.tree_util.tree_map(lambda a: a[0], take(params, np.array([0])))
    delays = require_linear_form(system, params)
    n_states = system.state_size(point)
    positive = tuple(bool(b) for b in system.log_components(point))
    runner = ChebyshevRunner(system, params, delays[:, 0], t_final, grid, n_states, batch_chunk, progress, take,
                             coarse_float32=rtol is not None and rtol >= COARSE_FLOAT32_RTOL)
    ladder = resolution_ladder(pieces, nodes, max(max_pieces, pieces), max_nodes=max(MAX_NODES, nodes))
    ys, over, nan, level, error, failed = refine(runner, size, ladder if rtol is not None else ladder[:1], rtol,
                                                 positive)
    # failures after a point's own end time (a batch runs to its longest horizon) do not count
    over = np.where(over <= t_final, over, np.inf)
    nan = np.where(nan <= t_final, nan, np.inf)
    status, messages = _statuses(over, nan, failed)
    used = np.array(ladder)[level]
    info = {
        "wall_s": time.perf_counter() - started,
        "batch_chunk": batch_chunk,
        "rtol": rtol,
        "pieces_per_delay": used[:, 0],
        "nodes": used[:, 1],
    }
    return Solution(grid, ys, status, messages, names, "chebyshev", None, error, info)


def require_linear_form(system: DDESystem, params: Any, field: str = "method") -> np.ndarray:
    """Raise a ParameterError naming `field` unless `method="chebyshev"` can integrate the system:
    it must provide `linear_form` and have one delay. Returns the delays, shape (B, 1)."""
    point = jax.tree_util.tree_map(lambda a: a[0], take(params, np.array([0])))
    try:
        system.linear_form(jnp.zeros(()), system.history(jnp.zeros(()), point), point)
    except NotImplementedError:
        raise ParameterError(field, "chebyshev",
                             f"rk4, or chebyshev for a model linear in its current state with one delay "
                             f"({system.name} is not)") from None
    delays = _host_delays(system, params)
    if delays.shape[1] != 1:
        raise ParameterError(field, "chebyshev", f"rk4, or chebyshev for a model with one delay "
                                                 f"({system.name} has {delays.shape[1]})")
    return delays


def _steps_for_max_step(system: DDESystem, params: Any, delays: np.ndarray) -> int:
    """Fewest steps per smallest delay that respect the model's `max_step` at every point
    (a power of two, like the refinement levels); 1 if the model sets no limit."""
    point0 = jax.tree_util.tree_map(lambda a: a[0], params)
    if system.max_step(point0) is None:
        return 1
    limit = np.asarray(jax.vmap(system.max_step)(params), dtype=np.float64).reshape(-1)
    ratio = np.min(delays, axis=1) / np.where(limit > 0, limit, np.nan)
    needed = float(np.nanmax(ratio)) if np.any(np.isfinite(ratio)) else 1.0
    return round_up_pow2(int(math.ceil(needed - 1e-9)))


def _check_resolution(name: str, value: int) -> None:
    if not isinstance(value, (int, np.integer)) or value < 2 or value % 2:
        raise ParameterError(name, value, "an even whole number of steps per delay, >= 2")


def _statuses(over: np.ndarray, nan: np.ndarray, tolerance_failed: np.ndarray):
    """Status per point from its first overflow and NaN times (inf: none) and whether it missed the
    tolerance; a message for each failing point ('' for the others)."""
    overflow = np.isfinite(over) & (over <= nan)
    nonfinite = ~overflow & np.isfinite(nan)
    missed = ~overflow & ~nonfinite & np.asarray(tolerance_failed, dtype=bool)
    status = np.full(over.shape, Status.OK, dtype=np.int8)
    status[overflow], status[nonfinite] = Status.OVERFLOW, Status.NONFINITE
    status[missed] = Status.TOLERANCE_NOT_REACHED
    messages = np.full(over.shape, "", dtype=object)
    for i in np.flatnonzero(status != Status.OK):
        messages[i] = status_message(status[i], over[i] if overflow[i] else nan[i] if nonfinite[i] else 0.0)
    return status, messages


class _Runner:
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

        def launch(padded, put):
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
            # one transfer for every array of the chunk
            params, t_final, save_pos, save_start = put((take(self.params, padded), self.t_final[padded], save_pos,
                                                         save_start))
            return launch_kernel(self.system, shape, params, t_final, save_pos, save_start)

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


#: Largest steps-per-delay x points of one chunk. Measured on a 2-core CPU (MIAIMD, 10 000 points
#: refined to rtol 1e-6): at 65 536 and beyond, the per-interval arrays leave the cache and the
#: refinement passes at M >= 512 ran 2-3x slower; at 8 192 and below, chunks of a few points
#: are dominated by the per-step loop overhead. `benchmarks/RESULTS.md` has the figures.
_LANE_STEP_BUDGET = 32768
#: Fewest points in a chunk (below it the loop overhead per step dominates).
_MIN_CHUNK = 16


def _error(z_fine: np.ndarray, z_coarse: np.ndarray, log_mask: tuple[bool, ...]) -> np.ndarray:
    """Richardson estimate of the fine solution's max error per point (order 4: difference / 15);
    log-space components absolutely (a relative error), the others relative to their largest
    magnitude."""
    mask = np.asarray(log_mask)
    return max_difference(z_fine, z_coarse, lambda z: 15.0 * np.where(mask, 1.0, largest_magnitude(z)))


def _refine(runner: _Runner, size: int, steps: int, max_steps: int, rtol: float, log_mask):
    """Fixed-step solves at steps/2, steps, 2 steps, ... (up to max_steps) per smallest delay,
    until each point's error estimate is at most rtol."""
    rungs = [steps // 2, steps]
    while rungs[-1] * 2 <= max_steps:
        rungs.append(rungs[-1] * 2)
    z, over, nan, rung, error, tolerance_failed = climb(
        runner.run, size, rungs, lambda fine, coarse: _error(fine, coarse, log_mask), rtol)
    return z, over, nan, np.asarray(rungs)[rung], error, tolerance_failed
