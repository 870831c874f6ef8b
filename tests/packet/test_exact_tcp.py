"""The exact engine's TCP against ns-3.37's rules, rule by rule where a run would hide the rule."""

from __future__ import annotations

import dataclasses
import math
import types

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from fluidcc.errors import ParameterError

from fluidcc.network import Flow, Link, Network
from fluidcc.packet import _run_exact, exact, simulate_exact
from fluidcc.packet.exact import ACK, Ack, Flows, Receivers, _receive_one
from fluidcc.packet.exact_protocols import IXCP, TCP, XCP
from fluidcc.packet.exact_protocols.tcp import LOSS, OPEN, RECOVERY, TCPParams
from fluidcc.packet.workloads import FlowTable

SEGMENT = 1000.0


def _params() -> TCPParams:
    return TCPParams(segment=jnp.asarray(SEGMENT), initial_window=jnp.asarray(2 * SEGMENT), min_rto=jnp.asarray(0.2),
                     max_rto=jnp.asarray(60.0), initial_rto=jnp.asarray(1.0), syn_timeout=jnp.asarray(3.0),
                     granularity=jnp.asarray(0.001), receive_window=jnp.asarray(1e18),
                     limited_transmit=jnp.asarray(True), handshake_ack=jnp.asarray(True))


def test_every_expiry_lowers_ssthresh_and_only_entering_loss_is_a_timeout():
    """Three established flows whose timers expire at t = 5 s: one in OPEN with 40 segments out,
    one in RECOVERY, one in LOSS that has sent 8 segments again since going back. ns-3.37's
    ReTxTimeout would keep ssthresh in LOSS with the head sent again, but it asks after
    SetSentListLost has cleared that mark, so every expiry lowers it (ns-3's own trace on the
    two-link network: ssthresh 4 segments after a second expiry with 8 in flight). Its CongState
    trace, what ns-3 counts as timeouts, fires only on entering LOSS."""
    tcp, params = TCP(), _params()
    flows = Flows(start=jnp.zeros(3), stop=jnp.full(3, jnp.inf), size=jnp.full(3, jnp.inf))
    s = tcp.init(params, flows, None)
    s = {**s, "phase": jnp.full(3, 2), "state": jnp.array([OPEN, RECOVERY, LOSS]),
         "snd_una": jnp.array([100, 100, 100]), "snd_nxt": jnp.array([140, 140, 108]),
         "high_tx": jnp.array([140, 140, 140]), "sacked": jnp.array([0, 10, 0]),
         "ssthresh": jnp.array([1e18, 20 * SEGMENT, 15 * SEGMENT]), "cwnd": jnp.array([40 * SEGMENT, 20 * SEGMENT, 3 * SEGMENT]),
         "timer": jnp.full(3, 5.0), "rto": jnp.full(3, 0.4)}
    after = tcp.on_time(s, params, flows, jnp.asarray(5.0), jnp.ones(3, bool))
    np.testing.assert_array_equal(np.asarray(after["state"]), [LOSS, LOSS, LOSS])
    np.testing.assert_array_equal(np.asarray(after["cwnd"]), [SEGMENT] * 3)
    # OPEN: half of 40 in flight; RECOVERY: half of (40 - 10 guesses); LOSS: half of the 8 sent again
    np.testing.assert_array_equal(np.asarray(after["ssthresh"]), [20 * SEGMENT, 15 * SEGMENT, 4 * SEGMENT])
    np.testing.assert_array_equal(np.asarray(after["timeouts"]), [1, 1, 0])
    np.testing.assert_array_equal(np.asarray(after["rto_expiries"]), [1, 1, 1])
    np.testing.assert_allclose(np.asarray(after["rto"]), [0.8, 0.8, 0.8])


