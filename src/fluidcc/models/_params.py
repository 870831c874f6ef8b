"""Helpers for model parameter batches: broadcasting to a batch axis and range checks.

Every check raises `fluidcc.errors.ParameterError` naming the field, the first offending value
(and its position in the batch) and what is allowed; nothing is clamped.
"""

from __future__ import annotations

import numpy as np

from ..errors import ParameterError, ShapeError


def broadcast_batch(**values) -> tuple[dict[str, np.ndarray], int]:
    """Broadcast scalars and 1-d arrays to one batch size B; returns float64 arrays of shape (B,)."""
    arrays = {name: np.asarray(value, dtype=np.float64) for name, value in values.items()}
    sizes = {name: a.shape[0] for name, a in arrays.items() if a.ndim == 1}
    for name, a in arrays.items():
        if a.ndim > 1:
            raise ShapeError(name, f"shape {a.shape}", "a scalar or a 1-d array over the batch")
    distinct = set(sizes.values())
    if 0 in distinct:
        empty = next(name for name, s in sizes.items() if s == 0)
        raise ShapeError(empty, "an empty array", "at least one parameter point")
    if len(distinct) > 1:
        raise ShapeError(
            "batch", ", ".join(f"{n}: {s}" for n, s in sizes.items()), "every batched parameter of one length"
        )
    size = distinct.pop() if distinct else 1
    return {name: np.broadcast_to(a, (size,)).copy() for name, a in arrays.items()}, size


def _first_bad(name: str, array: np.ndarray, bad: np.ndarray, allowed: str) -> None:
    if np.any(bad):
        position = tuple(int(i) for i in np.argwhere(bad)[0])
        value = float(array[position])
        where = f" (at batch position {position[0]})" if array.ndim and array.size > 1 else ""
        raise ParameterError(name, value, allowed + where)


def require_positive(name: str, array, unit: str = "") -> None:
    """Every value finite and > 0."""
    a = np.asarray(array, dtype=np.float64)
    _first_bad(name, a, ~(np.isfinite(a) & (a > 0)), f"a finite value > 0{unit}")


def require_nonnegative(name: str, array, unit: str = "") -> None:
    """Every value finite and >= 0."""
    a = np.asarray(array, dtype=np.float64)
    _first_bad(name, a, ~(np.isfinite(a) & (a >= 0)), f"a finite value >= 0{unit}")


def require_interval(name: str, array, low: float, high: float) -> None:
    """Every value in the half-open interval (low, high]."""
    a = np.asarray(array, dtype=np.float64)
    _first_bad(name, a, ~(np.isfinite(a) & (a > low) & (a <= high)), f"a value in ({low:g}, {high:g}]")


def require_whole(name: str, array, minimum: int = 1) -> None:
    """Every value a whole number >= minimum."""
    a = np.asarray(array, dtype=np.float64)
    _first_bad(name, a, ~(np.isfinite(a) & (a >= minimum) & (a == np.round(a))), f"a whole number >= {minimum}")
