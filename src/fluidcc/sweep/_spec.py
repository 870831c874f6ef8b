"""Sweep specifications: grid axes over model parameters, and the settings of a sweep."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field

import numpy as np

from ..errors import ParameterError
from ..protocols import single_link_model

GRID_FORMAT = "NAME=START:STOP:COUNT[:log] or NAME=V1,V2,... (units allowed, e.g. rtt=10ms:1s:64:log)"


@dataclass(frozen=True)
class GridAxis:
    """One swept parameter: its name and its values in SI units."""

    name: str
    values: tuple[float, ...]
    scale: str = "linear"
    text: str = ""

    def __len__(self) -> int:
        return len(self.values)


def parse_grid(model: str, text: str) -> GridAxis:
    """One grid axis of `model` from its text: ``kappa=0.05:2:64``, ``rtt=10ms:1s:32:log`` or
    ``flows=10,50,100`` (the format of the command line's ``--grid``). Errors name the field
    ``grid`` (``grid NAME start``, ...)."""
    entry = single_link_model(model)
    if "=" not in text:
        raise ParameterError("grid", text, GRID_FORMAT)
    name, _, body = text.partition("=")
    name = name.strip()
    spec = entry.parameter(name)
    field_name = f"grid {name}"
    if "," in body or ":" not in body:
        items = [item for item in body.split(",") if item.strip()]
        if not items:
            raise ParameterError("grid", text, GRID_FORMAT)
        values = np.array([spec.parse(item.strip(), field_name) for item in items])
        scale = "list"
    else:
        parts = body.split(":")
        scale = "linear"
        if len(parts) == 4:
            if parts[3].strip().lower() not in ("log", "lin", "linear"):
                raise ParameterError("grid", text, GRID_FORMAT)
            scale = "log" if parts[3].strip().lower() == "log" else "linear"
            parts = parts[:3]
        if len(parts) != 3:
            raise ParameterError("grid", text, GRID_FORMAT)
        start = spec.parse(parts[0].strip(), f"{field_name} start")
        stop = spec.parse(parts[1].strip(), f"{field_name} stop")
        try:
            count = int(parts[2])
        except ValueError:
            raise ParameterError(f"{field_name} count", parts[2], "a whole number of points >= 1") from None
        if count < 1:
            raise ParameterError(f"{field_name} count", count, "a whole number of points >= 1")
        if scale == "log":
            if start <= 0 or stop <= 0:
                raise ParameterError(f"{field_name}", f"{start}:{stop}", "start and stop > 0 for a log grid")
            values = np.geomspace(start, stop, count)
        else:
            values = np.linspace(start, stop, count)
    if spec.kind == "count":
        values = np.round(values)
    if not np.all(np.isfinite(values)):
        raise ParameterError("grid", text, "finite values")
    return GridAxis(name=name, values=tuple(float(v) for v in values), scale=scale, text=text)


def parse_set(model: str, text: str) -> tuple[str, str]:
    """One fixed setting ``NAME=VALUE`` of `model` (the format of ``--set``); returns (name, value
    text), validating the name. Errors name the field ``setting`` (``setting NAME``)."""
    if "=" not in text:
        raise ParameterError("setting", text, "NAME=VALUE, e.g. kappa=0.25 or capacity=150Mbps")
    name, _, value = text.partition("=")
    single_link_model(model).parameter(name.strip())
    if not value.strip():
        raise ParameterError(f"setting {name.strip()}", value, "a value")
    return name.strip(), value.strip()


@dataclass(frozen=True)
class SweepSpec:
    """Everything that defines a sweep's results (its hash names resumable partial results).

    horizon_rtts: integration horizon in RTTs of each point; saves_per_rtt: save points per RTT;
    solver: "rk4", "chebyshev" (models linear in their current state with one delay: MIAIMD), or
        "auto" (chebyshev where the model allows it, else rk4); steps_per_delay and rtol: solver resolution (rk4) and tolerance (both; see
        `fluidcc.dde.solve`);
    max_horizon_rtts: points still in their start-up transient at the end of the horizon are
        integrated again over 4x the horizon, up to this many RTTs (None: 8 x horizon_rtts).
    """

    model: str
    axes: tuple[GridAxis, ...]
    fixed: dict[str, float] = field(default_factory=dict)
    horizon_rtts: float = 250.0
    saves_per_rtt: int = 4
    steps_per_delay: int = 32
    rtol: float | None = 1e-6
    max_steps_per_delay: int = 1024
    max_horizon_rtts: float | None = None
    solver: str = "auto"

    @property
    def horizon_limit_rtts(self) -> float:
        return self.max_horizon_rtts if self.max_horizon_rtts is not None else 8.0 * self.horizon_rtts

    def __post_init__(self):
        if not self.axes:
            raise ParameterError("axes", "none", "at least one grid axis")
        names = [a.name for a in self.axes]
        if len(set(names)) != len(names):
            raise ParameterError("axes", names, "each parameter swept at most once")
        clash = set(names) & set(self.fixed)
        if clash:
            raise ParameterError("fixed", sorted(clash), "parameters not also swept on an axis")
        if not self.horizon_rtts > 0:
            raise ParameterError("horizon_rtts", self.horizon_rtts, "a horizon > 0 RTTs")
        if self.max_horizon_rtts is not None and not self.max_horizon_rtts >= self.horizon_rtts:
            raise ParameterError("max_horizon_rtts", self.max_horizon_rtts, f"at least horizon_rtts = {self.horizon_rtts}")
        if self.solver not in ("auto", "rk4", "chebyshev"):
            raise ParameterError("solver", self.solver, "auto, rk4 or chebyshev")
        if self.saves_per_rtt < 1:
            raise ParameterError("saves_per_rtt", self.saves_per_rtt, "a whole number >= 1")

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(len(a) for a in self.axes)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape))

    def values(self, start: int = 0, stop: int | None = None) -> dict[str, np.ndarray]:
        """Every parameter of the model as a flat array over the grid (C order), SI units; with
        `start`/`stop`, over those points only (memory by the range, not the grid)."""
        entry = single_link_model(self.model)
        stop = self.size if stop is None else stop
        index = np.unravel_index(np.arange(start, stop), self.shape)
        count = stop - start
        values = {name: np.full(count, value) for name, value in entry.defaults().items()}
        values.update({name: np.full(count, value) for name, value in self.fixed.items()})
        for axis, at in zip(self.axes, index):
            values[axis.name] = np.asarray(axis.values)[at]
        return values

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    def digest(self) -> str:
        return hashlib.sha256(self.to_json().encode()).hexdigest()[:16]
