"""QCP on the packet engine: the simplified rate of eq. (14) settles at alpha C / N; bad input."""

from __future__ import annotations

import numpy as np
import pytest

from fluidcc.errors import ParameterError
from fluidcc.network import Flow, Link, Network
from fluidcc.packet import simulate
from fluidcc.packet.protocols import QCP
from fluidcc.packet.workloads import FlowTable


def test_simplified_qcp_counts_the_flows_and_shares_the_link():
    """Four flows on 1000 packets/s, RTPD 100 ms: from 10 s on N_hat = C / R is within 5 % of 4,
    the link is full and the flows' throughputs over the run are within 10 % of one another. (The
    three flows that start at 5 s open at the rate the first one had, C, and overflow the buffer;
    every flow repairs its losses, and R settles by 9.5 s. With the engine's former rule, which
    put a slot's drops on one or two flows, it settled before 8 s.)"""
    network = Network((Link("l", 1000.0, 0.05),), (Flow("f", ("l",)),))
    flows = FlowTable([0.0, 5.0, 5.0, 5.0], np.full(4, np.inf))
    run = simulate(network, QCP(variant="simplified"), flows, duration_s=20.0, slot_s=1e-3, sample_s=0.5)
    late = run.sample_time.values > 10.0
    estimate = run.qcp_flow_estimate.values[0, late, 0]
    assert np.all(np.abs(estimate / 4.0 - 1) < 0.05), estimate
    assert run.served.values[0, late, 0].sum() / (1000.0 * 0.5 * late.sum()) > 0.97
    last = run.received.values[0, 1:]
    assert last.max() / last.min() < 1.1
    sent, delivered, dropped, in_flight = (run[v].values for v in ("sent", "delivered", "dropped", "in_flight"))
    assert np.all(sent == delivered + dropped + in_flight)


@pytest.mark.parametrize("kwargs, field", [({"alpha": 0.0}, "alpha"), ({"beta": -1.0}, "beta"),
                                           ({"interval_s": 0.0}, "interval"), ({"variant": "fast"}, "variant"),
                                           ({"min_rto_s": 0.0}, "min_rto")])
def test_bad_qcp_settings_name_the_field(kwargs, field):
    with pytest.raises(ParameterError, match=field):
        QCP(**kwargs)
