"""QCP on the packet engine: the simplified rate of eq. (14) settles at alpha C / N; bad input."""

from __future__ import annotations

import numpy as np
import pytest

from fluidcc.errors import ParameterError
from fluidcc.network import Flow, Link, Network
from fluidcc.packet import simulate
from fluidcc.packet.protocols import QCP
from fluidcc.packet.workloads import FlowTable


def test_simplified_qcp_counts_the_flows_and_shares_the_link_in_most_runs():
    """Four flows on 1000 packets/s, RTPD 100 ms, eight seeds. The three flows that start at 5 s
    open at the rate the first one had, C, overflow the buffer and repair their losses; eq. (14)
    then brings N_hat = C / R to 4 in most runs: in at least 5 of the 8, from 12 s on, N_hat stays
    within 5 % of 4, the link is full and the flows' throughputs over the run are within 10 % of
    one another. Not in every run: after some start-up transients R keeps swinging to the end
    (measured: 2 of these 8 seeds; which start-ups do that depends on the order of service the
    links draw, so a single seed is not a fair test). A candidate reason, not verified here: with
    d = RTT the packets of an interval were sent at the rate of two intervals back, not R(t - d),
    and log R then follows x(k+2) = x(k+1) - x(k) + c, whose roots lie on the unit circle.
    Conservation holds in every run."""
    network = Network((Link("l", 1000.0, 0.05),), (Flow("f", ("l",)),))
    flows = FlowTable([0.0, 5.0, 5.0, 5.0], np.full(4, np.inf))
    run = simulate(network, QCP(variant="simplified"), flows, duration_s=20.0, slot_s=1e-3, sample_s=0.5,
                   seeds=list(range(8)))
    late = run.sample_time.values > 12.0
    estimate = run.qcp_flow_estimate.values[:, late, 0]
    counted = np.all(np.abs(estimate / 4.0 - 1) < 0.05, axis=1)
    full = run.served.values[:, late, 0].sum(axis=1) / (1000.0 * 0.5 * late.sum()) > 0.97
    last = run.received.values[:, 1:]
    fair = last.max(axis=1) / last.min(axis=1) < 1.1
    assert np.sum(counted & full & fair) >= 5, (counted, full, fair)
    sent, delivered, dropped, in_flight = (run[v].values for v in ("sent", "delivered", "dropped", "in_flight"))
    assert np.all(sent == delivered + dropped + in_flight)


@pytest.mark.parametrize("kwargs, field", [({"alpha": 0.0}, "alpha"), ({"beta": -1.0}, "beta"),
                                           ({"interval_s": 0.0}, "interval"), ({"variant": "fast"}, "variant"),
                                           ({"min_rto_s": 0.0}, "min_rto")])
def test_bad_qcp_settings_name_the_field(kwargs, field):
    with pytest.raises(ParameterError, match=field):
        QCP(**kwargs)
