"""Flow completion times under Poisson arrivals of Pareto flows (RCP paper, section 3): RCP against
processor sharing, TCP's short flows against slow start.

One 40 Mb/s link (5000 packets/s), RTPD 100 ms, buffer one BDP, 30 s of arrivals (seed 1),
Pareto sizes of shape 1.2 and mean 25 packets, slots of five packet times. The issue's
criterion: in every size bin (powers of two) with at least 200 finished flows, RCP's AFCT within
15 % of PS, FCT_PS = 1.5 RTPD + L / (C (1 - rho)) (RCP paper, eq. (3)).
"""

from __future__ import annotations

import numpy as np
import pytest

from fluidcc.network import Flow, Link, Network
from fluidcc.packet import simulate
from fluidcc.packet.metrics import afct_by_size, slow_start_fct
from fluidcc.packet.protocols import RCP, TCP
from fluidcc.packet.workloads import Pareto, PoissonArrivals

CAPACITY, RTPD, ARRIVALS = 5000.0, 0.1, 30.0


def _run(protocol, load):
    network = Network((Link("l", CAPACITY, RTPD / 2),), (Flow("f", ("l",)),))
    flows = PoissonArrivals.for_load(load, Pareto(1.2, 25.0), CAPACITY, duration_s=ARRIVALS, seed=1).table()
    run = simulate(network, protocol, flows, duration_s=ARRIVALS + 20.0, slot_s=5 / CAPACITY, sample_s=1.0)
    frame = afct_by_size(flows.size_packets, run.fct.values[0], min_flows=200, capacity_pps=CAPACITY, load=load,
                         rtpd_s=RTPD)
    return run, frame[frame.enough]


@pytest.mark.slow
@pytest.mark.parametrize("load", [0.5, 0.9])
def test_rcp_afct_is_within_15_percent_of_processor_sharing(load):
    run, bins = _run(RCP(), load)
    assert len(bins) >= 3  # [4, 8), [8, 16), [16, 32) at least
    assert not np.any(np.isnan(run.fct.values)) and int(run.dropped.sum()) == 0
    ratio = (bins.afct_s / bins.ps_afct_s).to_numpy()
    assert np.all(np.abs(ratio - 1) <= 0.15), bins


@pytest.mark.slow
def test_tcp_short_flows_follow_slow_start():
    """At rho = 0.5 the queue stays short, and TCP's short flows that lose no packet take their slow
    start's time: in every bin with 200 such flows, their AFCT within 15 % of the mean of their own
    slow-start curves, [ceil(log2(L/2 + 1)) + 1/2] RTPD + L/C (above it: some queueing). Each flow
    against its own curve: the curve at a bin's mean size misses that ceil(log2) steps up inside
    the bin (a flow of 7 packets needs three rounds, one of 5.8 two), which made the smallest bin
    look 8-10 % slower than it is. A short flow that loses a packet cannot collect three duplicate
    ACKs and waits for its retransmission timeout, which the curve does not describe (1-3 % of the
    flows here, depending on the links' random draws)."""
    run, _ = _run(TCP(), 0.5)
    lossless = run.dropped.values[0] == 0
    assert 0.9 < lossless.mean() < 1.0  # drops happen, to a few flows
    sizes = PoissonArrivals.for_load(0.5, Pareto(1.2, 25.0), CAPACITY, duration_s=ARRIVALS, seed=1).table().size_packets
    fct = np.where(lossless, run.fct.values[0], np.nan)
    frame = afct_by_size(sizes, fct, min_flows=200)
    curve = afct_by_size(sizes, np.where(np.isfinite(fct), slow_start_fct(sizes, RTPD, CAPACITY), np.nan), min_flows=200)
    enough = frame.enough.to_numpy()
    assert enough.sum() >= 3
    ratio = frame.afct_s.to_numpy()[enough] / curve.afct_s.to_numpy()[enough]
    assert np.all((ratio >= 0.95) & (ratio <= 1.15)), ratio
