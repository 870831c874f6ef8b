"""Nonlinear stability maps: classify simulated trajectories.

Each trajectory x(t) (one scalar output per point, e.g. the total window) is compared with the
point's equilibrium x* over a final window of the horizon. With d(t) = x(t)/x* - 1:

* ``converged``: max |d| over the final window <= `converged_rtol`;
* ``oscillating`` (sustained oscillation): not converged, and the half-amplitude of d over the
  second half of the final window is at least `sustained_ratio` times that over its first half
  and above `converged_rtol`;
  the amplitude (relative half peak-to-peak) and the period are reported;
* ``converging``: not converged yet, but the oscillation is dying out and the trajectory is
  near the equilibrium (max |d| <= `transient_deviation`; a longer horizon may converge);
* ``transient``: neither converged nor sustained, and still far from the equilibrium
  (max |d| > `transient_deviation`) at the end of the horizon, or not getting closer (e.g. a
  rate stuck at 0): the start-up excursion has not died out yet, or the point settled
  elsewhere; the horizon is too short to tell (`run_sweep` extends it for such points);
* ``overflow``: the solver reported that a state exceeded float64 (status OVERFLOW);
* ``diverged``: the solver reported a non-finite state, or the trajectory left every bound
  (d is not finite).

The thresholds are stored with every result (`Thresholds.as_attrs`).
"""

from __future__ import annotations

import enum
from dataclasses import asdict, dataclass

import numpy as np

from ..dde import Status
from ..errors import ParameterError


class Behaviour(enum.IntEnum):
    """Class of a simulated point (stored as an integer code in datasets)."""

    CONVERGED = 0
    CONVERGING = 1
    OSCILLATING = 2
    DIVERGED = 3
    OVERFLOW = 4
    TRANSIENT = 5


BEHAVIOUR_NAMES = tuple(b.name.lower() for b in Behaviour)


def settled(behaviour) -> np.ndarray:
    """Whether each behaviour code (array-like or DataArray) is converged or converging: what a
    stability map counts as stable (a longer horizon would not change the verdict)."""
    return np.isin(np.asarray(behaviour), [int(Behaviour.CONVERGED), int(Behaviour.CONVERGING)])


@dataclass(frozen=True)
class Thresholds:
    """Thresholds of `classify` (dimensionless).

    final_fraction: fraction of the save grid, at its end, that is examined.
    converged_rtol: largest |x/x* - 1| in that window for a converged point.
    sustained_ratio: amplitude ratio (second half over first half of the window) at or above
        which an oscillation counts as sustained.
    transient_deviation: largest |x/x* - 1| in the window of a point still converging; beyond
        it a point that is neither converged nor sustained is a transient.
    """

    final_fraction: float = 0.2
    converged_rtol: float = 1e-3
    sustained_ratio: float = 0.95
    transient_deviation: float = 1.0

    def __post_init__(self):
        if not 0 < self.final_fraction <= 1:
            raise ParameterError("final_fraction", self.final_fraction, "a fraction in (0, 1]")
        if not self.converged_rtol > 0:
            raise ParameterError("converged_rtol", self.converged_rtol, "a tolerance > 0")
        if not 0 < self.sustained_ratio <= 1:
            raise ParameterError("sustained_ratio", self.sustained_ratio, "a ratio in (0, 1]")
        if not self.transient_deviation > self.converged_rtol:
            raise ParameterError("transient_deviation", self.transient_deviation, "a deviation > converged_rtol")

    def as_attrs(self) -> dict[str, float]:
        return {f"classify_{k}": v for k, v in asdict(self).items()}


@dataclass
class Classification:
    """Per-point results of `classify`, each of shape (B,)."""

    behaviour: np.ndarray  # int8 codes of `Behaviour`
    amplitude: np.ndarray  # relative half peak-to-peak over the last half of the final window
    period: np.ndarray  # seconds between up-crossings of the mean (nan if fewer than two)
    deviation: np.ndarray  # max |x/x* - 1| over the final window


def classify(
    times: np.ndarray,
    values: np.ndarray,
    equilibrium: np.ndarray,
    status: np.ndarray | None = None,
    thresholds: Thresholds = Thresholds(),
) -> Classification:
    """Classify trajectories `values` (B, S) saved at `times` (B, S) (seconds) against `equilibrium` (B,)."""
    values = np.asarray(values, dtype=np.float64)
    times = np.broadcast_to(np.asarray(times, dtype=np.float64), values.shape)
    equilibrium = np.asarray(equilibrium, dtype=np.float64).reshape(-1)
    if values.ndim != 2 or equilibrium.shape[0] != values.shape[0]:
        raise ParameterError("values", f"shape {values.shape}", f"shape (B, S) with B = {equilibrium.shape[0]}")
    size, n_saves = values.shape
    start = min(n_saves - 2, int(np.floor(n_saves * (1.0 - thresholds.final_fraction)))) if n_saves > 2 else 0
    window = values[:, start:] / equilibrium[:, None] - 1.0
    window_t = times[:, start:]
    half = window.shape[1] // 2
    with np.errstate(invalid="ignore"):
        deviation = np.max(np.abs(window), axis=1)
        first = 0.5 * (np.max(window[:, :half], axis=1) - np.min(window[:, :half], axis=1)) if half else deviation
        second = 0.5 * (np.max(window[:, half:], axis=1) - np.min(window[:, half:], axis=1))

    period = np.array([_period(window_t[i, half:], window[i, half:]) for i in range(size)])
    with np.errstate(invalid="ignore"):
        approaching = np.max(np.abs(window[:, half:]), axis=1) < (np.max(np.abs(window[:, :half]), axis=1)
                                                                  if half else np.inf)

    behaviour = np.full(size, Behaviour.CONVERGING, dtype=np.int8)
    finite = np.all(np.isfinite(window), axis=1)
    converged = finite & (deviation <= thresholds.converged_rtol)
    sustained = (finite & ~converged & np.isfinite(period) & (second >= thresholds.sustained_ratio * first)
                 & (second > thresholds.converged_rtol))
    # Neither settled nor oscillating: far from the equilibrium, or not getting closer to it (such
    # as a rate that collapsed to 0 and stays there).
    transient = finite & ~converged & ~sustained & ((deviation > thresholds.transient_deviation) | ~approaching)
    behaviour[converged] = Behaviour.CONVERGED
    behaviour[sustained] = Behaviour.OSCILLATING
    behaviour[transient] = Behaviour.TRANSIENT
    behaviour[~finite] = Behaviour.DIVERGED
    if status is not None:
        status = np.asarray(status)
        behaviour[status == Status.NONFINITE] = Behaviour.DIVERGED
        behaviour[status == Status.OVERFLOW] = Behaviour.OVERFLOW
    amplitude = np.where(finite, second, np.nan)
    period[behaviour != Behaviour.OSCILLATING] = np.nan
    return Classification(behaviour, amplitude, period, np.where(finite, deviation, np.inf))


def _period(times: np.ndarray, values: np.ndarray) -> float:
    """Mean time between up-crossings of the mean, or nan with fewer than two crossings."""
    if not np.all(np.isfinite(values)):
        return float("nan")
    centred = values - np.mean(values)
    up = np.nonzero((centred[:-1] < 0) & (centred[1:] >= 0))[0]
    if len(up) < 2:
        return float("nan")
    # Linear interpolation of each crossing time.
    t0, t1 = times[up], times[up + 1]
    v0, v1 = centred[up], centred[up + 1]
    crossing = t0 + (t1 - t0) * (-v0) / (v1 - v0)
    return float(np.mean(np.diff(crossing)))
