"""The result of a batched solve: saved states plus a status per point."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

import numpy as np


class Status(enum.IntEnum):
    """Per-point result codes. A failing point in a batch is data, never an exception."""

    OK = 0
    #: A state component exceeded the float64 range (its log stayed finite if integrated in log space).
    OVERFLOW = 1
    #: A state component became NaN (typically 0/0 or inf - inf in the vector field).
    NONFINITE = 2
    #: The requested tolerance was not reached at the finest resolution allowed.
    TOLERANCE_NOT_REACHED = 3
    #: The reference solver (SciPy) itself reported a failure.
    SOLVER_FAILED = 4


@dataclass
class Solution:
    """Saved trajectories of a batch of B parameter points.

    Attributes
    ----------
    ts: save times in seconds, shape (B, S).
    ys: saved states in natural units (packets, packets/s, ...), shape (B, S, n); inf where a
        component overflowed float64, nan after a point failed.
    status: `Status` code per point, shape (B,).
    messages: a sentence per point ('' when ok), shape (B,).
    state_names: the name of each of the n components.
    method: the solver that produced it ("rk4", "chebyshev", "scipy", "ddeint").
    steps_per_delay: the resolution each point was integrated at (rk4 only), shape (B,).
    error_estimate: estimated max error per point (rk4 or chebyshev with rtol: log components in
        relative terms, others relative to their largest magnitude), shape (B,), else None.
    info: timing and configuration of the run (chebyshev: the pieces per delay and nodes each
        point was integrated at, "pieces_per_delay" and "nodes", shape (B,)).
    """

    ts: np.ndarray
    ys: np.ndarray
    status: np.ndarray
    messages: np.ndarray
    state_names: list[str]
    method: str
    steps_per_delay: np.ndarray | None = None
    error_estimate: np.ndarray | None = None
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def success(self) -> np.ndarray:
        """Boolean mask of the points whose status is OK, shape (B,)."""
        return self.status == Status.OK

    @property
    def batch_size(self) -> int:
        return int(self.status.shape[0])

    def __getitem__(self, name: str) -> np.ndarray:
        """The saved values of one named component, shape (B, S)."""
        try:
            index = self.state_names.index(name)
        except ValueError:
            raise KeyError(f"no state named {name!r}; the states are {self.state_names}") from None
        return self.ys[..., index]

    def summary(self) -> str:
        """Count of points per status, e.g. 'ok: 9731, overflow: 269'."""
        codes, counts = np.unique(self.status, return_counts=True)
        return ", ".join(f"{Status(int(c)).name.lower()}: {int(k)}" for c, k in zip(codes, counts))


def status_message(code: int, time_s: float, what: str = "a state component") -> str:
    """A sentence describing a failure status at a time in seconds."""
    if code == Status.OK:
        return ""
    if code == Status.OVERFLOW:
        return f"overflow: {what} exceeded the float64 range at t = {time_s:.6g} s"
    if code == Status.NONFINITE:
        return f"non-finite: {what} became NaN at t = {time_s:.6g} s"
    if code == Status.TOLERANCE_NOT_REACHED:
        return "tolerance not reached at the finest resolution allowed"
    return "the solver failed"


def statuses(over: np.ndarray, nan: np.ndarray, tolerance_failed: np.ndarray):
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
