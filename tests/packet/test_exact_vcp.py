"""VCP on the exact engine (`fluidcc.packet.exact_protocols.vcp`): the routers' code (the largest
along a path), the senders' MI/AI/MD with the freeze after an MD, a link against the MIAIMD fluid
model's equilibrium, the AIMD epoch against the round model of Theorem 4, and the settings'
checks."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from fluidcc.errors import ParameterError
from fluidcc.maxmin import maxmin
from fluidcc.models import miaimd, vcp_rounds
from fluidcc.network import Flow, Link, Network
from fluidcc.packet import simulate_exact
from fluidcc.packet.exact import ACK, DATA, Ack, Flows, Plan
from fluidcc.packet.exact_protocols import VCP, XCP
from fluidcc.packet.exact_protocols.vcp import (HIGH, LOAD, LOAD_STEP, LOW, OVERLOAD, load_code, mi_gain,
                                                scaled_ai_gain, scaled_mi_gain)
from fluidcc.packet.workloads import FlowTable
from fluidcc.units import mbps_to_pps


def _link(capacity_mbps: float, rtt_s: float, n: int, *, weights=None) -> Network:
    """One link, n flows of one RTT (half of it in the access delays), one way."""
    weights = [1.0] * n if weights is None else weights
    link = Link("l", mbps_to_pps(capacity_mbps), rtt_s / 4)
    return Network((link,), tuple(Flow(f"f{k}", ("l",), access_delay_s=rtt_s / 4, weight=w)
                                  for k, w in enumerate(weights)))


def _sender(network: Network, protocol: VCP):
    """(params, flows, state) of `protocol`'s senders on `network`, every flow open (phase 2) with a
    smoothed RTT of its path's RTT and 1000 packets sent."""
    n = network.n_flows
    plan = Plan.build(network, np.arange(n), protocol.ack_bytes)
    tables = [FlowTable(start_s=np.zeros(n), size_packets=np.full(n, np.inf), route=np.arange(n))]
    params = protocol.params(network, plan, tables)
    flows = Flows(start=jnp.zeros(n), stop=jnp.full(n, jnp.inf), size=jnp.full(n, jnp.inf))
    s = protocol.init(params, flows, jax.random.PRNGKey(0))
    rtt = jnp.asarray(network.rtt_s)
    s = {**s, "phase": jnp.full(n, 2, jnp.int32), "srtt": rtt, "rttvar": rtt / 100, "snd_nxt": jnp.full(n, 1000, jnp.int32),
         "high_tx": jnp.full(n, 1000, jnp.int32), "cwnd": jnp.full(n, 100.0)}
    return params, flows, s


def _ack(protocol, params, flows, s, now: float, code: float, rtt: float):
    """s after one ACK of one new packet for every flow at `now`, echoing `code`."""
    n = s["cwnd"].shape[0]
    ack = Ack(kind=jnp.full(n, ACK, jnp.int32), ack_no=s["snd_una"] + 1, echo=jnp.full(n, now - rtt),
              header=jnp.full((n, 1), code))
    return protocol.on_ack(s, params, flows, now, jnp.ones(n, bool), ack)


def test_md_freezes_the_window_for_t_rho_then_one_rtt_of_ai_whatever_the_code():
    """Section 3.4: on the first overload code the window falls by beta at once and stays for
    t_rho; for one RTT after that the sender runs AI whatever the code; then it follows the code
    again (here a second MD). One flow, RTT 100 ms, t_rho 200 ms: alpha_i = (0.1 / 0.2)^2 = 0.25."""
    protocol = VCP()
    network = _link(10.0, 0.1, 1)
    params, flows, s = _sender(network, protocol)
    step = lambda s, t, code: _ack(protocol, params, flows, s, t, code, 0.1)  # noqa: E731
    s = step(s, 1.0, OVERLOAD)
    assert float(s["cwnd"][0]) == pytest.approx(87.5)
    for t in (1.01, 1.1, 1.199):  # frozen: neither overload, low nor high changes it
        for code in (OVERLOAD, LOW, HIGH):
            s = step(s, t, code)
    assert float(s["cwnd"][0]) == pytest.approx(87.5)
    ai = 0.25 / 87.5
    s = step(s, 1.2, OVERLOAD)  # the RTT of AI after the freeze: an overload code is AI too
    assert float(s["cwnd"][0]) == pytest.approx(87.5 + ai)
    w = float(s["cwnd"][0])
    s = step(s, 1.25, LOW)  # and so is a low-load code (not MI)
    assert float(s["cwnd"][0]) == pytest.approx(w + 0.25 / w)
    w = float(s["cwnd"][0])
    s = step(s, 1.301, OVERLOAD)  # after t_rho + one RTT: the code again, a second MD
    assert float(s["cwnd"][0]) == pytest.approx(0.875 * w)
    assert int(s["decreases"][0]) == 2 and float(s["last_decrease"][0]) == pytest.approx(1.301)
    w = float(s["cwnd"][0])
    s = step(s, 1.61, LOW)  # after that freeze and RTT: MI by xi_s of eq. (6) per acknowledged packet
    assert float(s["cwnd"][0]) == pytest.approx(w + 1.0625 ** 0.5 - 1.0)


