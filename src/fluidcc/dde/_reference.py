"""Reference solvers for tests and benchmarks: SciPy's DOP853 by the method of steps, and ddeint.

`solve_reference` is the yardstick the production RK4 engine is measured against. It integrates
one parameter point at a time with `scipy.integrate.solve_ivp(method="DOP853", dense_output=True)`
by the method of steps: time is cut into intervals no longer than the smallest delay, and also at
the derivative-discontinuity breakpoints (every sum of up to `breakpoint_order` delays, default 4),
so that within each call every delayed argument t - tau_k lies in history already computed, either
the model's history (t - tau_k <= 0) or the dense output of an earlier step. With the default
rtol = 1e-11 and atol = 1e-12 its error is dominated by the dense-output interpolation of the
delayed values and is about rtol: on x' = -a x(t - 1) - b x(t - 0.7) it stays within 2e-11 of
the exact piecewise-polynomial solution (1e-14 with breakpoint_order=5; order 3, which leaves the
jumps of the fifth derivative at sums of four delays to the step-size control, gives 2e-9). It is slow (Python calls per right-hand-side
evaluation, one solve_ivp call per interval) and meant for tests and benchmarks, not for sweeps.
Components a model keeps >= 0 (`DDESystem.nonnegative_components`, a queue) are handled by
events, integrating a smooth field in each mode: the model's unprojected field (its
`linearizable()` form) while the component is above 0, and a zero derivative while it rests at 0.
The solver stops where one falls to 0 and restarts with it at exactly 0, resting, and stops again
where its unprojected derivative turns positive, so no step straddles a switch of the field. The derivative jumps this leaves at later
times (event time plus delays) are left to the step-size control.

`solve_ddeint` wraps the `ddeint` package and is kept for comparison only: see its docstring.

Both return ``(ys, status, messages)``: the saved states in natural units (packets, packets/s,
...), a `Status` code per point and a sentence per point. A point that fails is recorded, never
raised; bad input raises a `fluidcc.errors.ParameterError` at once.
"""

from __future__ import annotations

import bisect
import functools
import math
import time
import warnings
from dataclasses import dataclass
from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np
from scipy.integrate import solve_ivp
from scipy.optimize import brentq

from ..errors import ParameterError
from ._batching import batch_size, batch_vector, save_grid
from ._method import Method
from ._solution import Solution, Status, status_message
from ._system import DDESystem, to_mixed

#: Largest log x whose exp is still a finite float64 (about 709.78).
_LOG_MAX = float(np.log(np.finfo(np.float64).max))

#: A kept-nonnegative component below this (in its own units) is at 0 for the reference solver.
_EVENT_LEVEL = 1e-10

#: Uniform ddeint grid points per smallest delay (save times are added to this grid).
_DDEINT_POINTS_PER_DELAY = 20


def solve_reference(
    system: DDESystem,
    params_batch: Any,
    t_final,
    save_times,
    *,
    rtol: float = 1e-11,
    atol: float = 1e-12,
    log_space: bool = True,
    breakpoint_order: int = 4,
):
    """Integrate each point of a batch accurately with SciPy's DOP853 by the method of steps.

    Parameters
    ----------
    system: the model (a `DDESystem`).
    params_batch: a parameter batch (pytree with a leading batch axis B on every leaf).
    t_final: end time in seconds, scalar or shape (B,).
    save_times: times to save in seconds, shape (S,) shared or (B, S) per point, sorted, within
        [0, t_final].
    rtol, atol: DOP853 tolerances, applied to the mixed coordinates z (log x on log components,
        so rtol there bounds the error of log x, i.e. the relative error of x, times |log x|).
    log_space: integrate the components the model marks positive (`log_components`) as log x;
        False integrates every component as x.
    breakpoint_order: the intervals also end at every sum of up to this many delays (where a
        derivative of x may jump). The number of intervals grows like K**order / order! for K
        distinct delays; lower it for many delays at some cost in accuracy (see the module notes).

    Returns
    -------
    ys: saved states in natural units, shape (B, S, n), float64; inf where exp(log x) overflows
        float64, nan after a point stopped.
    status: `Status` code per point, shape (B,), int8: 0 ok, 1 overflow, 2 non-finite,
        4 the SciPy solver failed. A point keeps the code of its first problem.
    messages: a sentence per point ('' when ok) naming what happened and when (seconds),
        shape (B,), object array of str.
    """
    if not (np.isfinite(rtol) and rtol > 0):
        raise ParameterError("rtol", rtol, "a relative tolerance > 0")
    if not (np.isfinite(atol) and atol > 0):
        raise ParameterError("atol", atol, "an absolute tolerance > 0")
    if not isinstance(breakpoint_order, (int, np.integer)) or breakpoint_order < 1:
        raise ParameterError("breakpoint_order", breakpoint_order, "a whole number >= 1")
    return _solve_batch(
        system, params_batch, t_final, save_times, log_space,
        lambda point, names, t_end, grid: _MethodOfSteps(
            system, point, names, t_end, log_space, rtol, atol, breakpoint_order
        ).run(grid),
    )


