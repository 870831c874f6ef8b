"""The links' vectorized pass: where a protocol has no routers, a link's round of packets is taken
in one pass (FIFO departures as a scan, receivers updated at once where their data come in
order or extend the highest run they hold), and every output must be what the event-by-event
pass gives: the same packets at the same times, the same counts, series and finish times."""

from __future__ import annotations

import math

import jax.numpy as jnp
import numpy as np
import pytest

from fluidcc.network import Flow, Link, Network
from fluidcc.packet import _run_exact, exact, simulate_exact
from fluidcc.packet.exact import TIME_GRID_S, Plan, fifo_links
from fluidcc.packet.exact_protocols import RCP, TCP
from fluidcc.packet.workloads import FlowTable, Pareto, PoissonArrivals

C = 2000.0  # packets/s


def bottleneck(buffer: int = 15, capacity: float = C, **link) -> Network:
    return Network((Link("b", capacity, 0.02, buffer_packets=buffer, **link),),
                   (Flow("f", ("b",), access_delay_s=1e-5, interface_pps=20 * C),))


def two_way(schedule=None) -> Network:
    """A - B - C with both directions as links: data of each direction queue with the other's ACKs."""
    scheduled = {} if schedule is None else {"bc": {"schedule": schedule}}
    links = tuple(Link(name, C, delay, buffer_packets=12, source=name[0].upper(), target=name[1].upper(),
                       **scheduled.get(name, {}))
                  for name, delay in (("ab", 0.011), ("bc", 0.013), ("cb", 0.013), ("ba", 0.011)))
    routes = {"east": ("ab", "bc"), "west": ("cb", "ba"), "east2": ("bc",)}
    return Network(links, tuple(Flow(name, route, access_delay_s=1e-5, interface_pps=20 * C)
                                for name, route in routes.items()))


class TCPThatSumsItsACKs(TCP):
    """TCP that also sums, per flow, what its ACKs carry (the cumulative ACK and the echoed
    timestamp, of duplicate ACKs too, which TCP itself does not time by): the ACKs' contents are
    then outputs."""

    def init(self, params, flows, key):
        n = flows.start.shape[0]
        return {**super().init(params, flows, key), "ack_sum": jnp.zeros(n, jnp.int32), "echo_sum": jnp.zeros(n)}

    def on_ack(self, s, params, flows, now, mask, ack):
        out = super().on_ack(s, params, flows, now, mask, ack)
        return {**out, "ack_sum": s["ack_sum"] + jnp.where(mask, ack.ack_no, 0),
                "echo_sum": s["echo_sum"] + jnp.where(mask, ack.echo, 0.0)}

    def report(self, state) -> dict:
        return {**super().report(state), "ack_sum": state["ack_sum"], "echo_sum": state["echo_sum"]}


def both_passes(monkeypatch, *args, **kwargs):
    """(the run with the vectorized pass where it applies, the run with every link event by event).
    The links are put back to their own pass on return (a test may call this again), and the first
    run is checked to have taken some rounds in one pass, the second none."""
    with monkeypatch.context() as patch:
        patch.setattr(_run_exact, "_CACHE", {})
        vector = simulate_exact(*args, **kwargs)
        patch.setattr(exact, "fifo_links", lambda protocol, plan, end_s: (False,) * plan.n_links)
        patch.setattr(_run_exact, "_CACHE", {})
        events = simulate_exact(*args, **kwargs)
    assert int(vector.work_link_passes.sum()) > 0 and int(events.work_link_passes.sum()) == 0
    return vector, events


def assert_identical(a, b):
    assert set(a.data_vars) == set(b.data_vars)
    for name in a.data_vars:
        if name == "wall_s" or name.startswith("work_") and name != "work_link_iterations":
            continue  # how the engine went about it (rounds, iterations of its loops), not what it did
        x, y = a[name].values, b[name].values
        if x.dtype.kind in "fc":
            np.testing.assert_array_equal(x, y, err_msg=name)  # NaN == NaN here
        else:
            assert (x == y).all(), name


def test_short_flows_with_losses_are_the_same_in_both_passes(monkeypatch, conserved):
    """Handshakes, drops, data held out of order and its repair, duplicates, flows that finish,
    the ACKs' contents, a link busy at the end (its busy time counted up to the end)."""
    network = bottleneck()
    table = PoissonArrivals.for_load(0.95, Pareto(1.2, 12.0), C, duration_s=3.0, seed=11).table()
    tcp = TCPThatSumsItsACKs(initial_window=4)
    plan = Plan.build(network, table.route, tcp.ack_bytes)
    assert fifo_links(tcp, plan, 3.0) == (True,)
    vector, events = both_passes(monkeypatch, network, tcp, table, duration_s=3.0)
    assert_identical(vector, events)
    run = vector.isel(run=0)
    assert int(run.status) == 0 and int(run.dropped.sum()) > 20 and int(run.duplicates.sum()) > 0
    assert int(run.receiver_runs_peak) > 1 and np.isfinite(run.fct.values).mean() > 0.8
    assert float(run.echo_sum.sum()) > 0 and int(run.in_flight.sum()) > 0
    conserved(vector)