def test_rtt_samples_one_per_window_or_one_per_ack():
    """`rtt_samples` "window" (the default, ns-2's TCP agent): only the ACK of a packet sent at or
    after the last sample updates SRTT, RTTVAR and the RTO (the ACKs in between neither, nor when
    the next sample may come); the ACKs in between restart the timer with the RTO as it was. "ack":
    every ACK of new data is a sample (RFC 6298's gains each time)."""
    network = _link(10.0, 0.1, 1)
    for mode in ("window", "ack"):
        protocol = VCP(rtt_samples=mode)
        params, flows, s = _sender(network, protocol)
        s = _ack(protocol, params, flows, s, 1.0, HIGH, 0.1)  # sent at 0.9, after the last sample (none)
        srtt, rto = float(s["srtt"][0]), float(s["rto"][0])
        assert srtt == pytest.approx(0.1) and float(s["timer"][0]) == pytest.approx(1.0 + rto)
        late = _ack(protocol, params, flows, s, 1.05, HIGH, 0.2)  # sent at 0.85, before that sample
        sampled = srtt + (0.2 - srtt) / 8.0
        if mode == "window":
            assert float(late["srtt"][0]) == srtt and float(late["rto"][0]) == rto
            assert float(late["rttvar"][0]) == float(s["rttvar"][0])
        else:
            assert float(late["srtt"][0]) == pytest.approx(sampled) and float(late["rto"][0]) > rto
        assert float(late["timer"][0]) == pytest.approx(1.05 + float(late["rto"][0]))
        # sent at 1.02: after the sample taken at 1.0 (though before the ACK at 1.05, which was none)
        after = _ack(protocol, params, flows, late, 1.17, HIGH, 0.15)
        assert float(after["srtt"][0]) == pytest.approx(float(late["srtt"][0]) + (0.15 - float(late["srtt"][0])) / 8.0)
        assert float(after["timer"][0]) == pytest.approx(1.17 + float(after["rto"][0]))
    assert VCP().rtt_samples == "window"


def test_pacing_spaces_packets_by_its_rule():
    """`pacing`: "none" sends as the window opens; "window" spaces packets srtt / window apart;
    "small" (the authors' ns-2 sender) srtt / 2^k apart for windows of 2 to 64 packets, 2^k the
    smallest power of 2 >= the window, only where that exceeds t_rho / 2. A paced sender sends
    when its window is open and the gap since its last packet has passed, not before."""
    network = _link(10.0, 1.5, 1)  # srtt 1.5 s, t_rho 0.2 s: "small" paces windows of up to 8
    far = _link(10.0, 10.0, 1)  # srtt 10 s: up to 64
    cases = ((network, "none", 10, 0.0), (network, "window", 10, 0.15), (network, "window", 1, 1.5),
             (network, "small", 8, 0.1875), (network, "small", 5, 0.1875), (network, "small", 3, 0.375),
             (network, "small", 2, 0.75), (network, "small", 2.9, 0.75), (network, "small", 9, 0.0),
             (network, "small", 1, 0.0), (far, "small", 64, 10 / 64), (far, "small", 33, 10 / 64),
             (far, "small", 17, 10 / 32), (far, "small", 65, 0.0))
    for net, mode, window, gap in cases:
        protocol = VCP(pacing=mode)
        params, flows, s = _sender(net, protocol)
        s = {**s, "snd_una": s["snd_nxt"], "cwnd": jnp.full(1, float(window)), "rto": jnp.full(1, 30.0)}
        assert float(protocol.pace_gap(s, params)[0]) == gap, (mode, window)  # exactly
        assert bool(protocol.may_send(s, params, flows, 10.0)[0])
        s, _ = protocol.send(s, params, flows, 10.0, jnp.ones(1, bool))
        if gap == 0.0:
            assert float(protocol.pace_time(s, params)[0]) == math.inf
            assert bool(protocol.may_send(s, params, flows, 10.0)[0]) == (window >= 2), (mode, window)
            continue
        assert float(protocol.pace_time(s, params)[0]) == pytest.approx(10.0 + gap), (mode, window)
        assert not bool(protocol.may_send(s, params, flows, 10.0)[0]), (mode, window)
        early = protocol.on_time(s, params, flows, 10.0 + 0.99 * gap, jnp.ones(1, bool))
        assert not bool(protocol.may_send(early, params, flows, 10.0 + 0.99 * gap)[0]), (mode, window)
        at = float(protocol.pace_time(s, params)[0])  # (on the engine's time grid)
        s = protocol.on_time(s, params, flows, at, jnp.ones(1, bool))
        assert bool(protocol.may_send(s, params, flows, at)[0]) == (window >= 2), (mode, window)
        assert float(protocol.pace_time(s, params)[0]) == math.inf  # a token held: no pace instant pending
    # a sender whose gap falls to 0 between its packets ("small": the window grows past 8) holds
    # the token, so when the gap comes back (an MD) no pace instant lies behind the clock
    protocol = VCP(pacing="small")
    params, flows, s = _sender(network, protocol)
    s = {**s, "snd_una": s["snd_nxt"], "cwnd": jnp.full(1, 8.0), "rto": jnp.full(1, 30.0)}
    s, _ = protocol.send(s, params, flows, 10.0, jnp.ones(1, bool))
    assert float(protocol.pace_time(s, params)[0]) == pytest.approx(10.1875)
    s = _ack(protocol, params, flows, {**s, "cwnd": jnp.full(1, 9.0)}, 10.05, LOW, 1.5)  # 9 + xi_s: unpaced
    assert float(protocol.pace_gap(s, params)[0]) == 0.0 and bool(s["pace_due"][0])
    s = _ack(protocol, params, flows, s, 11.0, OVERLOAD, 1.5)  # MD to 8: paced again, the token held
    assert float(protocol.pace_gap(s, params)[0]) == pytest.approx(0.1875)
    assert float(protocol.pace_time(s, params)[0]) == math.inf and bool(protocol.may_send(s, params, flows, 11.0)[0])
    assert VCP().pacing == "none"