def solve_ddeint(system: DDESystem, params_batch: Any, t_final, save_times, *, log_space: bool = False):
    """Integrate each point of a batch with the `ddeint` package. For comparison only.

    ddeint wraps `scipy.integrate.ode` and reads every delayed value x(t - tau), and even the
    current state, from a piecewise-linear interpolation of its own past *output* on the time grid
    it is given, an interpolation that lags the integrator by one grid step. It is therefore
    inaccurate on sharp transients (start-up spikes, fast exponential growth): it can miss them by
    orders of magnitude. It is kept only to compare against in benchmarks; use `solve_reference`
    for accurate answers.

    Each point is solved on the union of its save times and a uniform grid of 20 points per
    smallest delay, with the model's history as the initial function.

    Parameters and return values are those of `solve_reference` (t_final and save_times in
    seconds; ys in natural units, shape (B, S, n)); status 4 means scipy's integrator warned that
    it failed, and the values from that time on are nan.
    """
    return _solve_batch(
        system, params_batch, t_final, save_times, log_space,
        lambda point, names, t_end, grid: _run_ddeint(system, point, names, t_end, grid, log_space),
    )


# ----------------------------------------------------------------------------------------------
# batch handling


def _solve_batch(system, params_batch, t_final, save_times, log_space, solve_point: Callable):
    size = batch_size(params_batch)
    t_final_arr = batch_vector("t_final", t_final, size)
    if not np.all(np.isfinite(t_final_arr) & (t_final_arr > 0)):
        raise ParameterError("t_final", float(np.min(t_final_arr)), "a finite end time > 0 s")
    grid = np.minimum(save_grid(save_times, t_final_arr), t_final_arr[:, None])

    ys = None
    status = np.zeros(size, dtype=np.int8)
    messages = np.full(size, "", dtype=object)
    for b in range(size):
        point = jax.tree_util.tree_map(lambda leaf: jnp.asarray(np.asarray(leaf)[b]), params_batch)
        names = list(system.state_names(point))
        ys_b, code, message = solve_point(point, names, float(t_final_arr[b]), grid[b])
        if ys is None:
            ys = np.empty((size, grid.shape[1], ys_b.shape[1]))
        ys[b] = ys_b
        status[b] = code
        messages[b] = message
    return ys, status, messages


def _point_delays(system: DDESystem, point: Any) -> np.ndarray:
    delays = np.asarray(system.delays(point), dtype=np.float64).reshape(-1)
    if delays.size == 0 or not np.all(np.isfinite(delays) & (delays > 0)):
        raise ParameterError("delays", delays, "at least one delay, every delay finite and > 0 s")
    return delays


def _point_mask(system: DDESystem, point: Any, log_space: bool) -> tuple[bool, ...]:
    n = int(system.state_size(point))
    if not log_space:
        return (False,) * n
    return tuple(bool(v) for v in system.log_components(point))


# ----------------------------------------------------------------------------------------------
# compiled model functions (jit once per system and log mask; jax retraces per shape itself)


