"""Models by name, with their parameters, units and defaults, for the CLI and sweeps."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import jax
import numpy as np

from .. import units
from ..errors import ParameterError
from . import miaimd, qcp, rcp, xcp


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
    field: str = ""  # the parameter dataclass field it sets (default: the same name)

    @property
    def field_name(self) -> str:
        return self.field or self.name

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
        sweeps and stability maps. flow: builds (system, params) for one point with per-flow
        RTTs (None for models without per-flow state); used by simulate.
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


MIAIMD_ENTRY = ModelEntry(
    name="miaimd",
    description="MIAIMD, the fluid model of VCP (VCP paper eqs. (10)-(14)) on one bottleneck",
    parameters=(
        ParameterSpec("kappa", "number", 0.25, "MI stability coefficient kappa > 0"),
        ParameterSpec("alpha", "number", 1.0, "AI parameter alpha >= 0, packets per RTT"),
        ParameterSpec("gamma", "number", 0.98, "target utilization gamma in (0, 1]"),
        ParameterSpec("capacity", "rate", units.mbps_to_pps(150.0), "bottleneck capacity C (default 150Mbps)", "capacity_pps"),
        ParameterSpec("rtt", "time", 0.08, "round-trip time T (default 80ms)", "rtt_s"),
        ParameterSpec("flows", "count", 50, "number of flows N", "n_flows"),
        ParameterSpec("initial_window", "number", 1.0, "each flow's window on [-T, 0], packets"),
    ),
    aggregate=_miaimd_aggregate,
    observed="window",
    observed_unit="packets",
    flow=_miaimd_flow,
)


def _loop_parameters(alpha: float, beta: float) -> tuple[ParameterSpec, ...]:
    return (
        ParameterSpec("alpha", "number", alpha, "gain on the spare capacity alpha >= 0"),
        ParameterSpec("beta", "number", beta, "gain on the queue beta >= 0"),
        ParameterSpec("capacity", "rate", units.mbps_to_pps(150.0), "link capacity C (default 150Mbps)", "capacity_pps"),
        ParameterSpec("rtt", "time", 0.08, "round-trip time = control interval d (default 80ms)", "rtt_s"),
        ParameterSpec("initial_load", "number", 0.5, "aggregate rate / C on [-d, 0] (start-up)"),
        ParameterSpec("initial_queue", "number", 0.0, "queue on [-d, 0], packets"),
    )


def _loop_builder(system, builder):
    def build(values):
        params = builder(alpha=values["alpha"], beta=values["beta"], capacity_pps=values["capacity"],
                         rtt_s=values["rtt"], initial_load=values["initial_load"], initial_queue=values["initial_queue"])
        return system, params

    return build


def _rcp_aggregate(values):
    params = rcp.aggregate_params(
        alpha=values["alpha"], beta=values["beta"], capacity_pps=values["capacity"], rtt_s=values["rtt"],
        n_flows=values["flows"], initial_load=values["initial_load"], initial_queue=values["initial_queue"],
    )
    return rcp.RCPAggregate(), params


XCP_ENTRY = ModelEntry(
    name="xcp",
    description="XCP's efficiency loop (XCP, SIGCOMM 2002) on one bottleneck, linear queue as in its analysis",
    parameters=_loop_parameters(0.4, 0.226),
    aggregate=_loop_builder(xcp.XCPAggregate(), xcp.aggregate_params),
    observed="rate",
    observed_unit="packets/s",
)

QCP_ENTRY = ModelEntry(
    name="qcp",
    description="QCP's aggregate loop, QCP paper eq. (19), queue kept >= 0",
    parameters=_loop_parameters(1.0, 1.0),
    aggregate=_loop_builder(qcp.QCPAggregate(), qcp.aggregate_params),
    observed="rate",
    observed_unit="packets/s",
)

RCP_ENTRY = ModelEntry(
    name="rcp",
    description="RCP's rate update, RCP paper eq. (2), in fluid form on one bottleneck, queue kept >= 0",
    parameters=_loop_parameters(0.1, 1.0)[:4] + (
        ParameterSpec("flows", "count", 50, "number of flows N", "n_flows"),
        ParameterSpec("initial_load", "number", 0.5, "N R / C on [-d, 0] (start-up), > 0"),
        ParameterSpec("initial_queue", "number", 0.0, "queue on [-d, 0], packets"),
    ),
    aggregate=_rcp_aggregate,
    observed="rate",
    observed_unit="packets/s",
)

REGISTRY: dict[str, ModelEntry] = {e.name: e for e in (MIAIMD_ENTRY, XCP_ENTRY, RCP_ENTRY, QCP_ENTRY)}


def get_model(name: str) -> ModelEntry:
    """The registry entry of a model name (raises ParameterError listing the known names)."""
    try:
        return REGISTRY[name]
    except KeyError:
        raise ParameterError("model", name, f"one of {', '.join(sorted(REGISTRY))}") from None