def test_paced_windows_cross_spread_over_the_rtt(conserved):
    """Two flows with windows of 8 packets at 1.6 s RTT on a link that never queues them
    (100 Mb/s): unpaced, each window crosses as one flight, so its packets reach the receiver in
    one 0.1 s sample of each RTT's 16 (at most 2, should a flight straddle two); paced, spread over
    it: "window" at least every other sample (gap srtt / 8 = 2 samples at first, less as the
    window grows), and "small" too, though it paces only windows up to 8 packets: beyond, the
    ACKs keep the spacing the paced start gave (the authors' reason for pacing the start)."""
    network = _link(100.0, 1.6, 2)
    for mode, lowest, highest in (("none", 0.0, 2 / 16), ("window", 0.5, 1.0), ("small", 0.5, 1.0)):
        run = simulate_exact(network, VCP(initial_window=8, pacing=mode), duration_s=9.6, sample_s=0.1,
                             flow_series=True).isel(run=0)
        assert int(run.status) == 0
        conserved(run)
        assert int(run.timeouts.sum()) == 0 and float(run.dropped.sum()) == 0
        used = (run.delivered_series.values[32:] > 0).mean(axis=0)  # after two RTTs
        assert np.all((used >= lowest) & (used <= highest)), (mode, used)


def test_gains_scale_with_the_rtt_and_weight_and_are_bounded():
    """Eqs. (5)-(9) and the bounds of the module docstring: xi(80 %) = 0.0625; xi_s =
    (1 + xi)^(rtt / t_rho) - 1 up to 1 / 0.8 - 1 = 0.25; alpha_i = w alpha (rtt / t_rho)^2 up to 2."""
    assert mi_gain(0.25) == pytest.approx(0.0625)
    assert float(scaled_mi_gain(0.0625, 0.4, 0.2)) == pytest.approx(1.0625 ** 2 - 1)
    assert float(scaled_ai_gain(1.0, 0.1, 0.2, 3.0)) == pytest.approx(0.75)
    protocol = VCP()
    for rtt, weight, mi, ai in ((0.05, 1.0, 1.0625 ** 0.25 - 1, 1 / 16), (1.2, 1.0, 0.25, 2.0),
                                (0.1, 4.0, 1.0625 ** 0.5 - 1, 1.0), (0.1, 40.0, 1.0625 ** 0.5 - 1, 2.0)):
        network = _link(10.0, rtt, 1, weights=[weight])
        params, flows, s = _sender(network, protocol)
        grown = _ack(protocol, params, flows, s, 5.0, LOW, rtt)
        assert float(grown["cwnd"][0]) - 100.0 == pytest.approx(mi), (rtt, weight)
        added = _ack(protocol, params, flows, s, 5.0, HIGH, rtt)
        assert (float(added["cwnd"][0]) - 100.0) * 100.0 == pytest.approx(ai), (rtt, weight)


def test_the_code_a_sender_hears_is_the_largest_along_its_path():
    """Routers only raise the code of the data packets they take (Fig. 2's codes; the 8-bit load
    factor the same way); ACKs and packets a link drops keep theirs."""
    protocol = VCP()
    network = Network(tuple(Link(f"l{k}", 1000.0, 0.01) for k in range(3)), (Flow("f", ("l0", "l1", "l2")),))
    params, _, _ = _sender(network, protocol)
    for codes in ((LOW, OVERLOAD, HIGH), (HIGH, LOW, LOW), (LOW, LOW, HIGH), (LOW, LOW, LOW)):
        router = protocol.router_init(params, 3)
        router = {**router, "code": jnp.asarray(codes)}
        header = jnp.asarray([LOW])
        for link in range(3):
            router, header = protocol.router_packet(router, params, link, 0.0, DATA, header, 0, True)
        assert float(header[LOAD]) == max(codes)
        ack_header = jnp.asarray([LOW])
        for link in range(3):
            router, ack_header = protocol.router_packet(router, params, link, 0.0, ACK, ack_header, 0, True)
            _, dropped = protocol.router_packet(router, params, link, 0.0, DATA, jnp.asarray([LOW]), 0, False)
            assert float(dropped[LOAD]) == LOW
        assert float(ack_header[LOAD]) == LOW
    wide = VCP(code_bits=8)
    router = {**wide.router_init(params, 3), "code": jnp.asarray([0.5, 1.25, 0.9])}
    header = jnp.asarray([0.0])
    for link in range(3):
        router, header = wide.router_packet(router, params, link, 0.0, DATA, header, 0, True)
    assert float(header[LOAD]) == 1.25
    np.testing.assert_allclose(load_code(jnp.asarray([0.0, 0.79, 0.8, 0.999, 1.0, 7.0]), 2),
                               [LOW, LOW, HIGH, HIGH, OVERLOAD, OVERLOAD])
    np.testing.assert_allclose(load_code(jnp.asarray([0.5, 0.80001, 1.004, 9.0]), 8),
                               [0.5, 102 * LOAD_STEP, 128 * LOAD_STEP, 255 * LOAD_STEP])


