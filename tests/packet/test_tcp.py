"""TCP NewReno on the packet engine: slow start on an idle path, recovery from drops, exact accounting."""

from __future__ import annotations

import numpy as np
import pytest

from fluidcc.errors import ParameterError
from fluidcc.network import Flow, Link, Network
from fluidcc.packet import simulate
from fluidcc.packet.metrics import slow_start_fct
from fluidcc.packet.protocols import TCP
from fluidcc.packet.workloads import FlowTable


def ack_clocked_fct(size, capacity, rtpd, w0=2):
    """Slow start on one idle link, event by event in continuous time (the test's own reference).

    The SYN's round trip takes rtpd; the first w0 packets leave then, paced at the link's rate;
    packet i leaves the link at d_i = max(its arrival, d_{i-1}) + 1/C; its ACK, rtpd later,
    raises cwnd by one and releases two packets. The flow ends when its last packet arrives,
    rtpd/2 after leaving the link.
    """
    arrivals = [rtpd + k / capacity for k in range(min(w0, size))]
    leave = []
    while len(leave) < size:
        leave.append(max(arrivals[len(leave)], leave[-1] if leave else 0.0) + 1 / capacity)
        back = leave[-1] + rtpd
        for k in range(2):
            if len(arrivals) < size:
                arrivals.append(max(back + k / capacity, arrivals[-1] + 1 / capacity))
    return leave[-1] + rtpd / 2


SIZES = [1, 2, 3, 4, 5, 7, 10, 20, 31, 50, 63, 100, 200, 300, 500, 700, 1000]


def test_a_lone_flow_finishes_as_slow_start_predicts():
    """L = 1 ... 1000 packets, 1000 packets/s, RTPD 100 ms, slots of one packet time: the
    completion time from the SYN matches the ACK-clocked slow-start reference within one slot per
    RTT, and never exceeds the RCP paper's [log2(L/w0 + 1) + 1/2] RTPD + L/C (section 3.2), which
    it equals while the window's transmission time is negligible (L <= 5 here) -- the paper's
    expression serializes every round's transmission, ACK clocking overlaps them."""
    capacity, rtpd = 1000.0, 0.1
    network = Network((Link("l", capacity, rtpd / 2, buffer_packets=10**6),), (Flow("f", ("l",)),))
    tables = [FlowTable([0.0], [size]) for size in SIZES]
    run = simulate(network, TCP(), tables, duration_s=2.0, slot_s=1.0 / capacity, seeds=list(range(len(SIZES))))
    fct = run.fct.values[:, 0]
    rounds = np.ceil(np.log2(np.asarray(SIZES) / 2 + 1)) + 1
    reference = np.array([ack_clocked_fct(size, capacity, rtpd) for size in SIZES])
    assert np.all(np.abs(fct - reference) <= rounds * 1e-3 + 1e-9), np.c_[SIZES, fct, reference]
    paper = slow_start_fct(np.asarray(SIZES), rtpd, capacity)
    assert np.all(fct <= paper + rounds * 1e-3 + 1e-9)
    small = np.asarray(SIZES) <= 5
    assert np.allclose(fct[small], paper[small], atol=1e-3 + 1e-9)
    assert np.all(run.dropped.values == 0) and np.all(run.duplicates.values == 0)
    assert np.array_equal(run.received.values[:, 0], SIZES)


def _dumbbell(n, buffer, capacity=1000.0, rtpd=0.05):
    link = Link("b", capacity, rtpd / 2, buffer_packets=buffer)
    return Network((link,), tuple(Flow(f"f{k}", ("b",)) for k in range(n)))


@pytest.mark.parametrize("buffer", [4, 20])
def test_flows_recover_from_drops_and_every_packet_is_accounted_for(buffer):
    """Eight flows of 300 packets start together into a small buffer: drops, fast retransmits and
    timeouts; every flow still finishes with exactly its data, and the books balance exactly."""
    network = _dumbbell(8, buffer)
    flows = FlowTable(np.linspace(0.0, 0.07, 8), np.full(8, 300.0), route=np.arange(8))
    run = simulate(network, TCP(), flows, duration_s=20.0, slot_s=1e-3, seeds=[1, 2])
    sent, delivered, dropped, in_flight = (run[v].values for v in ("sent", "delivered", "dropped", "in_flight"))
    assert np.all(sent == delivered + dropped + in_flight)
    assert np.all(dropped.sum(axis=1) > 0) and np.all(dropped.sum(axis=1) == run.link_dropped.values[:, 0])
    assert np.all(np.isfinite(run.fct.values))  # everyone finished
    assert np.all(run.received.values == 300)  # in order, once each
    # each packet that reached the receiver was new data, or a copy it already had
    assert np.all(delivered == run.received.values + run.stored.values + run.duplicates.values
                  + run.discarded.values)
    assert np.all(sent >= 300)


def test_a_window_of_many_losses_ends_in_a_timeout_not_one_rtt_per_hole():
    """RFC 6582's "Impatient" timer (as ns-3): within a recovery only the first partial ACK restarts
    the retransmission timer. A flow behind a 100x faster access link overshoots in slow start and
    loses well over a hundred packets of one window: it times out and goes back, instead of
    repairing one hole per RTT (about 180 RTTs, 20 s, with the timer restarted on every partial ACK)."""
    rtpd = 0.1
    links = (Link("access", 100_000.0, 1e-4, buffer_packets=100_000), Link("b", 1000.0, rtpd / 2 - 1e-4,
                                                                          buffer_packets=150))
    network = Network(links, (Flow("f", ("access", "b")),))
    run = simulate(network, TCP(), FlowTable([0.0], [2000.0]), duration_s=30.0, slot_s=1e-3)
    v = run.isel(run=0, flow=0)
    assert int(v.dropped) > 100 and int(v.timeouts) >= 1
    assert int(v.received) == 2000
    assert float(v.fct) < int(v.dropped) * rtpd / 2


def test_long_lived_flows_fill_the_link_and_share_it():
    network = _dumbbell(4, 50, capacity=1000.0, rtpd=0.05)
    run = simulate(network, TCP(), duration_s=30.0, slot_s=1e-3, seeds=[3])
    utilization = float(run.link_accepted.values[0, 0]) / (1000.0 * 30.0)
    assert utilization > 0.9
    share = run.received.values[0] / run.received.values[0].sum()
    assert np.all(share > 0.1)


def test_stop_time_ends_a_long_lived_flow():
    network = _dumbbell(1, 100)
    run = simulate(network, TCP(), FlowTable([0.0], [np.inf], stop_s=1.0), duration_s=3.0, slot_s=1e-3)
    assert float(run.last_delivered.values[0, 0]) < 1.2
    assert int(run.in_flight.values[0, 0]) == 0


@pytest.mark.parametrize("kwargs, field", [({"initial_window": 0}, "initial_window"),
                                           ({"min_rto_s": 0.0}, "min_rto")])
def test_bad_tcp_settings_name_the_field(kwargs, field):
    with pytest.raises(ParameterError, match=field):
        TCP(**kwargs)