@functools.lru_cache(maxsize=64)
def _compiled_cached(system: DDESystem, log_mask: tuple[bool, ...]):
    return _compile(system, log_mask)


def _compile(system: DDESystem, log_mask: tuple[bool, ...]):
    mask = np.asarray(log_mask, dtype=bool)

    def field(t, z, z_delayed, params):
        return system.vector_field_log(t, z, z_delayed, params, mask)

    def history(times, params):
        mixed = lambda s: to_mixed(system.history(s, params), jnp.asarray(mask))
        return jax.vmap(mixed)(times)

    return jax.jit(field), jax.jit(history)


def _compiled(system: DDESystem, log_mask: tuple[bool, ...]):
    """(field(t, z, z_delayed, params) -> dz/dt, history(times (K,), params) -> z (K, n))."""
    try:
        hash(system)
    except TypeError:
        return _compile(system, log_mask)
    return _compiled_cached(system, log_mask)


# ----------------------------------------------------------------------------------------------
# the method of steps with DOP853


def _breakpoint_nodes(delays: np.ndarray, t_final: float, order: int) -> np.ndarray:
    """Interval ends for the method of steps, seconds: 0, every sum of 1 to `order` delays below
    t_final, t_final, and enough extra nodes that no interval is longer than the smallest delay."""
    unique = np.unique(delays)
    tau_min = float(unique[0])
    level = unique[unique < t_final]
    sums = [level]
    for _ in range(order - 1):  # sums of two, three, ... delays
        level = np.unique((level[:, None] + unique[None, :]).ravel())
        level = level[level < t_final]
        sums.append(level)
    candidates = np.unique(np.concatenate(sums))
    # Sums equal in exact arithmetic differ by rounding; they are one breakpoint.
    merge = 1e-12 * max(t_final, tau_min)
    nodes = [0.0]
    for point in candidates:
        if point - nodes[-1] > merge and t_final - point > merge:
            nodes.append(float(point))
    nodes.append(float(t_final))
    filled = [0.0]
    for start, end in zip(nodes[:-1], nodes[1:]):
        pieces = max(1, math.ceil((end - start) / tau_min * (1 - 1e-12)))
        filled.extend(np.linspace(start, end, pieces + 1)[1:].tolist())
    filled[-1] = float(t_final)
    return np.asarray(filled)