def test_the_sender_follows_the_most_loaded_link_of_its_path():
    """Two links in series, 10 then 5 Mb/s: the flows' code is the second link's, which they fill
    (AIMD between the MD point and beta of it); the first stays below its 80 % transition point
    (it says low load, which never wins over the second's code). No drops, conservation exact."""
    links = (Link("a", mbps_to_pps(10.0), 0.02), Link("b", mbps_to_pps(5.0), 0.02))
    network = Network(links, tuple(Flow(f"f{k}", ("a", "b"), access_delay_s=0.01) for k in range(3)))
    run = simulate_exact(network, VCP(initial_window=4), duration_s=30.0, sample_s=0.2).isel(run=0)
    assert int(run.status) == 0
    late = run.sample_time.values > 10.0
    use = {name: run.served.sel(link=name).values[late].sum() / (links[k].capacity_pps * 0.2 * late.sum())
           for k, name in enumerate("ab")}
    assert use["b"] > 0.85 and use["a"] < 0.5
    codes = run.vcp_code_series.values[late]
    assert np.all(codes[:, 0] == LOW) and np.any(codes[:, 1] == OVERLOAD)
    assert float(run.dropped.sum()) == 0


def test_one_link_against_the_miaimd_equilibrium(conserved):
    """N = 10 flows of one RTT (80 ms) on 20 Mb/s, one way, 40 s, statistics after 10 s.

    What the quantization predicts before the run: the 2-bit code turns overload where the load
    factor of eq. (1) reaches 1, i.e. where the aggregate rate reaches gamma C (no queue); an MD
    brings it to beta of that, and AI raises it linearly back: the time-averaged rate is
    (1 + beta) / 2 gamma C = 0.919 C, split evenly. The MIAIMD fluid model's equilibrium
    (Theorem 1) has its AI term on top: gamma C + N alpha / (kappa T), and the packets sit below it
    by the factor (1 + beta) / 2 / (1 + N alpha / (kappa gamma C T)). Asserted: the link's
    use within 2 % of the prediction (the AI step of one load factor interval is 0.8 % of C T
    here, and the code's lag adds up to one step above gamma C), every flow within 3 % of the
    prediction's share, and the aggregate rate at that factor of the fluid equilibrium within 2 %."""
    C, T, N = mbps_to_pps(20.0), 0.08, 10
    network = _link(20.0, T, N)
    run = simulate_exact(network, VCP(initial_window=4), duration_s=40.0, sample_s=0.1, flow_series=True).isel(run=0)
    assert int(run.status) == 0
    conserved(run)
    late = run.sample_time.values > 10.0
    seconds = 0.1 * late.sum()
    predicted = (1 + 0.875) / 2 * 0.98
    use = run.served.sel(link="l").values[late].sum() / (C * seconds)
    assert use == pytest.approx(predicted, rel=0.02)
    rates = run.delivered_series.values[late].sum(axis=0) / seconds
    np.testing.assert_allclose(rates / C, predicted / N, rtol=0.03)
    fluid = miaimd.equilibrium_homogeneous(0.25, 1.0, 0.98, C, T, N)
    fluid_rate = float(np.asarray(fluid["window"]).ravel()[0]) / T
    assert fluid_rate == pytest.approx(0.98 * C + N * 1.0 / (0.25 * T))
    factor = (1 + 0.875) / 2 / (1 + N * 1.0 / (0.25 * 0.98 * C * T))
    assert rates.sum() / fluid_rate == pytest.approx(factor, rel=0.02)
    assert float(run.dropped.sum()) == 0

    # Theorem 4's epoch (section 11.4) in the same run. With eq. (8)'s scaling every flow acts as
    # if its RTT were t_rho, so the aggregate window of one t_rho, gamma C t_rho, climbs back from
    # beta of it in x = (1 - beta) gamma C t_rho / (N alpha) AI rounds of t_rho (the round model's
    # epoch, ceil(x) whole rounds). An epoch is then the MD's freeze t_rho and those rounds, plus
    # at most the code's lag: the overload shows at the end of the interval it happens in (< one
    # round) and reaches the senders an RTT later. The MD round of the round model lasts t_rho +
    # RTT. So the epoch lies in [t_rho + x t_rho, round-model time of ceil(x) AI rounds and one MD
    # round + t_rho]; the epochs are counted as the onsets of the overload code.
    t_rho = 0.2
    x = (1 - 0.875) * 0.98 * C * t_rho / (N * 1.0)
    rounds = vcp_rounds.epoch_rounds(0.98 * C * t_rho, N)
    assert rounds == math.ceil(x)
    code = run.vcp_code_series.sel(link="l").values
    onsets = np.sum((code[1:] == OVERLOAD) & (code[:-1] != OVERLOAD) & late[1:])
    epoch = seconds / onsets
    assert t_rho * (1 + x) <= epoch <= t_rho * (vcp_rounds.rounds_to_time(rounds, 1, rtt=T, t_rho=t_rho) + 1)


