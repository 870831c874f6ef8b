"""What every solver method is: a small frozen object holding its own options, checked when it is
made, that says whether it can integrate a system and integrates a checked batch.

`fluidcc.dde.solve` checks the batch, the times and the save grid once, for every method, and
hands them to the method's `run`; in the way of `scipy.integrate.solve_ivp`'s METHODS and
diffrax's solver classes, an option a method does not have is an error, never ignored."""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

import numpy as np

from ..errors import ParameterError


class Method:
    """Base of the solver methods (`RK4`, `Chebyshev`, `Reference`, `DDEint`)."""

    #: The name `solve(method=...)` takes.
    name = "method"
    #: Whether the method refines each point to `solve`'s rtol (else rtol must be None).
    adaptive = False

    def require(self, system, params) -> None:
        """Raise a ParameterError (field "method") saying why the method cannot integrate `system`
        (its structure, not its parameter values); return if it can."""

    def supports(self, system, params) -> bool:
        """Whether the method can integrate `system` (`require` without the error)."""
        try:
            self.require(system, params)
        except ParameterError:
            return False
        return True

    def run(self, system, params, size: int, t_final, grid, names: list[str], rtol: float | None, batch_chunk: int,
            progress: Callable[[int, int], None] | None, started: float):
        """Integrate the checked batch: t_final (B,), grid (B, S); returns a `Solution`."""
        raise NotImplementedError

    @classmethod
    def options(cls) -> tuple[str, ...]:
        """The option names the method takes."""
        return tuple(f.name for f in dataclasses.fields(cls))

    @classmethod
    def with_options(cls, options: dict[str, Any]) -> "Method":
        """The method with `options` (keywords of `solve`); an option it does not have is an error."""
        for option, value in options.items():
            if option not in cls.options():
                allowed = ", ".join(cls.options()) or "none"
                raise ParameterError(option, value, f"an option of method {cls.name!r}, which takes: {allowed}")
        return cls(**options)


def whole_at_least(name: str, value, low: int) -> None:
    """Raise naming `name` unless `value` is a whole number >= low."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
        raise ParameterError(name, value, f"a whole number >= {low}")
