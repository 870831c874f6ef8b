"""The iXCP paper's Fig. 1 network, shared by the explicit-rate benchmarks (`qcp_packet.py`,
`rcp_packet.py`): 155 and 100 Mb/s, 20 ms each; one flow on the first link, 16 across both."""

from __future__ import annotations

from fluidcc.network import Flow, Link, Network
from fluidcc.units import mbps_to_pps


def twolink_network(scale: float, stagger: float) -> Network:
    """The network with both capacities times `scale`, the long flows starting `stagger` s apart."""
    c1, c2 = mbps_to_pps(155.0 * scale), mbps_to_pps(100.0 * scale)
    return Network((Link("l1", c1, 0.02), Link("l2", c2, 0.02)),
                   (Flow("short", ("l1",)),
                    *(Flow(f"long{k}", ("l1", "l2"), start_s=stagger * k) for k in range(16))))