def test_a_long_capacity_dip_makes_the_timer_expire_again_in_loss():
    """A lone flow whose link slows to 2 packets/s for 3 s: its retransmission waits behind the
    queue longer than the doubled RTO, so the timer expires again before the flow leaves LOSS.
    Those expiries are counted apart; `timeouts` counts the entries into LOSS, as ns-3 does."""
    network = Network((Link("l", 1000.0, 0.05, buffer_packets=20, schedule=((2.0, 2.0), (5.0, 1000.0))),),
                      (Flow("f", ("l",), interface_pps=1e4),))
    run = simulate_exact(network, TCP(), FlowTable(np.array([0.0]), np.array([np.inf])),
                         duration_s=10.0).isel(run=0, flow=0)
    assert int(run.status) == 0, str(run.message.values)
    assert int(run.timeouts) >= 1 and int(run.rto_expiries) > int(run.timeouts)
    assert int(run.sent) == int(run.delivered) + int(run.dropped) + int(run.in_flight)


def test_an_ack_of_several_segments_grows_the_window_as_ns3s_increase_window():
    """ns-3.37's NewReno grows cwnd per ACK with the segments it covers: slow start takes one
    (+1 segment) and, if that reaches ssthresh, congestion avoidance adds its increment on the same
    ACK (its trace on the two-link network: 1 -> 2.00 -> 2.50 segments on one ACK of two segments,
    ssthresh 2); the ACK that ends LOSS counts only the segments above recover, so an ACK that
    reaches recover exactly does not grow the window. Four flows, one ACK each:
    OPEN, cwnd 9 of ssthresh 10 segments, an ACK of 3 segments: 10 + 1000/10 bytes' increment;
    OPEN, cwnd 4 of 10, an ACK of 3: slow start only, 5;
    LOSS ending exactly at recover: cwnd stays 3; LOSS ending 2 segments above recover: 4."""
    tcp, params = TCP(), _params()
    flows = Flows(start=jnp.zeros(4), stop=jnp.full(4, jnp.inf), size=jnp.full(4, jnp.inf))
    s = tcp.init(params, flows, None)
    s = {**s, "phase": jnp.full(4, 2), "state": jnp.array([OPEN, OPEN, LOSS, LOSS]),
         "snd_una": jnp.full(4, 100), "snd_nxt": jnp.full(4, 120), "high_tx": jnp.full(4, 120),
         "recover": jnp.array([0, 0, 110, 110]), "recover_active": jnp.array([False, False, True, True]),
         "retx_hi": jnp.full(4, 200),  # no RTT sample: the RTO is not what this test is about
         "ssthresh": jnp.array([10, 10, 20, 20]) * SEGMENT, "cwnd": jnp.array([9, 4, 3, 3]) * SEGMENT,
         "timer": jnp.full(4, 9.0), "rto": jnp.full(4, 0.4)}
    ack = Ack(kind=jnp.full(4, ACK), ack_no=jnp.array([103, 103, 110, 112]), echo=jnp.zeros(4),
              header=jnp.zeros((4, 0)))
    after = tcp.on_ack(s, params, flows, jnp.asarray(1.0), jnp.ones(4, bool), ack)
    np.testing.assert_array_equal(np.asarray(after["cwnd"]),
                                  [10 * SEGMENT + 100.0, 5 * SEGMENT, 3 * SEGMENT, 4 * SEGMENT])
    np.testing.assert_array_equal(np.asarray(after["state"]), [OPEN, OPEN, OPEN, OPEN])