def test_claiming_a_capacity_step_takes_the_rounds_of_eq_35():
    """Theorem 3 at packet level: two flows (RTT 80 ms) on 2 Mb/s whose capacity becomes 20 Mb/s at
    20 s. The aggregate rate r0 before the step (its mean over the last 2 s) claims 80 % of the new
    capacity by MI, a factor 1 + xi per t_rho: the round model's ceil(eq. (35)) rounds with the
    capacity in units of r0. The terms of the tolerance: r0 is the mean of an AIMD sawtooth
    between beta and 1 of its peak, so the rate at the step is within a factor beta^(-1/2) of it,
    log(beta^(-1/2)) / log(1 + xi) = 1.1 rounds either way; the code turns low at the end of the
    interval the step falls in and the senders hear it an RTT later (up to 1 + RTT / t_rho rounds
    later); the rate is read at the link as the mean over the last round (four samples of 50 ms),
    which smooths the windows' flights (a single sample's rate swings by a quarter about its
    neighbours' once the flows grow, so it can cross 80 % a round or two early) and, the rate
    growing, reaches 80 % no earlier than the rate at its end and at most one round later (with a
    quarter round for the samples' grid either way); the ceiling adds up to one round. Senders'
    interfaces at 10x the new capacity (not the first one's)."""
    C0, C1, T, step, dt, t_rho = mbps_to_pps(2.0), mbps_to_pps(20.0), 0.08, 20.0, 0.05, 0.2
    link = Link("l", C0, T / 4, schedule=((step, C1),))
    network = Network((link,), tuple(Flow(f"f{k}", ("l",), access_delay_s=T / 4, interface_pps=10 * C1)
                                     for k in range(2)))
    run = simulate_exact(network, VCP(initial_window=2), duration_s=30.0, sample_s=dt, buffers=[2 * C1 * T]).isel(run=0)
    assert int(run.status) == 0
    times = run.sample_time.values
    served = run.served.sel(link="l").values / dt
    r0 = served[(times > step - 2.0) & (times <= step)].mean()
    assert 0.85 * C0 < r0 < C0
    rounds = vcp_rounds.rounds_to_claim(C1 / r0)
    assert rounds == math.ceil(math.log(0.8 * C1 / r0) / math.log(1.0625))
    sawtooth = 0.5 * math.log(1 / 0.875) / math.log(1.0625)
    per_round = round(t_rho / dt)
    last_round = np.convolve(served, np.ones(per_round) / per_round)[: served.size]  # the mean over the last round
    reached = times[(times > step) & (last_round >= 0.8 * C1)][0] - step
    measured = reached / t_rho
    assert rounds - 1 - sawtooth - 0.25 <= measured <= rounds + sawtooth + 1 + T / t_rho + 1 + 0.25
    assert float(run.dropped.sum()) == 0


@pytest.mark.parametrize("kwargs, field", [
    ({"beta": 1.0}, "beta"), ({"beta": 0.0}, "beta"), ({"beta": -0.5}, "beta"), ({"t_rho_s": 0.0}, "t_rho"),
    ({"t_q_s": -1.0}, "t_q"), ({"t_q_s": 0.3}, "t_q"), ({"code_bits": 4}, "code_bits"), ({"code_bits": True}, "code_bits"),
    ({"alpha": 0.0}, "alpha"), ({"kappa": math.nan}, "kappa"), ({"gamma": 0.0}, "gamma"), ({"kappa_q": -1.0}, "kappa_q"),
    ({"max_mi_gain": 0.0}, "max_mi_gain"), ({"max_ai_packets": -2.0}, "max_ai_packets"),
    ({"initial_window": 0.5}, "initial_window"), ({"min_rto_s": 0.0}, "min_rto"),
    ({"rtt_samples": "packet"}, "rtt_samples"), ({"rtt_samples": None}, "rtt_samples"),
    ({"pacing": "on"}, "pacing"), ({"pacing": True}, "pacing"),
])
def test_bad_settings_are_errors_naming_the_field(kwargs, field):
    with pytest.raises(ParameterError) as error:
        VCP(**kwargs)
    assert error.value.field == field


def test_a_weight_must_be_positive():
    """The weights of eq. (9) are the network's flow weights, which must be > 0."""
    with pytest.raises(Exception) as error:
        _link(10.0, 0.1, 2, weights=[1.0, 0.0])
    assert "weight" in str(error.value)


