"""What a fluid model tells the front ends: its user-facing parameters (units, defaults), how to
build it from them, and what a run observes. Each model module declares its own; the protocol
catalogue (`fluidcc.protocols`) names them."""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

import jax
import numpy as np

from .. import units
from ..errors import ParameterError

#: The kinds of quantity a parameter may be, with the unit it is held in.
PARAMETER_UNITS = {"rate": "packets/s", "time": "s", "count": "", "number": ""}


#: The forms of a parameter's range: ``> a``, ``>= a``, ``< b``, ``<= b`` or an interval such as
#: ``(0, 1]`` (round bracket: open end, square bracket: closed end).
RANGE_FORMS = "'> a', '>= a', '< b', '<= b' or an interval '(a, b]', '[a, b)', ..."


@dataclass(frozen=True)
class ParameterSpec:
    """One user-facing parameter: name, kind of quantity, default, help text and range.

    kind: "number" (dimensionless), "rate" (packets/s; accepts bps, kbps, Mbps, Gbps, pps),
    "time" (seconds; accepts s, ms, us) or "count" (a whole number). range: the values the model
    takes, in SI units (see `RANGE_FORMS`; "" for any real number). The model's parameter builder
    enforces it and names the field when a value is out of it; the range here says it to users
    (``fluidcc models``), and the tests check that the builder rejects just what it excludes.
    """

    name: str
    kind: str
    default: float
    help: str
    field: str = ""  # the parameter dataclass field it sets (default: the same name)
    range: str = ""

    def __post_init__(self):
        if self.kind not in PARAMETER_UNITS:
            raise ParameterError(f"parameter {self.name}: kind", self.kind, f"one of {', '.join(PARAMETER_UNITS)}")
        if not self.contains(self.default):  # also checks the range's form
            raise ParameterError(f"parameter {self.name}: default", self.default, f"a value in its range {self.range}")

    def bounds(self) -> tuple[tuple[float, bool] | None, tuple[float, bool] | None]:
        """(low, high) ends of the range, each (value, closed) or None when unbounded."""
        text = self.range.replace(" ", "")
        try:
            if not text:
                return None, None
            for sign, closed in ((">=", True), (">", False)):
                if text.startswith(sign):
                    return (float(text[len(sign):]), closed), None
            for sign, closed in (("<=", True), ("<", False)):
                if text.startswith(sign):
                    return None, (float(text[len(sign):]), closed)
            if text[0] in "([" and text[-1] in ")]" and text.count(",") == 1:
                low, high = text[1:-1].split(",")
                return (float(low), text[0] == "["), (float(high), text[-1] == "]")
        except ValueError:
            pass
        raise ParameterError(f"parameter {self.name}: range", self.range, RANGE_FORMS)

    def contains(self, value) -> np.ndarray:
        """Whether each value lies in the range."""
        value = np.asarray(value, dtype=np.float64)
        low, high = self.bounds()
        inside = np.isfinite(value)
        if low is not None:
            inside &= value >= low[0] if low[1] else value > low[0]
        if high is not None:
            inside &= value <= high[0] if high[1] else value < high[0]
        return inside

    @property
    def field_name(self) -> str:
        return self.field or self.name

    @property
    def unit(self) -> str:
        return PARAMETER_UNITS[self.kind]

    def parse(self, text: str | float, field: str | None = None) -> float:
        """Read a value typed by a user, with a unit suffix where the kind allows one."""
        field = field or self.name
        if self.kind == "rate":
            return units.parse_rate(field, text)
        if self.kind == "time":
            return units.parse_time(field, text)
        return units.parse_number(field, text)


@dataclass(frozen=True)
class SingleLinkModel:
    """A protocol's fluid model on one bottleneck, as sweeps, stability maps and single runs use it.

    aggregate: builds (system, params) for a batch of single-RTT points from SI arrays (B,) keyed
        by parameter name; used by sweeps and stability maps. flow: builds (system, params) for
        one point with per-flow RTTs (None for models without per-flow state); used by single runs.
    observed: the state component sweeps classify against its equilibrium (a name of the
        aggregate's `state_names`), with its unit. delay_parameter: the parameter that is the
        feedback delay (horizons and save grids are counted in it).
    """

    name: str
    description: str
    parameters: tuple[ParameterSpec, ...]
    aggregate: Callable[[dict[str, np.ndarray]], tuple]
    observed: str
    observed_unit: str
    flow: Callable[[dict[str, np.ndarray], np.ndarray], tuple] | None = None
    delay_parameter: str = "rtt"

    def parameter(self, name: str) -> ParameterSpec:
        for spec in self.parameters:
            if spec.name == name:
                return spec
        allowed = ", ".join(p.name for p in self.parameters)
        raise ParameterError("parameter", name, f"a parameter of {self.name}: {allowed}")

    def defaults(self) -> dict[str, float]:
        return {p.name: p.default for p in self.parameters}

    def observed_index(self, system, params) -> int:
        """Position of the observed component in the aggregate's state."""
        point = jax.tree_util.tree_map(lambda a: np.asarray(a)[0], params)
        return system.state_names(point).index(self.observed)

    def equilibrium(self, values: dict[str, np.ndarray]) -> np.ndarray:
        """The observed component's equilibrium at every point (B,), from the model."""
        system, params = self.aggregate(values)
        return np.asarray(system.equilibrium_state(params))[:, self.observed_index(system, params)]


@dataclass(frozen=True)
class NetworkModel:
    """A protocol's per-flow fluid model on a `fluidcc.network.Network`.

    system: the DDE system of a network (e.g. ``lambda network: XCPNetwork(network, "ixcp")``).
    params: its parameter builder, ``params(network, **values)``; the defaults of the user-set
        parameters are read from its signature, so the two cannot disagree.
    parameters: the names of the scalar parameters a user sets (SI units; the rest come from the
        network), with `notes` on their units where a default alone does not say it.
    settle_s: default horizon after the last start or stop, seconds.
    saves_per_rtt: the default save spacing is the smallest RTT over this (rates read from saved
        offers one RTT back need a finer grid).
    The system supplies ``observe_run(times, states, params)`` (see `fluidcc.runs`).
    """

    name: str
    description: str
    system: Callable[[Any], Any]
    params: Callable[..., Any]
    parameters: tuple[str, ...]
    settle_s: float
    saves_per_rtt: int = 1
    notes: Mapping[str, str] = field(default_factory=dict)

    def defaults(self) -> dict[str, float | None]:
        signature = inspect.signature(self.params).parameters
        return {name: signature[name].default for name in self.parameters}

    def build(self, network, values: Mapping[str, float] | None = None, *, field: str = "parameter"):
        """(system, params, merged values) for `network`, with `values` (SI) over the defaults."""
        merged = self.defaults()
        for name, value in (values or {}).items():
            if name not in merged:
                raise ParameterError(field, name, f"a parameter of {self.name} on a network: {', '.join(merged)}")
            merged[name] = float(value)
        return self.system(network), self.params(network, **merged), merged
