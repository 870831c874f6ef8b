"""Example networks from the papers, as `fluidcc.network.Network` objects, plus random networks.

Each function builds the topology of a figure so that `fluidcc.maxmin`, the fluid models and the
packet simulator all start from the same description. Units: capacities in packets/s (converted
from the papers' Mb/s with 1000-byte packets), delays in seconds. The files in
``examples/networks/`` describe the same networks in TOML.

Papers:

* iXCP: L. Zan, X. Yang, "Improving XCP to achieve max-min fair bandwidth allocation",
  IFIP Networking 2007 (journal version: X. Yang, Y. Lu, L. Zan, Computer Networks, 2010).
* VCP: Y. Xia, L. Subramanian, I. Stoica, S. Kalyanaraman, "One more bit is enough",
  SIGCOMM 2005 (journal version: IEEE/ACM Transactions on Networking, 2008).
"""

from __future__ import annotations

import numpy as np

from .errors import ParameterError
from .network import Flow, Link, Network
from .units import mbps_to_pps, ms_to_s


def ixcp_fig1(n_long: int = 8, *, delay_ms: float = 20.0) -> Network:
    """iXCP paper, Fig. 1: two links in series, XCP's under-utilization example.

    Link ``l1`` of 155 Mb/s then link ``l2`` of 100 Mb/s, `delay_ms` one-way each (the max-min
    rates do not depend on it). One flow ``short`` crosses ``l1`` only; `n_long` flows
    ``long[0]``, ... cross both. Max-min fair rates for n_long >= 2: each long flow 100/n_long
    Mb/s (bottleneck ``l2``), the short flow 55 Mb/s (bottleneck ``l1``). For n_long = 1 the
    long flow's fair share of ``l1``, 77.5 Mb/s, is below 100 Mb/s: both flows get 77.5 Mb/s.
    """
    if isinstance(n_long, bool) or not isinstance(n_long, (int, np.integer)) or n_long < 1:
        raise ParameterError("n_long", n_long, "a whole number of long flows >= 1")
    delay = ms_to_s(delay_ms)
    links = (Link("l1", mbps_to_pps(155), delay), Link("l2", mbps_to_pps(100), delay))
    flows = [Flow("short", ("l1",))]
    flows += [Flow(f"long[{k}]", ("l1", "l2")) for k in range(n_long)]
    return Network(links, tuple(flows))


def ixcp_fig6() -> Network:
    """iXCP paper, Figs. 6 and 7: three links in series with flows that join and leave.

    Links ``l1`` 150 Mb/s, ``l2`` 100 Mb/s, ``l3`` 120 Mb/s, 20 ms one-way each. Flow ``long``
    crosses all three; ``s1`` crosses ``l1``, ``s2`` crosses ``l2``, ``s3`` and ``s4`` cross
    ``l3``; ``s5``, ``s6``, ``s7`` join ``l1`` at t = 20 s; ``s4`` to ``s7`` stop at t = 40 s.

    Max-min fair rates (Mb/s) in each phase:

    ===========  ====  ===================  ===  =========
    t            long  s1 (and s5, s6, s7)  s2   s3 (, s4)
    ===========  ====  ===================  ===  =========
    [0, 20) s    40    110                  60   40
    [20, 40) s   30    30                   70   45
    [40, inf) s  50    100                  50   70
    ===========  ====  ===================  ===  =========
    """
    delay = ms_to_s(20)
    links = (Link("l1", mbps_to_pps(150), delay), Link("l2", mbps_to_pps(100), delay),
             Link("l3", mbps_to_pps(120), delay))
    flows = (
        Flow("long", ("l1", "l2", "l3")),
        Flow("s1", ("l1",)),
        Flow("s2", ("l2",)),
        Flow("s3", ("l3",)),
        Flow("s4", ("l3",), stop_s=40.0),
        Flow("s5", ("l1",), start_s=20.0, stop_s=40.0),
        Flow("s6", ("l1",), start_s=20.0, stop_s=40.0),
        Flow("s7", ("l1",), start_s=20.0, stop_s=40.0),
    )
    return Network(links, flows)


def vcp_parking_lot(link4_capacity_mbps: float | None = None, *, n_long: int = 50, n_cross: int = 5,
                    capacity_mbps: float = 100.0, delay_ms: float = 20.0) -> Network:
    """The VCP paper's multiple-bottleneck (parking-lot) topology.

    Seven links ``l1`` ... ``l7`` in series, `capacity_mbps` each (``l4``: `link4_capacity_mbps`
    when given), `delay_ms` one-way each. `n_long` flows ``long[k]`` cross all seven links;
    `n_cross` flows ``cross<j>[k]`` cross link ``l<j>`` only.

    Max-min fair rates with the defaults: every flow 100/55 Mb/s (every link is a bottleneck).
    With ``l4`` at 50 Mb/s: the long flows and the cross flows of ``l4`` get 50/55 Mb/s, the other
    cross flows (100 - 50 * 50/55)/5 Mb/s.
    """
    for name, value in (("n_long", n_long), ("n_cross", n_cross)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise ParameterError(name, value, "a whole number of flows >= 1")
    delay = ms_to_s(delay_ms)
    names = [f"l{j}" for j in range(1, 8)]
    links = tuple(Link(name, mbps_to_pps(link4_capacity_mbps if (name == "l4" and link4_capacity_mbps is not None)
                                         else capacity_mbps), delay) for name in names)
    flows = [Flow(f"long[{k}]", tuple(names)) for k in range(n_long)]
    for j, name in enumerate(names, start=1):
        flows += [Flow(f"cross{j}[{k}]", (name,)) for k in range(n_cross)]
    return Network(links, tuple(flows))


def random_network(n_links: int, n_flows: int, *, seed: int, max_route_links: int = 6,
                   capacity_mbps: tuple[float, float] = (10.0, 1000.0),
                   delay_ms: tuple[float, float] = (1.0, 50.0)) -> Network:
    """A random network: link capacities uniform in `capacity_mbps` (Mb/s), one-way delays uniform
    in `delay_ms`, each flow over 1 to `max_route_links` distinct links chosen uniformly (route
    length uniform too), weight 1, no demand. Links ``l0``, ...; flows ``f0``, ...
    """
    for name, value in (("n_links", n_links), ("n_flows", n_flows), ("max_route_links", max_route_links)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise ParameterError(name, value, "a whole number >= 1")
    rng = np.random.default_rng(seed)
    capacities = rng.uniform(*capacity_mbps, size=n_links)
    delays = rng.uniform(*delay_ms, size=n_links)
    links = tuple(Link(f"l{l}", mbps_to_pps(float(c)), ms_to_s(float(d))) for l, (c, d) in
                  enumerate(zip(capacities, delays)))
    longest = min(max_route_links, n_links)
    flows = []
    for i in range(n_flows):
        hops = int(rng.integers(1, longest + 1))
        route = rng.choice(n_links, size=hops, replace=False)
        flows.append(Flow(f"f{i}", tuple(f"l{l}" for l in route)))
    return Network(links, tuple(flows))
