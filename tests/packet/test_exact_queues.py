"""The exact engine: queues that match queueing theory, capacity schedules, headers that routers
write and ACKs bring back."""

from __future__ import annotations

from dataclasses import dataclass

import jax.numpy as jnp
import numpy as np
import pytest

from fluidcc.network import Flow, Link, Network
from fluidcc.packet._run_exact import simulate_exact
from fluidcc.packet.exact import DATA, ExactProtocol, Packet
from fluidcc.packet.exact_protocols import OpenLoop
from fluidcc.packet.workloads import FlowTable, read_trace, write_trace

def test_poisson_packets_make_the_md1_queue(conserved):
    """M/D/1: mean number waiting rho^2 / (2 (1 - rho)) (Pollaczek-Khinchine)."""
    rho, capacity = 0.5, 1000.0
    network = Network((Link("l", capacity, 0.01, buffer_packets=200),), (Flow("f", ("l",)),))
    run = simulate_exact(network, OpenLoop("poisson", rho * capacity), duration_s=40.0, seeds=[0, 1],
                         pool_size=256)
    assert (run.status == 0).all()
    expected = rho**2 / (2 * (1 - rho))
    assert float(run.queue_mean.mean()) == pytest.approx(expected, rel=0.1)
    assert float(run.busy.mean()) == pytest.approx(rho, rel=0.02)
    assert int(run.link_dropped.sum()) == 0
    conserved(run)


def test_busy_counts_service_up_to_the_end_only():
    """Constant packets at 2 C into a link with room for them all: it is busy from the first
    arrival to the end, whatever is still queued then (a fraction of the run, at most 1)."""
    capacity = 1000.0
    network = Network((Link("l", capacity, 0.005, buffer_packets=5000),), (Flow("f", ("l",)),))
    run = simulate_exact(network, OpenLoop("constant", 2 * capacity), duration_s=2.0, pool_size=4096).isel(run=0)
    assert int(run.status) == 0 and float(run.queue.values[-1, 0]) > 500  # a standing queue at the end
    first = float(run.first_sent.values[0])
    assert float(run.busy.values[0]) == pytest.approx((2.0 - first) / 2.0, abs=1e-3)


def test_a_capacity_switch_changes_the_service_rate_at_its_time(conserved):
    """Constant packets at 1.5 C into a link whose capacity doubles at 1 s: until then the link
    serves C per second and the queue grows by 0.5 C per second; after, it drains."""
    capacity = 1000.0
    link = Link("l", capacity, 0.005, buffer_packets=1000, schedule=((1.0, 2 * capacity),))
    network = Network((link,), (Flow("f", ("l",)),))
    run = simulate_exact(network, OpenLoop("constant", 1.5 * capacity), duration_s=2.0, sample_s=0.25,
                         pool_size=1024).isel(run=0)
    assert int(run.status) == 0
    served = run.served.values[:, 0]
    np.testing.assert_allclose(served[:4], 0.25 * capacity, atol=1.0)  # one packet may straddle a sample
    np.testing.assert_allclose(served[4:6], 0.25 * 2 * capacity, atol=1.0)  # the backlog drains at 2C
    queue = run.queue.values[:, 0]
    assert queue[3] == pytest.approx(0.5 * capacity * 0.875, rel=0.02)  # mean of the growing queue in [0.75, 1)
    assert queue[-1] == pytest.approx(0.5 * capacity * 0.125, rel=0.02)  # 500 packets drain at 0.5 C per s, by 2 s
    assert int(run.link_dropped[0]) == 0
    conserved(run)


@dataclass(frozen=True)
class Stamped(ExactProtocol):
    """A test protocol: constant packets, each link adds its index + 1 times 10 to field 0 and
    counts its packets in field 1; the sender keeps the fields of the last ACK."""

    name = "stamped"
    header_size = 2
    paced = False

    def init(self, params, flows, key):
        n = flows.start.shape[0]
        return {"count": jnp.zeros(n, jnp.int32), "next": flows.start, "due": jnp.zeros(n, bool),
                "seen": jnp.zeros((n, 2))}

    def next_time(self, s, params, flows):
        return jnp.where((s["count"] < flows.size) & ~s["due"], s["next"], jnp.inf)

    def on_time(self, s, params, flows, now, mask):
        return {**s, "due": s["due"] | mask}

    def on_ack(self, s, params, flows, now, mask, ack):
        return {**s, "seen": jnp.where(mask[:, None], ack.header, s["seen"])}

    def ready(self, s, params, flows, now):
        return s["due"]

    def send(self, s, params, flows, now, mask):
        packet = Packet(kind=jnp.full(mask.shape, DATA, jnp.int32), seq=s["count"], header=jnp.zeros((mask.shape[0], 2)))
        return {**s, "count": s["count"] + mask, "due": s["due"] & ~mask,
                "next": jnp.where(mask, s["next"] + 0.01, s["next"])}, packet

    def router_init(self, params, n_links):
        return {"count": jnp.zeros(n_links)}

    def router_packet(self, router, params, link, now, kind, header, waiting, accepted):
        count = router["count"].at[link].add(jnp.where(accepted, 1.0, 0.0))
        return {"count": count}, header.at[0].add(10.0 * (link + 1)).at[1].set(count[link])

    def report(self, state):
        return {"seen_0": state["seen"][..., 0], "seen_1": state["seen"][..., 1]}


def test_routers_write_headers_that_come_back_in_the_acks():
    links = (Link("x", 1000.0, 0.01), Link("y", 1000.0, 0.01))
    network = Network(links, (Flow("f", ("x", "y")),))
    run = simulate_exact(network, Stamped(), FlowTable(np.zeros(1), np.array([7.0])), duration_s=1.0,
                         pool_size=64).isel(run=0)
    assert float(run.seen_0[0]) == 10.0 + 20.0  # both links wrote the field
    assert float(run.seen_1[0]) == 7.0  # the last link's count of the flow's 7 packets, echoed by the receiver
    assert int(run.delivered[0]) == 7 and int(run.acks_received[0]) == 7


def test_a_trace_is_replayed_flow_for_flow_at_its_exact_times(tmp_path):
    network = Network((Link("l", 1000.0, 0.005, buffer_packets=1000),), (Flow("f", ("l",)),))
    table = FlowTable(np.array([0.1, 0.2003, 0.5]), np.array([5.0, 3.0, 4.0]))
    path = write_trace(table, tmp_path / "flows.csv", network)
    run = simulate_exact(network, OpenLoop("constant", 1500.0), read_trace(path, network), duration_s=1.0,
                         pool_size=64).isel(run=0)
    # at the trace's times, on the engine's time grid (2^-32 s, about 0.23 ns): not moved to a slot
    grid = 2.0 ** -32
    np.testing.assert_array_equal(run.first_sent.values, np.ceil(np.array([0.1, 0.2003, 0.5]) / grid) * grid)
    np.testing.assert_array_equal(run.delivered.values, [5, 3, 4])
    assert np.all(np.isfinite(run.fct.values))
