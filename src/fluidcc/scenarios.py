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
* RCP: N. Dukkipati, M. Kobayashi, R. Zhang-Shen, N. McKeown, "Processor sharing flows in the
  Internet", IWQoS 2005.
* QCP: "A network congestion control protocol to more quickly finish flows" (Quick congestion
  Control Protocol).
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


#: iXCP paper, Fig. 4: the five links' capacities (Mb/s) and the flows in each group.
IXCP_FIG4_CAPACITIES_MBPS = (340.0, 240.0, 160.0, 120.0, 60.0)
IXCP_FIG4_GROUPS = (10, 10, 10, 20, 30)


def ixcp_fig4(groups: tuple[int, ...] = IXCP_FIG4_GROUPS, *, delay_ms: float = 20.0, scale: float = 1.0) -> Network:
    """iXCP paper, Fig. 4 (section 4.2): five links in series, every flow bottlenecked at the last
    link it crosses.

    Links ``l1`` ... ``l5`` of 340, 240, 160, 120 and 60 Mb/s (times `scale`), `delay_ms` one-way
    each (the paper: 20 ms); group k (k = 1 ... 5) of `groups[k-1]` flows ``g{k}[0]``, ... crosses
    links 1 ... k. The paper gives the rates and the two largest groups; the rest (groups of 10,
    10, 10, 20 and 30 flows and these capacities) is fixed here so that group k is bottlenecked at
    link k, with max-min rates of 10, 8, 4, 3 and 2 Mb/s (times `scale`).
    """
    if len(groups) != 5:
        raise ParameterError("groups", groups, "five whole numbers >= 1 of flows, one per group")
    for count in groups:
        _whole("groups", count)
    if isinstance(scale, bool) or not (isinstance(scale, (int, float)) and np.isfinite(scale) and scale > 0):
        raise ParameterError("scale", scale, "a factor > 0 on the capacities")
    delay = ms_to_s(delay_ms)
    links = tuple(Link(f"l{k + 1}", mbps_to_pps(c * scale), delay) for k, c in enumerate(IXCP_FIG4_CAPACITIES_MBPS))
    flows = tuple(Flow(f"g{k + 1}[{j}]", tuple(f"l{m + 1}" for m in range(k + 1)))
                  for k, count in enumerate(groups) for j in range(count))
    return Network(links, flows)


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


def _whole(name: str, value, minimum: int = 1) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ParameterError(name, value, f"a whole number >= {minimum}")


def rcp_fig2(*, n_flows: int = 20, capacity_mbps: float = 100.0, rtt_ms: float = 100.0) -> Network:
    """RCP paper, Fig. 2: long-lived flows join and leave one link; C/R(t) should track N(t).

    One link ``l`` of `capacity_mbps` with one-way delay rtt_ms / 2. `n_flows` flows ``a[k]``
    start at t = 0 and finish at t = 100 s; `n_flows` flows ``b[k]`` start at t = 40 s. So N(t) =
    20, 40, 20 on [0, 40), [40, 100), [100, ...) s with the defaults. The paper's text does not
    give the link's capacity or RTT; C/R converges to N for any (section 2.3).
    """
    _whole("n_flows", n_flows)
    link = Link("l", mbps_to_pps(capacity_mbps), ms_to_s(rtt_ms) / 2.0)
    flows = [Flow(f"a[{k}]", ("l",), stop_s=100.0) for k in range(n_flows)]
    flows += [Flow(f"b[{k}]", ("l",), start_s=40.0) for k in range(n_flows)]
    return Network((link,), tuple(flows))


def qcp_table2(*, n_flows: int = 10) -> Network:
    """QCP paper, Table 2 (estimation of N, its Fig. 3): `n_flows` long-lived flows ``f[k]`` that
    start together on one 20 Mb/s link ``l`` with 50 ms propagation delay (RTT 100 ms)."""
    _whole("n_flows", n_flows)
    link = Link("l", mbps_to_pps(20.0), ms_to_s(50.0))
    return Network((link,), tuple(Flow(f"f[{k}]", ("l",)) for k in range(n_flows)))


def qcp_fig10(*, n_group0: int = 5, n_group1: int = 5, capacity0_mbps: float = 5.0,
              capacity1_mbps: float = 20.0) -> Network:
    """QCP paper, Figs. 10/11: two groups of flows on two bottleneck links, in fluid form.

    The paper's text does not give the topology's numbers; fluidcc's version: link ``l0``
    (`capacity0_mbps`, 20 ms one-way) then link ``l1`` (`capacity1_mbps`, 30 ms one-way). Group 0,
    flows ``g0[k]``, crosses ``l0`` then ``l1`` (RTT 100 ms); group 1, flows ``g1[k]``, crosses
    ``l1`` only (RTT 60 ms). Group 0 is held at ``l0``; ``l1`` is shared with it and is group 1's
    bottleneck. Max-min with the defaults: group 0 at 1 Mb/s each, group 1 at (20 - 5) / 5 = 3
    Mb/s each. Processor sharing at ``l1`` would offer 20/10 = 2 Mb/s to all and leave 5 Mb/s
    unused; efficient sharing (QCP Definition 1) gives it to group 1.
    """
    _whole("n_group0", n_group0)
    _whole("n_group1", n_group1)
    links = (Link("l0", mbps_to_pps(capacity0_mbps), ms_to_s(20.0)),
             Link("l1", mbps_to_pps(capacity1_mbps), ms_to_s(30.0)))
    flows = [Flow(f"g0[{k}]", ("l0", "l1")) for k in range(n_group0)]
    flows += [Flow(f"g1[{k}]", ("l1",)) for k in range(n_group1)]
    return Network(links, tuple(flows))