class _MethodOfSteps:
    """One parameter point integrated interval by interval; the past is the list of DOP853 steps."""

    def __init__(self, system, point, names, t_final, log_space, rtol, atol, breakpoint_order):
        self.point = point
        self.names = names
        self.t_final = t_final
        self.rtol = rtol
        self.atol = atol
        self.breakpoint_order = int(breakpoint_order)
        self.delays = _point_delays(system, point)
        self.log_mask = _point_mask(system, point, log_space)
        self.mask = np.asarray(self.log_mask, dtype=bool)
        self.n = len(self.log_mask)
        self.field, self.history = _compiled(system, self.log_mask)
        # Components kept >= 0 by projection (queues): the solver stops where one reaches 0, and
        # where one resting at 0 starts to fill (its unprojected derivative, from the model's
        # `linearizable()` form, turns positive), so no DOP853 step straddles a switch of the field.
        self.nonnegative = np.asarray(system.nonnegative_components(point), dtype=bool) & ~self.mask
        if self.nonnegative.any():
            self.free_field, _ = _compiled(system.linearizable(), self.log_mask)
        # Dense output of every accepted step: step i covers [step_starts[i], next start].
        self.step_starts: list[float] = []
        self.interpolants: list = []
        # The last right-hand side that was not finite: (t, "nan" or "inf", component).
        self.last_bad: tuple[float, str, int] | None = None
        self.code = Status.OK
        self.messages: list[str] = []

    # -- the past ---------------------------------------------------------------------------

    def _history_z(self, times: np.ndarray) -> np.ndarray:
        return np.array(self.history(jnp.asarray(np.minimum(times, 0.0)), self.point), dtype=np.float64)

    def _past(self, s: float) -> np.ndarray:
        index = bisect.bisect_right(self.step_starts, s) - 1
        return self.interpolants[max(index, 0)](s)

    def _delayed(self, t: float) -> np.ndarray:
        s = t - self.delays
        from_history = s <= 0.0
        if not self.interpolants:  # first interval: t - tau <= 0 up to rounding
            from_history[:] = True
        if from_history.all():
            return self._history_z(s)
        out = self._history_z(s) if from_history.any() else np.empty((s.size, self.n))
        for k in np.flatnonzero(~from_history):
            out[k] = self._past(s[k])
        return out

    def _rhs(self, t: float, z: np.ndarray) -> np.ndarray:
        if self.nonnegative.any():
            # Mode by mode, the smooth field: unprojected, with components resting at 0 held there.
            dz = self._free_rhs(t, z)
            dz[self.resting] = 0.0
        else:
            dz = np.asarray(self.field(np.float64(t), z, self._delayed(t), self.point), dtype=np.float64)
        if not np.all(np.isfinite(dz)):
            nan = np.isnan(dz)
            component = int(np.argmax(nan if nan.any() else ~np.isfinite(dz)))
            self.last_bad = (t, "nan" if nan.any() else "inf", component)
        return dz

    def _free_rhs(self, t: float, z: np.ndarray) -> np.ndarray:
        return np.array(self.free_field(np.float64(t), z, self._delayed(t), self.point), dtype=np.float64)

    def _events(self):
        """Terminal events of the kept-nonnegative components, given which rest at 0."""
        events = []
        for i in np.flatnonzero(self.nonnegative):
            if self.resting[i]:
                # Resting at 0: stop where its inflow turns positive.
                def event(s, y, i=i):
                    return self._free_rhs(s, y)[i]

                event.direction = 1
            else:
                # Filling or draining: stop where it falls through a hair above 0.
                def event(s, y, i=i):
                    return y[i] - _EVENT_LEVEL

                event.direction = -1
            event.terminal = True
            events.append(event)
        return events or None

    # -- problems ----------------------------------------------------------------------------

    def _record(self, code: int, message: str) -> None:
        if self.code == Status.OK:
            self.code = code
        self.messages.append(message)

    def _bad_state(self, t: float, z: np.ndarray) -> None:
        """Record why the state z at time t (seconds) is not finite."""
        nan = np.isnan(z)
        if nan.any():
            i = int(np.argmax(nan))
            self._record(Status.NONFINITE, status_message(Status.NONFINITE, t, self.names[i]))
            return
        i = int(np.argmax(~np.isfinite(z)))
        if self.mask[i] and z[i] < 0:
            self._record(Status.NONFINITE, f"non-finite: the log of {self.names[i]} became -inf "
                         f"(it reached 0) at t = {t:.6g} s")
        else:
            self._record(Status.OVERFLOW, status_message(Status.OVERFLOW, t, self.names[i]))

    def _solver_failed(self, t: float, reason: str) -> None:
        """Record a failed solve_ivp call whose last accepted time is t (seconds)."""
        if self.last_bad is not None and self.last_bad[0] >= t:
            when, kind, i = self.last_bad
            if kind == "nan":
                self._record(Status.NONFINITE, f"non-finite: the derivative of {self.names[i]} "
                             f"became NaN at t = {when:.6g} s")
            else:
                self._record(Status.OVERFLOW, f"overflow: the derivative of {self.names[i]} "
                             f"exceeded the float64 range at t = {when:.6g} s")
            return
        self._record(Status.SOLVER_FAILED,
                     f"the SciPy solver (DOP853) failed at t = {t:.6g} s: {reason}")

    def _check_log_overflow(self, ts: np.ndarray, zs: np.ndarray, interpolants: list) -> None:
        """Record the first time exp(z) of a log component overflows float64 in these steps."""
        if self.code != Status.OK or not self.mask.any():
            return
        over = (zs > _LOG_MAX) & self.mask[:, None]
        if not over.any():
            return
        column = int(np.argmax(over.any(axis=0)))
        i = int(np.argmax(over[:, column]))
        when = float(ts[column])
        if column > 0:
            step = interpolants[column - 1]
            when = brentq(lambda s: step(s)[i] - _LOG_MAX, ts[column - 1], ts[column])
        self._record(Status.OVERFLOW, status_message(Status.OVERFLOW, when, self.names[i]))

    # -- the march ---------------------------------------------------------------------------

    def run(self, save_times: np.ndarray):
        """Integrate to t_final; returns (ys (S, n) natural units, status code, message)."""
        with np.errstate(all="ignore"):
            self.z0 = self._history_z(np.zeros(1))[0]
            reached, finished = 0.0, False
            if not np.all(np.isfinite(self.z0)):
                self._bad_state(0.0, self.z0)
            else:
                reached, finished = self._march()
            ys = self._saved(save_times, reached, finished)
        infinite = np.isinf(ys)
        if self.code == Status.OK and infinite.any():
            row, i = np.argwhere(infinite)[0]
            self._record(Status.OVERFLOW, status_message(Status.OVERFLOW, save_times[row], self.names[i]))
        return ys, int(self.code), "; then ".join(self.messages)

    def _march(self) -> tuple[float, bool]:
        """Solve interval by interval; returns (last time reached in seconds, whether it is t_final)."""
        nodes = _breakpoint_nodes(self.delays, self.t_final, self.breakpoint_order)
        z = self.z0
        watched = np.flatnonzero(self.nonnegative)
        self.resting = resting = np.zeros(self.n, dtype=bool)
        if watched.size:
            resting[watched] = (z[watched] <= _EVENT_LEVEL) & (self._free_rhs(0.0, z)[watched] <= 0.0)
        for start, end in zip(nodes[:-1], nodes[1:]):
            while True:
                try:
                    sol = solve_ivp(self._rhs, (start, end), z, method="DOP853", rtol=self.rtol,
                                    atol=self.atol, dense_output=True, events=self._events())
                except Exception as error:  # a failing point must not stop the batch
                    self._record(Status.SOLVER_FAILED, f"the SciPy solver (DOP853) raised "
                                 f"{type(error).__name__} at t = {start:.6g} s: {error}")
                    return start, False
                interpolants = sol.sol.interpolants
                finite = np.all(np.isfinite(sol.y), axis=0)
                good = sol.t.size - 1 if finite.all() else int(np.argmin(finite)) - 1
                self.step_starts.extend(sol.t[:good].tolist())
                self.interpolants.extend(interpolants[:good])
                self._check_log_overflow(sol.t[: good + 1], sol.y[:, : good + 1], interpolants)
                reached = float(sol.t[good])
                if good < sol.t.size - 1:
                    self._bad_state(float(sol.t[good + 1]), sol.y[:, good + 1])
                    return reached, False
                if sol.status < 0:
                    self._solver_failed(reached, sol.message)
                    return reached, False
                z = sol.y[:, -1].copy()
                if sol.status != 1:
                    break
                # A kept-nonnegative component reached 0 (it rests there, at exactly 0), or one
                # resting at 0 starts to fill: switch its mode and go on from the event.
                for j, i in enumerate(watched):
                    if sol.t_events[j].size:
                        if not resting[i]:
                            z[i] = 0.0
                        resting[i] = not resting[i]  # self.resting is the same array
                start = reached
                if reached >= end:
                    break
        return self.t_final, True

    def _saved(self, save_times: np.ndarray, reached: float, finished: bool) -> np.ndarray:
        z = np.full((save_times.size, self.n), np.nan)
        for row, s in enumerate(save_times):
            if not finished and s > reached:
                break
            z[row] = self._past(s) if (s > 0 and self.interpolants) else self.z0
        return np.where(self.mask, np.exp(np.where(self.mask, z, 0.0)), z)


