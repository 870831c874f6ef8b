"""Packet-level simulator: a vectorized discrete-time engine in JAX, workloads and metrics.

`simulate` runs a protocol's sources on a `fluidcc.network.Network` for a batch of seeds
(`fluidcc.packet.engine` describes the model of links, paths and time); `workloads` builds flow
tables (Poisson arrivals, flow-size distributions, empirical CDFs); `metrics` has flow completion
times, processor-sharing references and fairness. Sources: `fluidcc.packet.protocols`. A scenario
file (network + workload + protocol + duration + seeds) runs with `run_scenario` or
`fluidcc packet SCENARIO.toml`.
"""

from . import metrics as metrics
from . import protocols as protocols
from . import workloads as workloads
from ._run import simulate as simulate
from .scenario import Scenario as Scenario
from .scenario import run_scenario as run_scenario

__all__ = ["Scenario", "metrics", "protocols", "run_scenario", "simulate", "workloads"]
