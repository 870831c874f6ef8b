"""Exception hierarchy of fluidcc.

Bad *input* raises at once with a message that names the field, the value and what is allowed.
Failure of a point inside a batch is never an exception: it is a status in the solution.
"""

from __future__ import annotations

from typing import Any


class FluidccError(Exception):
    """Base class of every error fluidcc raises on purpose."""


class ParameterError(FluidccError, ValueError):
    """A parameter is outside its allowed range, of the wrong shape, or unknown.

    Attributes
    ----------
    field: the parameter's name as the user spelled it (``"kappa"``, ``"--grid"``, ...).
    value: the offending value.
    allowed: a human sentence saying what is allowed.
    """

    def __init__(self, field: str, value: Any, allowed: str):
        self.field = field
        self.value = value
        self.allowed = allowed
        super().__init__(f"{field} = {_short(value)} is not allowed: {allowed}")


class ShapeError(ParameterError):
    """Arrays whose shapes do not fit together (a batch axis that differs, an empty batch)."""


class UnitError(ParameterError):
    """A quantity with a unit suffix that cannot be read or does not fit the field."""


class NetworkError(ParameterError):
    """A network description that cannot be used: its field names the link or flow at fault."""


class WorkloadError(ParameterError):
    """A flow workload that cannot be used: a malformed flow-size CDF (its field names the file and
    line), a flow table or arrival process out of range."""


class StoreError(ParameterError):
    """A results store that cannot be used for this run: made by a different sweep (the message
    names each difference), or a folder that holds something else. Its field is ``store``."""

    def __init__(self, path: str, reason: str):
        super().__init__("store", path, "the store of this same sweep or study, or a new folder; " + reason)


class ClusterError(ParameterError):
    """A Dask cluster that cannot be used: a scheduler that does not answer (the field is
    ``scheduler``), or a number of workers that is not allowed (``workers``)."""


class SolverError(FluidccError, RuntimeError):
    """The solver could not run at all (not a failing point: those are statuses)."""


def _short(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