@pytest.mark.parametrize("window", [1, 3])
def test_the_admission_s_window_changes_no_output(monkeypatch, window):
    """A pass of a round's admission ends at its first drop or after `ADMISSION_WINDOW` packets:
    with windows of 1 and 3 packets (passes end inside every burst of drops and between them), the
    short flows with losses of the test above give the engine's outputs at its own window, only in
    more passes. (Each window is a program to compile: one of a whole chunk, one pass per drop, was
    also the same when the windows came in.)"""
    network = bottleneck()
    table = PoissonArrivals.for_load(0.95, Pareto(1.2, 12.0), C, duration_s=3.0, seed=11).table()
    tcp = TCPThatSumsItsACKs(initial_window=4)
    monkeypatch.setattr(_run_exact, "_CACHE", {})
    own = simulate_exact(network, tcp, table, duration_s=3.0)
    with monkeypatch.context() as patch:
        patch.setattr(exact, "ADMISSION_WINDOW", window)
        patch.setattr(_run_exact, "_CACHE", {})
        other = simulate_exact(network, tcp, table, duration_s=3.0)
    assert_identical(own, other)
    drops = int(own.link_dropped.sum())
    assert drops > 20 and int(other.work_link_passes.sum()) >= drops
    if window == 1:  # a pass per packet
        assert int(other.work_link_passes.sum()) == int(other.work_link_iterations.sum())


def test_long_flows_in_both_directions_are_the_same_in_both_passes(monkeypatch, conserved):
    """Data over two links, ACKs through links, a run that ends with packets in flight; and with
    a capacity schedule on one link (that link event by event, the others in one pass)."""
    table = FlowTable(np.array([0.0, 0.02, 0.1]), np.full(3, np.inf), route=np.arange(3))
    for schedule in (None, ((0.6, C / 2), (1.3, C))):
        network = two_way(schedule)
        plan = Plan.build(network, table.route, TCP().ack_bytes)
        assert fifo_links(TCP(), plan, 1.8) == ((True,) * 4 if schedule is None else (True, False, True, True))
        vector, events = both_passes(monkeypatch, network, TCP(), table, duration_s=1.8, step_s=0.005)
        assert_identical(vector, events)
        run = vector.isel(run=0)
        assert int(run.link_accepted.sel(link="ba")) > int(run.link_data_accepted.sel(link="ba")) > 0
        assert int(run.dropped.sum()) > 0 and int(run.in_flight.sum()) > 0
        conserved(vector)


def test_a_vmapped_batch_is_the_same_in_both_passes(monkeypatch):
    network = bottleneck(buffer=10)
    tables = [PoissonArrivals.for_load(0.9, Pareto(1.2, 10.0), C, duration_s=1.5, seed=s).table() for s in (1, 2)]
    vector, events = both_passes(monkeypatch, network, TCP(initial_window=4), tables, duration_s=2.0, seeds=[1, 2],
                                 batch="vmap")
    assert_identical(vector, events)
    assert (vector.status.values == 0).all() and int(vector.dropped.sum()) > 0


def test_which_links_take_the_vectorized_pass():
    tcp = TCP()
    plain = bottleneck()
    plan = Plan.build(plain, np.zeros(1, int), tcp.ack_bytes)
    assert fifo_links(tcp, plan, 10.0) == (True,)
    assert fifo_links(RCP(), plan, 10.0) == (False,)  # routers read and write each packet's header
    assert fifo_links(tcp, plan, 2000.0) == (False,)  # departures past FIFO_HORIZON_S
    scheduled = bottleneck(schedule=((1.0, C / 2),))
    assert fifo_links(tcp, Plan.build(scheduled, np.zeros(1, int), tcp.ack_bytes), 10.0) == (False,)
    # a capacity whose data packet takes 1000.5 steps of the time grid: the sum of a time and
    # that service, rounded to the grid, may go either way; the event-by-event pass does it
    bytes_ = plain.packet_bytes
    halfway = bottleneck(capacity=bytes_ / (1000.5 * TIME_GRID_S) / bytes_)
    halfway_plan = Plan.build(halfway, np.zeros(1, int), tcp.ack_bytes)
    service = bytes_ / halfway_plan.capacity_Bps[0, 0] / TIME_GRID_S
    assert abs(service - math.floor(service) - 0.5) < exact.FIFO_MARGIN
    assert fifo_links(tcp, halfway_plan, 1e-3) == (False,)


@pytest.mark.parametrize("protocol", [RCP()])
def test_routers_keep_the_event_by_event_pass(protocol):
    plan = Plan.build(two_way(), np.arange(3), protocol.ack_bytes)
    assert fifo_links(protocol, plan, 1.0) == (False,) * 4
