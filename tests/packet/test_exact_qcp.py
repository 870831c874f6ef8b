"""QCP on the exact engine: with the default gain it settles after flows join, on one link (both
variants) and on the iXCP paper's two-link network (scaled down) at the fluid model's rates; the
paper's literal update (gain 1) keeps swinging; bad settings are named."""

import functools

import numpy as np
import pytest

from fluidcc.errors import ParameterError
from fluidcc.network import Flow, Link, Network
from fluidcc.packet import simulate_exact
from fluidcc.packet.exact_protocols import QCP
from fluidcc.packet.workloads import FlowTable
from fluidcc.runs import simulate_network

ONE_LINK = Network((Link("l", 1000.0, 0.05),), (Flow("f", ("l",)),))
#: three flows join a long one at once (three offsets of the join: three runs)
JOINS = [FlowTable([0.0, t, t, t], np.full(4, np.inf)) for t in (5.0, 5.013, 5.037)]


@functools.lru_cache(maxsize=None)
def _joining(variant: str, gain: float):
    return simulate_exact(ONE_LINK, QCP(variant=variant, gain=gain), JOINS, duration_s=16.0, sample_s=0.25,
                          seeds=[0, 1, 2])


@pytest.mark.parametrize("variant", ["exact", "simplified"])
def test_qcp_settles_at_c_over_n_after_flows_join(variant):
    """Four flows on 1000 packets/s, RTPD 100 ms, three joining at once at the first one's rate C
    (a burst that overflows the buffer): from 11 s on the router counts 4 flows within 5 % and
    offers C / 4 within 5 %, the link stays full and nothing is dropped."""
    run = _joining(variant, 0.25)
    assert np.all(run.status.values == 0)
    late = run.sample_time.values > 11.0
    assert np.all(np.abs(run.qcp_flow_estimate_series.values[:, late, 0] / 4.0 - 1.0) < 0.05)
    assert np.all(np.abs(run.qcp_rate_series.values[:, late, 0] / 250.0 - 1.0) < 0.05)
    assert np.all(run.served.values[:, late, 0].sum(axis=1) / (1000.0 * 0.25 * late.sum()) > 0.97)
    assert run.drops.values[:, late].sum() == 0
    assert np.all(run.sent.values == run.delivered.values + run.dropped.values + run.in_flight.values)


def test_the_papers_literal_update_keeps_swinging():
    """Gain 1 (R jumps to eq. (4)'s value every interval): long after the join the offered rate still
    spans more than a factor 10 in every run and the link keeps dropping (the marginal loop of the
    module docstring)."""
    run = _joining("exact", 1.0)
    late = run.sample_time.values > 11.0
    rate = run.qcp_rate_series.values[:, late, 0]
    assert np.all(rate.max(axis=1) / rate.min(axis=1) > 10.0)
    assert np.all(run.drops.values[:, late, 0].sum(axis=1) > 100)


def test_qcp_on_two_links_settles_at_the_fluid_models_rates():
    """The iXCP paper's Fig. 1 network scaled down (1550 and 1000 packets/s, 20 ms each): one flow
    on the first link, four across both, starting 0.25 s apart. The fluid model settles at the
    max-min rates (550 and 250); the packet run's per-flow rates from 6 s on are within 5 % of the
    fluid model's, and at most 0.1 % of the packets are dropped then."""
    c1, c2 = 1550.0, 1000.0
    starts = [0.0, 0.0, 0.25, 0.5, 0.75]
    network = Network((Link("l1", c1, 0.02), Link("l2", c2, 0.02)),
                      (Flow("short", ("l1",)),
                       *(Flow(f"long{k}", ("l1", "l2"), start_s=starts[k + 1]) for k in range(4))))
    table = FlowTable(np.array(starts), np.full(5, np.inf), route=np.arange(5))
    run = simulate_exact(network, QCP(), table, duration_s=10.0, sample_s=0.5).isel(run=0)
    assert int(run.status) == 0
    fluid = simulate_network("qcp", network, duration_s=10.0)
    expected = fluid.rate.values[-1]
    assert expected == pytest.approx([c1 - c2] + [c2 / 4] * 4, rel=0.01)  # the fluid model has settled
    late = run.sample_time.values > 6.0
    seconds = 0.5 * late.sum()
    y1 = run.accepted.sel(link="l1").values[late].sum() / seconds
    y2 = run.accepted.sel(link="l2").values[late].sum() / seconds
    assert y1 - y2 == pytest.approx(expected[0], rel=0.05)  # the short flow: what l1 carries beyond l2
    assert y2 / 4 == pytest.approx(expected[1:].mean(), rel=0.05)  # the long flows, on average
    assert run.drops.values[late].sum() <= 0.001 * run.accepted.values[late].sum()


@pytest.mark.parametrize("kwargs, field", [({"alpha": 0.0}, "alpha"), ({"beta": -1.0}, "beta"),
                                           ({"interval_s": 0.0}, "interval"), ({"variant": "fast"}, "variant"),
                                           ({"min_rto_s": float("nan")}, "min_rto"), ({"gain": 1.5}, "gain"),
                                           ({"gain": 0.0}, "gain")])
def test_bad_qcp_settings_name_the_field(kwargs, field):
    with pytest.raises(ParameterError, match=field):
        QCP(**kwargs)