def test_the_window_counts_in_the_mss_not_the_packet():
    """ns-3 keeps cwnd in bytes of payload, and NewReno's avoidance increment is floor(MSS^2 / cwnd)
    bytes per ACK, so the MSS itself shapes the growth, not only cwnd in segments. With ns-3's
    948-byte MSS (a 1000-byte packet less 52 bytes of headers) and cwnd = 20 segments, an ACK adds
    floor(948 * 948 / 18 960) = 47 bytes, 4.96 % of a segment; counted in 1000-byte segments the
    same window would add 50 bytes, 5 %. With cwnd = 33 segments: floor(948 / 33) = 28 against
    floor(1000 / 33) = 30 bytes per segment of window, 0.975 and 0.990 segments per round trip. The
    initial window and ssthresh count in the MSS too."""
    network = Network((Link("l", 1000.0, 0.05),), (Flow("f", ("l",)),))
    tcp = TCP(mss_bytes=948)
    params = tcp.params(network, None, None)
    assert float(params.segment) == 948.0 and float(params.initial_window) == 2 * 948.0
    assert float(TCP().params(network, None, None).segment) == network.packet_bytes  # the default
    flows = Flows(start=jnp.zeros(2), stop=jnp.full(2, jnp.inf), size=jnp.full(2, jnp.inf))
    s = tcp.init(params, flows, None)
    s = {**s, "phase": jnp.full(2, 2), "state": jnp.array([OPEN, OPEN]),
         "snd_una": jnp.full(2, 100), "snd_nxt": jnp.full(2, 140), "high_tx": jnp.full(2, 140),
         "retx_hi": jnp.full(2, 200), "ssthresh": jnp.array([10.0, 10.0]) * 948,
         "cwnd": jnp.array([20.0, 33.0]) * 948, "timer": jnp.full(2, 9.0), "rto": jnp.full(2, 0.4)}
    ack = Ack(kind=jnp.full(2, ACK), ack_no=jnp.full(2, 101), echo=jnp.zeros(2), header=jnp.zeros((2, 0)))
    after = tcp.on_ack(s, params, flows, jnp.asarray(1.0), jnp.ones(2, bool), ack)
    np.testing.assert_array_equal(np.asarray(after["cwnd"]), [20 * 948 + 47, 33 * 948 + 28])
    # the same windows counted in 1000-byte segments grow by other fractions of a segment
    wide = TCP().params(network, None, None)
    s1000 = {**s, "ssthresh": jnp.array([10.0, 10.0]) * 1000, "cwnd": jnp.array([20.0, 33.0]) * 1000}
    np.testing.assert_array_equal(np.asarray(TCP().on_ack(s1000, wide, flows, jnp.asarray(1.0), jnp.ones(2, bool),
                                                          ack)["cwnd"]), [20 * 1000 + 50, 33 * 1000 + 30])


@pytest.mark.parametrize("bad", [0, 0.5, 947.5, -948, math.nan, math.inf, True, "948"])
def test_a_bad_mss_is_named(bad):
    with pytest.raises(ParameterError, match="mss_bytes"):
        TCP(mss_bytes=bad)


def test_receivers_keep_every_hole_by_default_and_a_store_too_small_grows_or_says_so(monkeypatch):
    """Two flows' slow starts overshoot a 20-packet buffer with a 10x faster interface: packets of
    their last windows are dropped, so each receiver holds runs in its own lane's share of the
    store. By default the store has a place for every packet the links can hold (ns-3 keeps any
    amount) and discards nothing. A default share of 4 places is too small: the store grows (x4,
    each lane's share with it) until no lane discards, and the runs are the same as with room from
    the start; given, the same total discards data and the run's status says so. A bad count is
    named. (Each store size is a program to compile: the given store is the grown one's first.)"""
    network = Network((Link("l", 1000.0, 0.05, buffer_packets=20),), (Flow("f", ("l",), interface_pps=1e4),))
    table = FlowTable(np.array([0.0, 0.01]), np.array([np.inf, np.inf]), route=np.array([0, 0]))
    kept = simulate_exact(network, TCP(), table, duration_s=3.0)
    assert int(kept.status[0]) == 0 and kept.attrs["lanes"] == 2 and int(kept.discarded.sum()) == 0
    assert int(kept.dropped.sum()) > 20
    assert 8 < int(kept.receiver_runs_peak[0]) <= kept.attrs["receiver_runs"]
    monkeypatch.setattr(_run_exact, "receiver_runs_for", lambda plan, lanes=1: 4 * lanes)
    grown = simulate_exact(network, TCP(), table, duration_s=3.0)
    assert grown.attrs["attempts"] >= 2 and grown.attrs["receiver_runs"] >= 4 * 8 and int(grown.status[0]) == 0
    for name in ("sent", "delivered", "dropped", "received", "finish", "receiver_runs_peak"):
        np.testing.assert_array_equal(grown[name].values, kept[name].values)
    few = simulate_exact(network, TCP(), table, duration_s=3.0, receiver_runs=8)
    assert int(few.status[0]) == 4 and int(few.discarded.sum()) > 0
    assert 0 < int(few.receiver_runs_peak[0]) <= 8
    assert "receiver_runs" in str(few.message.values[0])
    for bad in (0, 2.5, True):
        with pytest.raises(ParameterError, match="receiver_runs"):
            simulate_exact(network, TCP(), table, duration_s=1.0, receiver_runs=bad)


