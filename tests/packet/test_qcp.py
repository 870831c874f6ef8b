"""QCP on the packet engine: the simplified rate of eq. (14) with a lone flow and with flows joining
(known not to settle reliably: a strict xfail); bad input."""

from __future__ import annotations

import functools

import numpy as np
import pytest

from fluidcc.errors import ParameterError
from fluidcc.network import Flow, Link, Network
from fluidcc.packet import simulate
from fluidcc.packet.protocols import QCP
from fluidcc.packet.workloads import FlowTable


def test_simplified_qcp_counts_a_lone_flow_and_fills_the_link():
    """One flow on 1000 packets/s, RTPD 100 ms, eight seeds: from 2 s on N_hat = C / R is within
    5 % of 1, the link is full, nothing is dropped."""
    network = Network((Link("l", 1000.0, 0.05),), (Flow("f", ("l",)),))
    run = simulate(network, QCP(variant="simplified"), FlowTable([0.0], [np.inf]), duration_s=6.0, slot_s=1e-3,
                   sample_s=0.5, seeds=list(range(8)))
    late = run.sample_time.values > 2.0
    assert np.all(np.abs(run.qcp_flow_estimate.values[:, late, 0] - 1.0) < 0.05)
    assert np.all(run.served.values[:, late, 0].sum(axis=1) / (1000.0 * 0.5 * late.sum()) > 0.97)
    assert np.all(run.dropped.values == 0)


@functools.lru_cache(maxsize=1)
def _four_flows_joining():
    """One simulation for the two tests below (8 seeds of 20 s)."""
    network = Network((Link("l", 1000.0, 0.05),), (Flow("f", ("l",)),))
    flows = FlowTable([0.0, 5.0, 5.0, 5.0], np.full(4, np.inf))
    return simulate(network, QCP(variant="simplified"), flows, duration_s=20.0, slot_s=1e-3, sample_s=0.5,
                    seeds=list(range(8)))


def test_simplified_qcp_with_flows_joining_accounts_for_every_packet():
    """Four flows on 1000 packets/s, RTPD 100 ms (three join at 5 s at the rate the first one had,
    C, and overflow the buffer), eight seeds: every packet is accounted for and every flow gets
    data through."""
    run = _four_flows_joining()
    sent, delivered, dropped, in_flight = (run[v].values for v in ("sent", "delivered", "dropped", "in_flight"))
    assert np.all(sent == delivered + dropped + in_flight)
    assert np.all(run.received.values > 500)


@pytest.mark.xfail(strict=True, reason="known: at packet level eq. (14) does not settle after flows join "
                   "(measured: 1-6 of these 8 seeds settle, depending on the links' random draws)")
def test_simplified_qcp_settles_at_c_over_n_after_flows_join():
    """What eq. (14) promises and the fluid model shows: from 12 s on N_hat = C / R within 5 % of 4
    in every run. At packet level R keeps swinging in most runs after the join's losses. A
    candidate reason, not verified here: with d = RTT an interval's packets were sent at the rate
    of two intervals back, not R(t - d), and log R then follows x(k+2) = x(k+1) - x(k) + c, whose
    roots lie on the unit circle."""
    run = _four_flows_joining()
    late = run.sample_time.values > 12.0
    assert np.all(np.abs(run.qcp_flow_estimate.values[:, late, 0] / 4.0 - 1) < 0.05)


@pytest.mark.parametrize("kwargs, field", [({"alpha": 0.0}, "alpha"), ({"beta": -1.0}, "beta"),
                                           ({"interval_s": 0.0}, "interval"), ({"variant": "fast"}, "variant"),
                                           ({"min_rto_s": 0.0}, "min_rto")])
def test_bad_qcp_settings_name_the_field(kwargs, field):
    with pytest.raises(ParameterError, match=field):
        QCP(**kwargs)