def test_md_shrinks_the_window_difference_by_beta_per_epoch_and_xcp_is_faster():
    """Theorem 4 at packet level (section 11.4): during AI both flows (one RTT, 80 ms) gain the
    same, and each MD multiplies both windows by beta, so their difference shrinks by beta per
    epoch. Flow a has 5 Mb/s to itself for 10 s, then b joins; per epoch (between onsets of the
    overload code) the difference of their mean rates. Asserted: fitted over the epochs whose
    difference is above a tenth of the first (below that the noise of a few packets per epoch
    dominates), the factor per epoch is beta within 0.02 (the epochs' edges are read in 20 ms
    samples of 1.8 s epochs, and the queueing delay both share changes by a few percent from one
    epoch to the next), and the difference falls below a tenth of the first after the round model's
    epochs_to_fair(10) = 18 epochs, within 2."""
    C, T, dt = mbps_to_pps(5.0), 0.08, 0.02
    network = Network((Link("l", C, T / 4),), (Flow("a", ("l",), access_delay_s=T / 4),
                                               Flow("b", ("l",), access_delay_s=T / 4, start_s=10.0)))
    run = simulate_exact(network, VCP(initial_window=4), duration_s=60.0, sample_s=dt, flow_series=True).isel(run=0)
    assert int(run.status) == 0 and float(run.dropped.sum()) == 0
    times = run.sample_time.values
    code = run.vcp_code_series.sel(link="l").values
    onsets = np.nonzero((code[1:] == OVERLOAD) & (code[:-1] != OVERLOAD))[0] + 1
    onsets = onsets[times[onsets] > 12.0]
    delivered = run.delivered_series.values
    difference = np.array([np.subtract(*(delivered[a:b].sum(axis=0) / (dt * (b - a)))) for a, b in zip(onsets[:-1], onsets[1:])])
    assert difference[0] > 0.5 * C  # a starts far ahead
    above = difference > 0.1 * difference[0]
    first_below = int(np.argmin(above))
    assert not above[first_below] and np.all(above[:first_below])
    epochs = np.arange(first_below)
    factor = math.exp(np.polyfit(epochs, np.log(difference[:first_below]), 1)[0])
    assert factor == pytest.approx(0.875, abs=0.02)
    assert vcp_rounds.epochs_to_fair(10) == 18
    assert abs(first_below - vcp_rounds.epochs_to_fair(10)) <= 2
    vcp_time = times[onsets[first_below]] - 10.0

    # XCP beside it (section 5: O(log Delta P) RTTs, against VCP's O(P log Delta P)): its fairness
    # controller takes a share gamma of the traffic every control interval (one RTT here) and
    # gives it back evenly, so two flows' difference shrinks by 1 - gamma per RTT and reaches a
    # tenth after log 10 / log(1 / 0.9) = 22 RTTs, 1.75 s. Measured per RTT from b's start:
    # within half and twice that, and at least ten times sooner than VCP.
    xcp = simulate_exact(network, XCP(), duration_s=20.0, sample_s=dt, flow_series=True).isel(run=0)
    assert int(xcp.status) == 0
    per_rtt = int(round(T / dt))
    first = int(round(10.0 / dt)) + per_rtt  # b's first RTT: its handshake
    series = xcp.delivered_series.values
    gaps = np.array([series[k:k + per_rtt, 0].sum() - series[k:k + per_rtt, 1].sum()
                     for k in range(first, series.shape[0] - per_rtt, per_rtt)])
    rtts = int(np.argmax(gaps < 0.1 * gaps[0]))
    assert gaps[rtts] < 0.1 * gaps[0]
    predicted = math.log(10) / math.log(1 / 0.9) * T
    assert 0.5 * predicted <= (rtts + 1) * T <= 2 * predicted
    assert 10 * (rtts + 1) * T <= vcp_time


def test_releasing_a_capacity_drop_takes_the_md_rounds_of_eq_36():
    """Theorem 3's release at packet level: two flows (RTT 80 ms) on 20 Mb/s whose capacity halves
    at 20 s, a buffer large enough for no loss. The windows must fall from the rate r0 before the
    drop to the new capacity: the round model's ceil(eq. (36)) = m MD rounds with the capacity in
    units of the new one, each lasting t_rho plus one RTT (the freeze and the RTT of AI after it),
    where the RTT includes the queue the drop builds. Measured: the time until the queue first
    empties again (the windows then fit the new BDP). The terms of the tolerance: r0 is the mean
    of an AIMD sawtooth (half an MD round either way); an MD round lasts between t_rho + T and
    t_rho + T + q_max / C1 (the largest queueing delay); the overload shows at the end of the
    interval the drop falls in and reaches the senders an RTT later (one more round at most), and
    the queue drains within an RTT of the last MD."""
    C0, C1, T, step, dt, t_rho = mbps_to_pps(20.0), mbps_to_pps(10.0), 0.08, 20.0, 0.02, 0.2
    network = Network((Link("l", C0, T / 4, schedule=((step, C1),)),),
                      tuple(Flow(f"f{k}", ("l",), access_delay_s=T / 4) for k in range(2)))
    run = simulate_exact(network, VCP(initial_window=4), duration_s=26.0, sample_s=dt, buffers=[20 * C0 * T]).isel(run=0)
    assert int(run.status) == 0 and float(run.dropped.sum()) == 0
    times = run.sample_time.values
    r0 = run.served.sel(link="l").values[(times > step - 2.0) & (times <= step)].mean() / dt
    queue = run.queue.sel(link="l").values
    m = vcp_rounds.rounds_to_release(r0 / C1)
    assert m == math.ceil(math.log(r0 / C1) / math.log(1 / 0.875))
    q_max = queue[times > step].max()
    assert q_max > 10  # the drop did build a queue
    empty = times[(times > step + 0.1) & (queue < 1)][0] - step
    shortest = (m - 0.5) * vcp_rounds.rounds_to_time(0, 1, rtt=T, t_rho=t_rho) * t_rho
    longest_round = vcp_rounds.rounds_to_time(0, 1, rtt=T + q_max / C1, t_rho=t_rho) * t_rho
    assert shortest <= empty <= (m + 1.5) * longest_round + T + q_max / C1