@settings(deadline=None, max_examples=30)
@given(st.lists(st.tuples(st.integers(0, 2), st.integers(0, 15)), min_size=1, max_size=60), st.booleans(),
       st.sampled_from([1, 3, 64]))
# a flow whose runs fill its row (eight, every place), then are taken in from the top and the bottom
@example([(0, k) for k in (15, 13, 11, 9, 7, 5, 3, 1, 14, 2, 12, 0, 8)], True, 3)
@example([(1, k) for k in (1, 3, 5, 7, 9, 11, 13, 15, 10, 0, 4, 6, 2)] + [(2, 4), (2, 6)], True, 1)
def test_the_store_of_runs_is_each_receiver_s_set_of_packets(arrivals, branch, block):
    """Data packets of three flows arrive in any order, repeats included, at receivers whose store
    of runs has a row per lane: after each arrival, each flow's next expected packet is the least
    it lacks, the packets it holds above that are what arrived there, repeats are counted as
    duplicates, the places in use are the runs (maximal stretches) of the held packets over all
    the flows, as counted per flow too, and the flow's highest run is where the store says; with
    the short path for in-order data (`branch`, one run) or without (a batch); the search over
    the prefix of a row the flow has reached in blocks of `block` places (1; 3, whose last block
    of a row of 8 overlaps the one before; 64: the whole row at once)."""
    n_flows, places = 3, 8
    rx = Receivers(rcv_nxt=jnp.zeros(n_flows, jnp.int32), ts_recent=jnp.zeros(n_flows),
                   run_s=jnp.zeros((n_flows, places), jnp.int32), run_e=jnp.zeros((n_flows, places), jnp.int32),
                   held=jnp.asarray(0, jnp.int32), peak=jnp.asarray(0, jnp.int32),
                   runs_of=jnp.zeros(n_flows, jnp.int32), top_e=jnp.zeros(n_flows, jnp.int32),
                   top_at=jnp.zeros(n_flows, jnp.int32), reach=jnp.zeros(n_flows, jnp.int32))
    default = exact.SEARCH_BLOCK
    exact.SEARCH_BLOCK = block
    try:
        _check_the_store(rx, arrivals, branch, n_flows)
    finally:
        exact.SEARCH_BLOCK = default


def _check_the_store(rx, arrivals, branch, n_flows):
    step = jax.jit(lambda rx, f, seq: _receive_one(rx, f, n_flows, jnp.asarray(True), seq, branch=branch))
    seen = [set() for _ in range(n_flows)]
    runs_peak = 0
    for f, seq in arrivals:
        rx, duplicate, discarded = step(rx, jnp.asarray(f, jnp.int32), jnp.asarray(seq, jnp.int32))
        assert int(duplicate) == (seq in seen[f]) and int(discarded) == 0
        seen[f].add(seq)
        runs = 0
        for g in range(n_flows):
            expected = min(set(range(17)) - seen[g])
            assert int(rx.rcv_nxt[g]) == expected
            row_s, row_e = np.asarray(rx.run_s)[g], np.asarray(rx.run_e)[g]
            mine = row_e > row_s
            held = {q for s0, e0 in zip(row_s[mine], row_e[mine]) for q in range(s0, e0)}
            above = {q for q in seen[g] if q > expected}
            assert held == above
            runs += sum(1 for q in above if q - 1 not in above)
            assert int(mine.sum()) == sum(1 for q in above if q - 1 not in above) == int(rx.runs_of[g])
            assert np.all(row_s[~mine] == 0) and np.all(row_e[~mine] == 0)  # a free place is empty
            assert not mine[int(rx.reach[g]):].any()  # no run at or past the place reached
            if above:
                top_at = int(rx.top_at[g])
                assert int(rx.top_e[g]) == max(above) + 1 and mine[top_at] and row_e[top_at] == max(above) + 1
        assert int(rx.held) == runs
        runs_peak = max(runs_peak, runs)
        assert int(rx.peak) == runs_peak


