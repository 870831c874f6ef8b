"""The workload of the DDE benchmarks: MIAIMD's aggregate equation at random points, and the error
of a solution against a reference.

The model is eq. (14) of the VCP paper,

    w'(t) = (1/T) { kappa w(t) [gamma C T / w(t - T) - 1] + N alpha },   w = N on [-T, 0],

at random points: kappa, T (s), C (packets/s) and N (flows, rounded to whole flows), each
log-uniform in RANGES; alpha = 1, gamma = 0.98. A helper module, not a benchmark:
dde_throughput.py, dde_memory.py, chebyshev_ladder.py and chebyshev_tolerance.py draw the same
points from the same seed.
"""

from __future__ import annotations

import numpy as np

from fluidcc.dde import solve
from fluidcc.models import MIAIMDAggregate, miaimd

ALPHA = 1.0
GAMMA = 0.98
RANGES = {  # log-uniform ranges of the random points
    "kappa": (0.05, 2.0),
    "rtt_s": (0.01, 1.0),
    "capacity_pps": (1250.0, 125000.0),
    "n_flows": (10.0, 1000.0),
}


def draw_points(n: int, seed: int) -> dict[str, np.ndarray]:
    """n log-uniform points (kappa, T s, C packets/s, N flows) with alpha = 1, gamma = 0.98."""
    rng = np.random.default_rng(seed)
    points = {}
    for name, (low, high) in RANGES.items():
        points[name] = np.exp(rng.uniform(np.log(low), np.log(high), n))
    points["n_flows"] = np.round(points["n_flows"])
    return points


def subsamples(n: int, n_reference: int, n_jitcdde: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Random reference and jitcdde subsamples (indices), the jitcdde one inside the reference one
    whenever it is not the larger."""
    order = np.random.default_rng([seed, 1]).permutation(n)
    return np.sort(order[: min(n_reference, n)]), np.sort(order[: min(n_jitcdde, n)])


def params_of(points: dict[str, np.ndarray], index=None):
    """The model's parameters at the points (all of them, or those of `index`)."""
    pick = (lambda a: a) if index is None else (lambda a: a[index])
    return miaimd.aggregate_params(
        kappa=pick(points["kappa"]), capacity_pps=pick(points["capacity_pps"]), rtt_s=pick(points["rtt_s"]),
        n_flows=pick(points["n_flows"]), alpha=ALPHA, gamma=GAMMA,
    )


def save_grid(rtt_s: np.ndarray, rtts: int, every: int = 1) -> np.ndarray:
    """Save times t = k T, k = 0, every, 2 every, ... <= rtts, seconds, shape (B, saves)."""
    return rtt_s[:, None] * np.arange(0, rtts + 1, every)[None, :]


def benchmark_points(size: int, seed: int, rtts: int):
    """The random points as a problem: the system, the parameters, the end times and the save grid
    (one save per RTT)."""
    points = draw_points(size, seed)
    grid = save_grid(points["rtt_s"], rtts)
    return MIAIMDAggregate(), params_of(points), grid[:, -1], grid


def reference_solution(system, params, t_final, grid, rtol: float):
    """The Chebyshev solution errors are measured against: refined to rtol from 1 x 16."""
    with np.errstate(all="ignore"):
        return solve(system, params, t_final, grid, method="chebyshev", nodes=16, rtol=rtol,
                     max_pieces_per_delay=1024)


def largest_relative_error(windows: np.ndarray, reference: np.ndarray, skip_rtts: int) -> np.ndarray:
    """Per point (row), max |w / w_ref - 1| over the saves (columns) from skip_rtts on; inf where
    either window is not finite."""
    with np.errstate(all="ignore"):
        relative = np.abs(windows[:, skip_rtts:] / reference[:, skip_rtts:] - 1.0)
    return np.where(np.isfinite(relative), relative, np.inf).max(axis=1)


def _reference_slice(points, grid, t_final):
    """The SciPy reference on a slice of points (runs in a worker process): windows, statuses and
    messages."""
    with np.errstate(over="ignore"):
        sol = solve(MIAIMDAggregate(), params_of(points), t_final, grid, method="scipy")
    return sol.ys[..., 0], np.asarray(sol.status), [str(m) for m in sol.messages]


def scipy_reference(points, index, grid, t_final, workers: int):
    """fluidcc's SciPy reference (method="scipy") on the points `index`, spread over `workers`
    processes: the windows (len(index), saves), the statuses and the solver messages, in the order
    of `index`."""
    if workers == 1:
        return _reference_slice({k: v[index] for k, v in points.items()}, grid[index], t_final[index])
    import concurrent.futures
    import multiprocessing

    # interleaved slices balance slow and fast points; "spawn" because JAX is multithreaded
    slices = [index[k::workers * 4] for k in range(workers * 4) if len(index[k::workers * 4])]
    with concurrent.futures.ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        parts = list(pool.map(
            _reference_slice,
            [{k: v[part] for k, v in points.items()} for part in slices],
            [grid[part] for part in slices],
            [t_final[part] for part in slices],
        ))
    windows = np.empty((len(index), grid.shape[1]))
    status = np.empty(len(index), dtype=np.int8)
    messages = [""] * len(index)
    row = {int(i): k for k, i in enumerate(index)}
    for part, (w, st, msg) in zip(slices, parts):
        rows = [row[int(i)] for i in part]
        windows[rows], status[rows] = w, st
        for r, m in zip(rows, msg):
            messages[r] = m
    return windows, status, messages