def test_a_parking_lot_gives_the_long_flows_less_than_max_min():
    """Section 4.2 and section 5's last paragraphs: where the fluid model (Theorem 2) gives max-min
    rates, VCP departs in one direction, giving more to the flows that cross fewer bottlenecks: a
    flow hears the largest code along its path, so a flow crossing several links that each cycle
    through overload makes an MD whenever any of them is overloaded. A parking lot of three 5 Mb/s
    links (20 ms each), three long flows across all and one cross flow per link (max-min: 1.25
    Mb/s each), one way, 20 s, statistics after 4 s. Asserted: every long flow below and every
    cross flow above its max-min rate (measured: long flows about 0.67 of it, cross flows about
    1.7), every link still at least 90 % used, no drops."""
    links = tuple(Link(f"l{j}", mbps_to_pps(5.0), 0.02) for j in range(3))
    flows = (tuple(Flow(f"long[{k}]", ("l0", "l1", "l2")) for k in range(3))
             + tuple(Flow(f"cross{j}", (f"l{j}",)) for j in range(3)))
    network = Network(links, flows)
    fair = maxmin(network).rates_pps
    np.testing.assert_allclose(fair, mbps_to_pps(5.0) / 4)
    run = simulate_exact(network, VCP(initial_window=4), duration_s=20.0, sample_s=0.1, flow_series=True).isel(run=0)
    assert int(run.status) == 0 and float(run.dropped.sum()) == 0
    late = run.sample_time.values > 4.0
    rates = run.delivered_series.values[late].sum(axis=0) / (0.1 * late.sum())
    assert np.all(rates[:3] < fair[:3]) and np.all(rates[3:] > fair[3:])
    use = run.served.values[late].sum(axis=0) / (mbps_to_pps(5.0) * 0.1 * late.sum())
    assert np.all(use > 0.9)


def test_heterogeneous_rtts_share_evenly_where_the_fluid_equilibrium_shares_windows():
    """Section 3.4 against section 5's heterogeneous-RTT equilibrium, on one 10 Mb/s link: two flows
    each of RTT 40, 80 and 160 ms, one way, 60 s, statistics over the second half.

    The prediction before the run: with eq. (8)'s scaling a flow's AI raises its rate by alpha /
    t_rho^2 packets/s per second whatever its RTT, and an MD cuts every rate by beta at once, so
    AIMD shares the rate evenly. It gets there as Theorem 4 says: the flows start with equal
    windows, so rates 4 : 2 : 1, which MI keeps (it scales every window by the same factor per
    t_rho), and each epoch shrinks the differences by beta. After the n epochs (overload onsets)
    before the second half, the largest rate is at most 1 + 3 beta^n times the smallest; 5 % more
    for what differs with the RTT, the MD round t_rho + RTT, whose RTT of AI the longer-RTT flow
    spends later ((160 - 40) ms of AI in epochs of about 1.5 s). The link at (1 + beta) / 2 gamma
    within 3 %. The MIAIMD fluid model's equilibrium for these RTTs (section 5, without eq. (8):
    eq. (10) has one alpha) gives every flow the same window, so rates in the ratio 4 : 2 : 1; VCP
    departs from it by design, and the test states that departure."""
    C = mbps_to_pps(10.0)
    rtts = (0.04, 0.08, 0.16)
    network = Network((Link("l", C, 0.01),), tuple(Flow(f"f{k}{j}", ("l",), access_delay_s=(r - 0.02) / 2)
                                                 for k, r in enumerate(rtts) for j in range(2)))
    np.testing.assert_allclose(network.rtt_s, np.repeat(rtts, 2))
    fluid = miaimd.equilibrium_heterogeneous(0.25, 1.0, 0.98, C, network.rtt_s)
    fluid_rate = np.asarray(fluid["flow_rate"]).ravel()
    np.testing.assert_allclose(fluid_rate[::2] / fluid_rate[4], [4.0, 2.0, 1.0])
    run = simulate_exact(network, VCP(initial_window=4), duration_s=60.0, sample_s=0.1, flow_series=True).isel(run=0)
    assert int(run.status) == 0 and float(run.dropped.sum()) == 0
    times = run.sample_time.values
    late = times > 30.0
    rates = run.delivered_series.values[late].sum(axis=0) / (0.1 * late.sum())
    code = run.vcp_code_series.sel(link="l").values
    epochs = int(np.sum((code[1:] == OVERLOAD) & (code[:-1] != OVERLOAD) & ~late[1:]))
    assert epochs >= 10
    assert rates.max() / rates.min() <= 1 + 3 * 0.875 ** epochs + 0.05
    assert rates.sum() / C == pytest.approx((1 + 0.875) / 2 * 0.98, rel=0.03)