def test_a_lane_keeps_its_own_share_of_the_store():
    """The store is shared out among the lanes: a flow whose row is full discards an out-of-order
    packet (counted), even where another lane's row has room, and the other lanes are untouched."""
    n_flows, places = 2, 2
    rx = Receivers(rcv_nxt=jnp.zeros(n_flows, jnp.int32), ts_recent=jnp.zeros(n_flows),
                   run_s=jnp.zeros((n_flows, places), jnp.int32), run_e=jnp.zeros((n_flows, places), jnp.int32),
                   held=jnp.asarray(0, jnp.int32), peak=jnp.asarray(0, jnp.int32),
                   runs_of=jnp.zeros(n_flows, jnp.int32), top_e=jnp.zeros(n_flows, jnp.int32),
                   top_at=jnp.zeros(n_flows, jnp.int32), reach=jnp.zeros(n_flows, jnp.int32))
    step = jax.jit(lambda rx, f, seq: _receive_one(rx, f, n_flows, jnp.asarray(True), seq))
    for seq in (2, 4):
        rx, _, discarded = step(rx, jnp.asarray(0, jnp.int32), jnp.asarray(seq, jnp.int32))
        assert int(discarded) == 0
    rx, duplicate, discarded = step(rx, jnp.asarray(0, jnp.int32), jnp.asarray(6, jnp.int32))
    assert int(discarded) == 1 and int(duplicate) == 0 and int(rx.runs_of[0]) == 2 and int(rx.held) == 2
    assert int(rx.runs_of[1]) == 0 and np.all(np.asarray(rx.run_e)[1] == 0)
    # a packet that joins a run it holds needs no place: kept
    rx, _, discarded = step(rx, jnp.asarray(0, jnp.int32), jnp.asarray(5, jnp.int32))
    assert int(discarded) == 0 and int(rx.top_e[0]) == 6 and int(rx.runs_of[0]) == 2
    rx, _, discarded = step(rx, jnp.asarray(1, jnp.int32), jnp.asarray(3, jnp.int32))
    assert int(discarded) == 0 and int(rx.runs_of[1]) == 1 and int(rx.held) == 3


def test_the_sender_answers_the_syn_ack_with_a_pure_ack_before_its_data(monkeypatch):
    """ns-3.37's ProcessSynSent answers the SYN-ACK with a pure ACK, then sends data at the same
    instant. One flow of one packet on an idle 1 000-packet/s link (its interface as fast): the
    handshake ACK (40 bytes) goes ahead of the data on the data route, so the data reaches the
    receiver 40 / 1 000 000 s later than without it, and the link carries one packet more. The ACK
    ends at the receiver: nothing answers it, and the packets sent are all accounted for. (The
    setting is an argument of the compiled program: both runs use one compilation.)"""
    monkeypatch.setattr(_run_exact, "_CACHE", {})
    network = Network((Link("l", 1000.0, 0.01),), (Flow("f", ("l",)),))
    flows = FlowTable(np.array([0.0]), np.array([1.0]))
    # (the stores of the first run of `test_receivers_keep_every_hole_by_default...`, on a network of
    # the same structure: its program)
    runs = {answer: simulate_exact(network, TCP(handshake_ack=answer), flows, duration_s=1.0, pool_size=1024,
                                   receiver_runs=64).isel(run=0)
            for answer in (True, False)}
    assert len(_run_exact._CACHE) == 1
    with_ack, without = runs[True], runs[False]
    assert int(with_ack.status) == 0 and int(without.status) == 0
    assert float(with_ack.fct[0] - without.fct[0]) == pytest.approx(40.0 / (1000.0 * 1000.0), abs=1e-9)
    assert int(with_ack.handshake_acks[0]) == 1 and int(without.handshake_acks[0]) == 0
    assert int(with_ack.link_arrived[0]) == int(without.link_arrived[0]) + 1
    assert int(with_ack.packets_sent[0]) == int(with_ack.sent[0]) + int(with_ack.syns[0]) + 1
    assert int(with_ack.packets_sent[0]) == int(with_ack.acks_received[0]) + int(with_ack.handshake_acks[0])


