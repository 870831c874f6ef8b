"""`solve`: the one entry point of the DDE engine, for every method."""

from __future__ import annotations

import time
from typing import Any, Callable

import jax
import numpy as np

from ..errors import ParameterError
from ._batching import batch_size, batch_vector, host_delays, save_grid, take
from ._chebyshev import Chebyshev, require_linear_form
from ._method import Method
from ._reference import DDEint, Reference
from ._rk4 import RK4
from ._solution import Solution
from ._system import DDESystem

#: The methods by name, as `solve(method=NAME)` takes them.
METHODS: dict[str, type[Method]] = {"rk4": RK4, "chebyshev": Chebyshev, "scipy": Reference, "ddeint": DDEint}

#: The methods "auto" asks, in order, whether they support a system.
AUTO_ORDER = ("chebyshev", "rk4")

#: Default number of points integrated together; bounds memory for any batch size.
DEFAULT_BATCH_CHUNK = 1024

__all__ = ["AUTO_ORDER", "DEFAULT_BATCH_CHUNK", "METHODS", "batch_size", "host_delays", "require_linear_form",
           "resolve_method", "solve", "take"]


def resolve_method(method: Method | str, system: DDESystem, params: Any, **options) -> Method:
    """The method object `solve` runs: `method` itself, or the named one with `options` ("auto":
    the first of AUTO_ORDER that supports the system). An option the method does not take, or an
    option given beside a method object, is a ParameterError naming it."""
    if isinstance(method, Method):
        if options:
            option, value = next(iter(options.items()))
            takes = type(method).options()
            if option in takes:
                raise ParameterError(option, value, f"set on the method object ({type(method).__name__}({option}=...)), "
                                     "not beside it")
            raise ParameterError(option, value, f"an option of solve() or of {type(method).__name__}, which takes: "
                                 f"{', '.join(takes) or 'no options'}")
        chosen = method
    elif method == "auto":
        takes_options = [METHODS[name].with_options(options) for name in AUTO_ORDER
                         if set(options) <= set(METHODS[name].options())]
        return next((m for m in takes_options if m.supports(system, params)),
                    METHODS[AUTO_ORDER[-1]].with_options(options))
    elif method in METHODS:
        chosen = METHODS[method].with_options(options)
    else:
        raise ParameterError("method", method, f"a method object, or one of {', '.join(METHODS)}, auto")
    chosen.require(system, params)
    return chosen


def solve(
    system: DDESystem,
    params: Any,
    t_final,
    save_times=None,
    *,
    method: Method | str = "rk4",
    rtol: float | None = None,
    batch_chunk: int = DEFAULT_BATCH_CHUNK,
    progress: Callable[[int, int], None] | None = None,
    **options,
) -> Solution:
    """Integrate a batch of parameter points of a delay-differential system.

    Parameters
    ----------
    system: the model (a `DDESystem`).
    params: a parameter batch (pytree with a leading batch axis on every leaf).
    t_final: end time in seconds, scalar or shape (B,).
    save_times: times to save in seconds, shape (S,) shared or (B, S) per point, sorted, within
        [0, t_final]; None saves the final state only.
    method: a method object with its options, `RK4(steps_per_delay=..., max_steps_per_delay=...,
        log_space=...)` (the JAX engine), `Chebyshev(nodes=..., pieces_per_delay=...,
        max_pieces_per_delay=...)` (the JAX exponential Chebyshev method of steps, for models
        linear in the current state with one delay), `Reference()` (SciPy's DOP853 by the method
        of steps, rtol 1e-11; slow, for tests and benchmarks) or `DDEint()` (comparison only);
        or its name, "rk4", "chebyshev", "scipy", "ddeint", with its options as keywords of
        `solve` (``solve(..., method="rk4", steps_per_delay=32)``); or "auto": the first of
        chebyshev, rk4 that supports the system. Each class's docstring describes its options.
    rtol: refine each point until its error estimate is below rtol (RK4 and Chebyshev; each
        describes its estimate); None integrates once at the method's starting resolution.
    batch_chunk: the most points integrated together. The batch is cut into chunks of nearly
        equal width on every device (`_batching.chunk_width`; fewer points at high resolution,
        so a chunk's arrays stay in the CPU cache), the last one padded, so what the devices
        hold does not grow with the batch (the host's bookkeeping is a few tens of bytes per
        point besides the parameters and the saves: benchmarks/RESULTS.md, "DDE memory") and
        few kernel shapes are compiled.
    progress: called as progress(points_done, points_total) after each chunk.

    Returns a `Solution`. Failing points carry a status and a message; bad input, an option the
    method does not take or a method that cannot integrate the system raises a
    `fluidcc.errors.ParameterError` at once, naming it.
    """
    chosen = resolve_method(method, system, params, **options)
    size = batch_size(params)
    system.validate(params)
    if rtol is not None and not chosen.adaptive:
        raise ParameterError("rtol", rtol, f"None: method {chosen.name!r} has a fixed accuracy")
    if rtol is not None and not (np.isfinite(rtol) and rtol > 0):
        raise ParameterError("rtol", rtol, "a tolerance > 0, or None for a single solve")
    if isinstance(batch_chunk, bool) or not isinstance(batch_chunk, (int, np.integer)) or batch_chunk < 1:
        raise ParameterError("batch_chunk", batch_chunk, "a whole number >= 1")
    t_final_arr = batch_vector("t_final", t_final, size)
    if not np.all(np.isfinite(t_final_arr) & (t_final_arr > 0)):
        raise ParameterError("t_final", float(t_final_arr.min()), "a finite end time > 0 s")
    grid = save_grid(save_times, t_final_arr)
    point0 = take(params, np.array([0]))
    names = system.state_names(jax.tree_util.tree_map(lambda a: a[0], point0))
    return chosen.run(system, params, size, t_final_arr, grid, names, rtol, batch_chunk, progress,
                      time.perf_counter())
