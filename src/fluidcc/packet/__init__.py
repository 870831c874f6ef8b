"""Packet-level simulator: engines in JAX, workloads and metrics.

`simulate_exact` runs the exact engine (`fluidcc.packet.exact`: every packet, ACK and timer at its
own time in one total order, results independent of its step; byte-sized service, header fields,
reverse routes through queues, capacity schedules) with the protocols of
`fluidcc.packet.exact_protocols` (TCP NewReno as ns-3 runs it, RCP, QCP, XCP and iXCP, open-loop sources), for a
batch of seeds. A scenario file (network + workload + protocol + duration + seeds) runs on it with
`run_scenario` or `fluidcc packet SCENARIO.toml`; the protocol catalogue (`fluidcc.protocols`)
names its protocols, whose settings are their dataclass fields (`fluidcc.packet.settings`).

`workloads` builds flow tables (Poisson arrivals, flow-size distributions, empirical CDFs);
`metrics` has flow completion times, processor-sharing references, fairness and what links could
carry.
"""

from . import metrics as metrics
from . import exact_protocols as exact_protocols
from . import workloads as workloads
from ._run_exact import simulate_exact as simulate_exact
from .scenario import Scenario as Scenario
from .scenario import run_scenario as run_scenario

__all__ = ["Scenario", "exact_protocols", "metrics", "run_scenario", "simulate_exact", "workloads"]