def _two_flows_on_a_2_packet_buffer():
    """f0 from t = 0 and f1 from 67.6 ms on a 1 000-packet/s link with a 2-packet buffer (interfaces
    10x the link): drops, duplicate ACKs, and f1's handshake ACK meets the full queue."""
    network = Network((Link("l", 1000.0, 0.01, buffer_packets=2),),
                      (Flow("f0", ("l",), interface_pps=1e4), Flow("f1", ("l",), interface_pps=1e4)))
    return network, FlowTable(np.array([0.0, 0.0676]), np.array([np.inf, np.inf]))


def test_a_handshake_ack_that_meets_a_full_queue_is_dropped_and_counted_as_control():
    """f0 fills a 2-packet buffer from t = 0 (interfaces 10x the link); f1 starts at 67.6 ms (a
    start picked so that its handshake ACK meets the full queue). f1 sends one SYN and gets going,
    so its one control drop is the handshake ACK: it never reaches the receiver, and since a
    dropped packet takes no place, the data of both flows fare exactly as without the ACK."""
    network, flows = _two_flows_on_a_2_packet_buffer()
    runs = {answer: simulate_exact(network, TCP(handshake_ack=answer), flows, duration_s=1.5).isel(run=0)
            for answer in (True, False)}
    run = runs[True]
    assert int(run.status) == 0
    assert int(run.syns[1]) == 1 and int(run.delivered[1]) > 0
    assert int(run.control_dropped[1]) == 1 and int(run.handshake_acks[1]) == 0
    assert int(run.control_dropped[0]) == 0 and int(run.handshake_acks[0]) == 1
    assert int(runs[False].control_dropped.sum()) == 0
    for name in ("sent", "delivered", "dropped", "timeouts"):
        np.testing.assert_array_equal(run[name], runs[False][name])
    np.testing.assert_array_equal(run.packets_sent, run.dropped + run.control_dropped + run.acks_received
                                  + run.handshake_acks + run.held)


def test_tcps_of_other_settings_share_a_compiled_program_and_other_protocols_do_not(monkeypatch):
    """Every TCP setting reaches the program as an argument (`params`) or through the plan (the
    ACK size), so the cache key of the compiled run does not hold them; so does XCP's variant (XCP
    and iXCP run one program), while its window rounding builds its program and stays in its key.
    Run on one program, two TCPs that differ in limited transmit (the first two duplicate ACKs send
    new data, or not) on a 2-packet buffer differ as they should."""
    monkeypatch.setattr(_run_exact, "_CACHE", {})
    network, flows = _two_flows_on_a_2_packet_buffer()
    runs = {limited: simulate_exact(network, TCP(limited_transmit=limited), flows, duration_s=1.5).isel(run=0)
            for limited in (True, False)}
    assert len(_run_exact._CACHE) == 1
    assert int(runs[True].status) == 0 and int(runs[False].status) == 0
    assert int(runs[True].recoveries.sum()) > 0  # duplicate ACKs came
    assert int(runs[True].packets_sent.sum()) != int(runs[False].packets_sent.sum())
    plan = types.SimpleNamespace()  # compile_key hashes the plan's fields: none here, the same plan
    plain = _run_exact.compile_key(TCP(), plan)
    for other in (TCP(initial_window=4), TCP(min_rto_s=0.3, syn_timeout_s=1.0), TCP(receive_window=64),
                  TCP(limited_transmit=False, handshake_ack=False), TCP(mss_bytes=948)):
        assert _run_exact.compile_key(other, plan) == plain, other
    assert _run_exact.compile_key(XCP(), plan) != _run_exact.compile_key(XCP(window_rounding=False), plan)
    assert _run_exact.compile_key(XCP(), plan) == _run_exact.compile_key(IXCP(), plan)

    @dataclasses.dataclass(frozen=True)
    class OwnXCP(IXCP):  # a subclass may change the code: its own program
        pass

    assert _run_exact.compile_key(OwnXCP(), plan) != _run_exact.compile_key(IXCP(), plan)
    assert _run_exact.compile_key(IXCP(window_rounding=False), plan) == _run_exact.compile_key(
        XCP(variant="ixcp", window_rounding=False), plan) != _run_exact.compile_key(IXCP(), plan)


@pytest.mark.parametrize("bad", [1, "yes", None])
def test_a_bad_handshake_ack_setting_is_named(bad):
    with pytest.raises(ParameterError, match="handshake_ack"):
        TCP(handshake_ack=bad)