# ----------------------------------------------------------------------------------------------
# ddeint


def _run_ddeint(system, point, names, t_final, save_times, log_space):
    from ddeint import ddeint

    delays = _point_delays(system, point)
    log_mask = _point_mask(system, point, log_space)
    mask = np.asarray(log_mask, dtype=bool)
    n = len(log_mask)
    field, history = _compiled(system, log_mask)

    points = max(1, math.ceil(t_final / float(delays.min()) * _DDEINT_POINTS_PER_DELAY))
    grid = np.unique(np.concatenate([np.linspace(0.0, t_final, points + 1), save_times]))
    rows = np.searchsorted(grid, save_times)

    def initial(t):
        z = np.asarray(history(jnp.asarray([min(float(t), 0.0)]), point), dtype=np.float64)[0]
        return float(z[0]) if n == 1 else z  # ddeint cannot stack one-component arrays

    caught: list = []
    warned_at: list[float] = []

    def func(Y, t):
        if caught and not warned_at:
            warned_at.append(float(t))
        z = np.atleast_1d(np.asarray(Y(t), dtype=np.float64)).reshape(n)
        z_delayed = np.stack([np.atleast_1d(np.asarray(Y(t - d), dtype=np.float64)).reshape(n)
                              for d in delays])
        return np.asarray(field(np.float64(t), z, z_delayed, point), dtype=np.float64)

    code, message = Status.OK, ""
    stop = grid.size  # first grid row that is not trusted
    try:
        with warnings.catch_warnings(record=True) as caught, np.errstate(all="ignore"):
            warnings.simplefilter("always")
            zs = np.asarray(ddeint(func, initial, grid), dtype=np.float64).reshape(grid.size, n)
    except Exception as error:  # a failing point must not stop the batch
        zs = np.full((grid.size, n), np.nan)
        code = Status.SOLVER_FAILED
        message = f"ddeint raised {type(error).__name__}: {error}"
    with np.errstate(all="ignore"):
        xs = np.where(mask, np.exp(np.where(mask, zs, 0.0)), zs)
    bad_rows = np.flatnonzero(~np.all(np.isfinite(zs), axis=1))
    if code == Status.OK and bad_rows.size:
        stop = int(bad_rows[0])
        bad = zs[stop]
        i = int(np.argmax(~np.isfinite(bad)))
        kind = Status.NONFINITE if np.isnan(bad).any() else Status.OVERFLOW
        code, message = kind, status_message(kind, grid[stop], names[i])
    elif code == Status.OK and caught:
        when = warned_at[0] if warned_at else grid[-1]
        stop = max(int(np.searchsorted(grid, when, side="right")) - 1, 1)
        code = Status.SOLVER_FAILED
        message = (f"ddeint's integrator (scipy.integrate.ode) failed near t = {grid[stop]:.6g} s: "
                   f"{str(caught[0].message).strip()}")
    xs[stop:] = np.nan
    ys = xs[rows]
    infinite = np.isinf(ys)
    if code == Status.OK and infinite.any():
        row, i = np.argwhere(infinite)[0]
        code, message = Status.OVERFLOW, status_message(Status.OVERFLOW, save_times[row], names[i])
    return ys, int(code), message


@dataclass(frozen=True)
class Reference(Method):
    """The reference: SciPy's DOP853 by the method of steps with breakpoints, rtol 1e-11, one
    point at a time (`solve_reference`); its error is about 1e-10 relative. For tests and
    benchmarks. log_space: integrate the components the model marks positive as log x."""

    log_space: bool = True
    name = "scipy"
    #: The function that integrates the batch point by point: (ys, status, messages).
    integrate = staticmethod(solve_reference)

    def run(self, system, params, size, t_final, grid, names, rtol, batch_chunk, progress, started) -> Solution:
        ys, status, messages = self.integrate(system, params, t_final, grid, log_space=self.log_space)
        return Solution(grid, ys, status, messages, names, self.name, info={"wall_s": time.perf_counter() - started})


@dataclass(frozen=True)
class DDEint(Reference):
    """The `ddeint` package, for comparison only (`solve_ddeint`): it reads delayed values from an
    interpolation of its own past output that lags the integrator, so it misses sharp start-up
    transients by orders of magnitude. log_space as for `Reference`."""

    name = "ddeint"
    integrate = staticmethod(solve_ddeint)
