"""RCP on the packet engine: routers' rate of eq. (2), the SYN's rate, sharing, exact accounting."""

from __future__ import annotations

import numpy as np
import pytest

from fluidcc.errors import ParameterError
from fluidcc.network import Flow, Link, Network
from fluidcc.packet import simulate
from fluidcc.packet.protocols import RCP
from fluidcc.packet.workloads import FlowTable


def _one_link(capacity=1000.0, rtpd=0.1, buffer=None):
    return Network((Link("l", capacity, rtpd / 2, buffer_packets=buffer),), (Flow("f", ("l",)),))


def test_one_flow_gets_the_link_and_four_share_it_equally():
    """A lone flow runs at C; when three more join, eq. (2) brings R to C/4 (RCP's N_hat = C/R
    = 4) and the flows' throughputs over the last 5 s are equal."""
    network = _one_link()
    flows = FlowTable([0.0, 5.0, 5.0, 5.0], np.full(4, np.inf))
    run = simulate(network, RCP(), flows, duration_s=20.0, slot_s=1e-3, sample_s=0.5)
    rate = run.rcp_rate.values[0, :, 0]
    times = run.sample_time.values
    assert np.all(rate[times <= 5.0] == pytest.approx(1000.0))
    assert np.mean(rate[times > 15.0]) == pytest.approx(250.0, rel=0.03)
    served = run.served.values[0, times > 10.0, 0].sum() / (1000.0 * 0.5 * np.sum(times > 10.0))
    assert served > 0.97  # the link stays full
    assert np.all(run.late.values == 0)


def test_the_syn_collects_the_smallest_rate_on_the_path():
    """Two links, 1000 and 400 packets/s, idle: the flow's SYN returns min R = 400 and the flow
    sends at it from its first packet: 2000 packets take 5 s, and the slow link never queues."""
    links = (Link("fast", 1000.0, 0.02), Link("slow", 400.0, 0.03))
    network = Network(links, (Flow("f", ("fast", "slow")),))
    run = simulate(network, RCP(), FlowTable([0.0], [2000]), duration_s=7.0, slot_s=1e-3, sample_s=0.1)
    rtpd = 0.1
    assert float(run.fct.values[0, 0]) == pytest.approx(1.5 * rtpd + 2000 / 400.0, abs=0.01)
    assert float(run.queue.values[0, :, 1].max()) < 2.0
    assert int(run.dropped.values.sum()) == 0


def test_flows_joining_at_the_path_rate_overflow_and_every_packet_is_accounted_for():
    """Three flows join a full link at R = C (their SYN's rate): the queue overflows for an RTT
    (RCP's known start-up burst); the losses are repaired and the books balance exactly."""
    network = _one_link(buffer=100)
    flows = FlowTable([0.0, 2.0, 2.0, 2.0], [4000, 1500, 1500, 1500])
    run = simulate(network, RCP(), flows, duration_s=20.0, slot_s=1e-3, seeds=[1, 2])
    sent, delivered, dropped, in_flight = (run[v].values for v in ("sent", "delivered", "dropped", "in_flight"))
    assert np.all(dropped.sum(axis=1) > 0)
    assert np.all(sent == delivered + dropped + in_flight)
    assert np.all(run.received.values == flows.size_packets)
    assert np.all(delivered == run.received.values + run.stored.values + run.duplicates.values
                  + run.discarded.values)


@pytest.mark.parametrize("kwargs, field", [({"alpha": 0.0}, "alpha"), ({"beta": -1.0}, "beta"),
                                           ({"tau_s": 0.0}, "tau"), ({"rtt_gain": 1.5}, "rtt_gain"),
                                           ({"min_rto_s": float("nan")}, "min_rto")])
def test_bad_rcp_settings_name_the_field(kwargs, field):
    with pytest.raises(ParameterError, match=field):
        RCP(**kwargs)