def vcp_sweep(points, *, later_s: float, short=None):
    """The VCP paper's section 4 sweeps (Figs. 3-6) as ONE batch of packet-level runs: the
    network, one flow table per run and the buffers (`fluidcc.packet.simulate_exact`'s `flows` and
    `buffers`).

    Point k is (capacity_pps, rtt_s, n): a forward link ``f<k>`` (node ``a<k>`` to ``b<k>``) and a
    reverse link ``r<k>`` (back), each of capacity_pps and one quarter of the RTT of delay, with
    n long-lived flows each way, two-way traffic as in the paper (the reverse flows' data shares
    ``r<k>`` with the forward flows' ACKs); every sender's access delay is the last quarter, so
    the round trip is rtt_s. Buffers max(BDP, 2 packets per flow) on both links, as the paper's.
    Point k's flows start uniformly in the first second (drawn from seed k). The points are
    disjoint link pairs of one network, so that one compiled program runs them all: in run k the
    other points' flows start at `later_s`, which should lie after the run's end. short: per
    point, None or a `fluidcc.packet.workloads.FlowTable` of short flows on its forward link
    (their route index is ignored), appended to its long-lived flows (Fig. 6).
    """
    from .packet.workloads import FlowTable  # the packet layer imports this module's networks

    if not points:
        raise ParameterError("points", points, "one or more (capacity_pps, rtt_s, flows each way)")
    for k, point in enumerate(points):
        numbers = isinstance(point, (tuple, list)) and len(point) == 3 and all(
            isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool) for v in point[:2])
        if not (numbers and np.isfinite(point[0]) and point[0] > 0 and np.isfinite(point[1]) and point[1] > 0):
            raise ParameterError(f"points[{k}]", point, "(capacity_pps > 0, rtt_s > 0, flows each way)")
        _whole(f"points[{k}] flows", point[2])
    if isinstance(later_s, bool) or not isinstance(later_s, (int, float)) or not (np.isfinite(later_s) and later_s > 0):
        raise ParameterError("later_s", later_s, "a start time > 0 s for the other points' flows, after the run's end")
    if short is not None and len(short) != len(points):
        raise ParameterError("short", len(short), f"one entry (a FlowTable or None) per point: {len(points)}")
    links, flows, buffers, starts, routes, sizes = [], [], [], [], [], []
    for k, (capacity, rtt, n) in enumerate(points):
        links += [Link(f"f{k}", capacity, rtt / 4, source=f"a{k}", target=f"b{k}"),
                  Link(f"r{k}", capacity, rtt / 4, source=f"b{k}", target=f"a{k}")]
        flows += [Flow(f"fwd{k}", (f"f{k}",), access_delay_s=rtt / 4),
                  Flow(f"rev{k}", (f"r{k}",), access_delay_s=rtt / 4)]
        buffers += [max(int(np.ceil(capacity * rtt)), 2 * n)] * 2
        starts.append(np.random.default_rng(k).uniform(0.0, 1.0, 2 * n))
        routes.append(np.array([2 * k] * n + [2 * k + 1] * n))
        sizes.append(np.full(2 * n, np.inf))
        if short is not None and short[k] is not None:
            starts[-1] = np.concatenate([starts[-1], short[k].start_s])
            routes[-1] = np.concatenate([routes[-1], np.full(short[k].start_s.size, 2 * k)])
            sizes[-1] = np.concatenate([sizes[-1], short[k].size_packets])
    tables = [FlowTable(np.concatenate([s if j == k else np.full(s.shape, later_s) for j, s in enumerate(starts)]),
                        np.concatenate(sizes), route=np.concatenate(routes))
              for k in range(len(points))]
    return Network(tuple(links), tuple(flows)), tables, np.array(buffers, dtype=float)


def vcp_sweep_statistics(runs, points, buffers, *, skip_fraction: float = 0.2) -> list[dict]:
    """Per point k of a `vcp_sweep` batch as `fluidcc.packet.simulate_exact` returns it (run k, its
    forward link ``f<k>``), without the first `skip_fraction` of the run, as the VCP paper's
    statistics: ``utilization`` (the bytes the link served, ACKs included, over what its capacity
    could send), ``queue_mean_of_buffer`` and ``queue_max_of_buffer`` (the mean and the largest
    per-sample mean queue, over the buffer) and ``drop_fraction`` (of the packets that reached it).
    points, buffers: `vcp_sweep`'s."""
    if isinstance(skip_fraction, bool) or not isinstance(skip_fraction, (int, float)) or not 0 <= skip_fraction < 1:
        raise ParameterError("skip_fraction", skip_fraction, "a fraction of the run in [0, 1)")
    if runs.sizes["run"] != len(points) or len(buffers) != 2 * len(points):
        raise ParameterError("points", len(points), f"one point per run of `runs` ({runs.sizes['run']}), with "
                             "vcp_sweep's buffers (two per point)")
    sample = float(runs.sample_time.values[0])  # the first sample's end: the spacing
    late = runs.sample_time.values > skip_fraction * float(runs.attrs["duration_s"])
    rows = []
    for k, (capacity, _, _) in enumerate(points):
        run, link, buffer = runs.isel(run=k), f"f{k}", float(buffers[2 * k])
        served = run.served.sel(link=link).values[late].sum()
        queue = run.queue.sel(link=link).values[late]
        drops = run.drops.sel(link=link).values[late].sum()
        arrived = run.accepted.sel(link=link).values[late].sum() + drops
        rows.append({"utilization": float(served / (capacity * sample * late.sum())),
                     "queue_mean_of_buffer": float(queue.mean() / buffer),
                     "queue_max_of_buffer": float(queue.max() / buffer),
                     "drop_fraction": float(drops / max(arrived, 1.0))})
    return rows
