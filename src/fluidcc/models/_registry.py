"""Models by name, with their parameters, units and defaults, for the CLI and sweeps."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from .. import units
from ..errors import ParameterError
from . import miaimd


@dataclass(frozen=True)
class ParameterSpec:
    """One user-facing parameter: name, kind of quantity, default and help text.

    kind: "number" (dimensionless), "rate" (packets/s; accepts bps, kbps, Mbps, Gbps, pps),
    "time" (seconds; accepts s, ms, us) or "count" (a whole number).
    """

    name: str
    kind: str
    default: float
    help: str

    @property
    def unit(self) -> str:
        return {"rate": "packets/s", "time": "s", "count": "", "number": ""}[self.kind]

    def parse(self, text: str | float, field: str | None = None) -> float:
        """Read a value typed by a user, with a unit suffix where the kind allows one."""
        field = field or self.name
        if self.kind == "rate":
            return units.parse_rate(field, text)
        if self.kind == "time":
            return units.parse_time(field, text)
        return units.parse_number(field, text)


@dataclass(frozen=True)
class ModelEntry:
    """A model as the CLI sees it.

    aggregate: builds (system, params) for a batch of single-RTT points from SI arrays; used by
        sweeps. flow: builds (system, params) for one point with per-flow RTTs; used by simulate.
    equilibrium: the closed-form value of the aggregate's first state for each point (B,).
    """

    name: str
    description: str
    parameters: tuple[ParameterSpec, ...]
    aggregate: Callable[[dict[str, np.ndarray]], tuple]
    flow: Callable[[dict[str, np.ndarray], np.ndarray], tuple]
    equilibrium: Callable[[dict[str, np.ndarray]], np.ndarray]

    def parameter(self, name: str) -> ParameterSpec:
        for spec in self.parameters:
            if spec.name == name:
                return spec
        allowed = ", ".join(p.name for p in self.parameters)
        raise ParameterError("parameter", name, f"a parameter of {self.name}: {allowed}")

    def defaults(self) -> dict[str, float]:
        return {p.name: p.default for p in self.parameters}


def _miaimd_aggregate(values):
    params = miaimd.aggregate_params(
        kappa=values["kappa"], alpha=values["alpha"], gamma=values["gamma"],
        capacity_pps=values["capacity"], rtt_s=values["rtt"], n_flows=values["flows"],
        initial_window=values["initial_window"],
    )
    return miaimd.MIAIMDAggregate(), params


def _miaimd_flow(values, rtts):
    params = miaimd.flow_params(
        kappa=values["kappa"], alpha=values["alpha"], gamma=values["gamma"],
        capacity_pps=values["capacity"], rtt_s=np.asarray(rtts)[None, :],
        initial_window=values["initial_window"],
    )
    return miaimd.MIAIMD(), params


def _miaimd_equilibrium(values):
    return miaimd.equilibrium_homogeneous(
        values["kappa"], values["alpha"], values["gamma"], values["capacity"], values["rtt"], values["flows"]
    )["window"]


MIAIMD_ENTRY = ModelEntry(
    name="miaimd",
    description="MIAIMD, the fluid model of VCP (VCP paper eqs. (10)-(14)) on one bottleneck",
    parameters=(
        ParameterSpec("kappa", "number", 0.25, "MI stability coefficient kappa > 0"),
        ParameterSpec("alpha", "number", 1.0, "AI parameter alpha >= 0, packets per RTT"),
        ParameterSpec("gamma", "number", 0.98, "target utilization gamma in (0, 1]"),
        ParameterSpec("capacity", "rate", units.mbps_to_pps(150.0), "bottleneck capacity C (default 150Mbps)"),
        ParameterSpec("rtt", "time", 0.08, "round-trip time T (default 80ms)"),
        ParameterSpec("flows", "count", 50, "number of flows N"),
        ParameterSpec("initial_window", "number", 1.0, "each flow's window on [-T, 0], packets"),
    ),
    aggregate=_miaimd_aggregate,
    flow=_miaimd_flow,
    equilibrium=_miaimd_equilibrium,
)

REGISTRY: dict[str, ModelEntry] = {MIAIMD_ENTRY.name: MIAIMD_ENTRY}


def get_model(name: str) -> ModelEntry:
    """The registry entry of a model name (raises ParameterError listing the known names)."""
    try:
        return REGISTRY[name]
    except KeyError:
        raise ParameterError("model", name, f"one of {', '.join(sorted(REGISTRY))}") from None