def test_the_8_bit_code_applies_the_load_factor_itself():
    """Section 5 (Fig. 13): with 8 bits the sender hears rho itself and uses xi(rho) = kappa (1 -
    rho) / rho of eq. (11): MI by xi(rho) scaled as eq. (6) below 80 % (bounded so that one RTT
    does not carry rho past 1: xi_s <= 1 / rho - 1), AI from 80 % to 100 %, and above 100 % an MD
    by 1 + xi(rho), then the same freeze. One flow, RTT 100 ms."""
    protocol = VCP(code_bits=8)
    network = _link(10.0, 0.1, 1)
    params, flows, s = _sender(network, protocol)
    grown = _ack(protocol, params, flows, s, 5.0, 0.5, 0.1)
    assert float(grown["cwnd"][0]) - 100.0 == pytest.approx(1.25 ** 0.5 - 1)
    rho = 90 * LOAD_STEP  # 0.703125, a value the 8-bit field holds
    grown = _ack(protocol, params, flows, s, 5.0, rho, 0.1)
    assert float(grown["cwnd"][0]) - 100.0 == pytest.approx((1 + 0.25 * (1 - rho) / rho) ** 0.5 - 1)
    added = _ack(protocol, params, flows, s, 5.0, 0.9, 0.1)
    assert (float(added["cwnd"][0]) - 100.0) * 100.0 == pytest.approx(0.25)
    cut = _ack(protocol, params, flows, s, 5.0, 1.5, 0.1)
    assert float(cut["cwnd"][0]) == pytest.approx(100.0 * (1 + 0.25 * (1 - 1.5) / 1.5))
    assert float(_ack(protocol, params, flows, cut, 5.1, 1.5, 0.1)["cwnd"][0]) == float(cut["cwnd"][0])  # frozen
    far = _link(10.0, 1.0, 1)  # RTT 1 s: (1 + xi(0.1))^5 - 1 = 360 is bounded by 1 / 0.1 - 1 = 9
    params, flows, s = _sender(far, protocol)
    assert float(_ack(protocol, params, flows, s, 5.0, 0.1, 1.0)["cwnd"][0]) - 100.0 == pytest.approx(9.0)


def test_vcps_of_other_gains_share_a_compiled_program_and_run_in_it_as_alone(monkeypatch):
    """Every VCP setting but the code width reaches the program as an argument: VCPs that differ
    in them share one compilation (the 8-bit code does not), and a VCP of other gains run in the
    program compiled for the defaults gives what a program compiled for it alone gives."""
    from fluidcc.packet import _run_exact

    plan = Plan.build(_link(5.0, 0.08, 2), np.arange(2), VCP.ack_bytes)
    key = _run_exact.compile_key(VCP(), plan)
    for other in (VCP(gamma=0.9, alpha=2.0, beta=0.5, kappa=0.1, kappa_q=0.3), VCP(t_rho_s=0.3, t_q_s=0.02),
                  VCP(max_mi_gain=0.1, max_ai_packets=4.0, initial_window=3, min_rto_s=1.0),
                  VCP(pacing="window"), VCP(pacing="small", rtt_samples="ack")):
        assert _run_exact.compile_key(other, plan) == key, other
    assert _run_exact.compile_key(VCP(code_bits=8), plan) != key
    monkeypatch.setattr(_run_exact, "_CACHE", {})
    # a BDP of 10 packets and windows of 6 from the start: MDs within the 8 s
    network, other = _link(1.0, 0.08, 2), VCP(initial_window=6, beta=0.5, alpha=2.0, t_rho_s=0.3)
    default = simulate_exact(network, VCP(initial_window=6), duration_s=8.0, sample_s=0.1)
    shared = simulate_exact(network, other, duration_s=8.0, sample_s=0.1)
    assert len(_run_exact._CACHE) == 1
    monkeypatch.setattr(_run_exact, "_CACHE", {})
    alone = simulate_exact(network, other, duration_s=8.0, sample_s=0.1)
    assert (default.status == 0).all() and (alone.status == 0).all() and int(alone.decreases.min()) > 0
    assert not np.array_equal(shared.served.values, default.served.values)  # its own gains, not the defaults'
    for name, values in alone.data_vars.items():
        if values.dtype.kind in "fiub" and not name.startswith("work_"):
            np.testing.assert_array_equal(shared[name].values, values.values, err_msg=name)
