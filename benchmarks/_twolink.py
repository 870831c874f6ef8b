"""The iXCP paper's Fig. 1 network, shared by the explicit-rate benchmarks (`qcp_packet.py`,
`rcp_packet.py`): 155 and 100 Mb/s, 20 ms each; one flow on the first link, 16 across both."""

from __future__ import annotations

import numpy as np

from fluidcc.network import Flow, Link, Network
from fluidcc.packet import simulate_exact
from fluidcc.packet.workloads import FlowTable
from fluidcc.units import mbps_to_pps


def twolink_network(scale: float, stagger: float) -> Network:
    """The network with both capacities times `scale`, the long flows starting `stagger` s apart."""
    c1, c2 = mbps_to_pps(155.0 * scale), mbps_to_pps(100.0 * scale)
    return Network((Link("l1", c1, 0.02), Link("l2", c2, 0.02)),
                   (Flow("short", ("l1",)),
                    *(Flow(f"long{k}", ("l1", "l2"), start_s=stagger * k) for k in range(16))))


def long_lived(network: Network) -> FlowTable:
    """One long-lived flow per network flow, each from the network's start time for it."""
    starts = np.asarray(network.start_s, dtype=float)
    return FlowTable(starts, np.full(starts.size, np.inf), route=np.arange(starts.size))


def second_half_goodput(network: Network, protocol, duration_s: float, sample_s: float):
    """Runs `long_lived(network)` to the end and to the half (the engine is deterministic, so the
    first half is the same in both); returns (the full run, the half run, each flow's goodput over
    the second half: in-order data at its receiver, packets/s)."""
    table = long_lived(network)
    half = duration_s / 2
    full = simulate_exact(network, protocol, table, duration_s=duration_s, sample_s=sample_s).isel(run=0)
    first = simulate_exact(network, protocol, table, duration_s=half, sample_s=0.5).isel(run=0)
    return full, first, (full.received.values - first.received.values) / (duration_s - half)
