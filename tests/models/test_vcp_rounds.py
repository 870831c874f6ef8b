"""VCP's MI/AI/MD round model (VCP paper, Theorems 3 and 4, eqs. (35)-(37)): the simulated round
counts against the closed forms, the paper's numbers worked by hand, exact boundaries, bad input.

Expected counts are computed here with math.log and math.ceil, never with the module. Where a
float formula lands within 1e-9 of a whole number, float rounding cannot tell ceil from the
number itself, so those draws are skipped and the boundaries are tested with exact inputs."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from fluidcc.errors import ParameterError
from fluidcc.models import vcp_rounds as vr


def _ceil_away_from_whole(value: float) -> int:
    assume(abs(value - round(value)) > 1e-9)
    return math.ceil(value)


# --- the paper's numbers, by hand: each example has floor != ceil, so an off-by-one fails ----------

def test_claim_of_a_capacity_of_1000_takes_111_mi_rounds():
    """xi = 0.0625, rho-hat = 0.8, C = 1000: log(800) / log(1.0625) = 110.26..., so 111 rounds."""
    value = math.log(0.8 * 1000) / math.log(1.0625)
    assert 110 < value < 111
    assert 1.0625 ** 110 < 800 <= 1.0625 ** 111  # 110 rounds fall short, 111 reach the target
    assert vr.rounds_to_claim(1000) == vr.simulate_claim(1000) == 111
    assert vr.rounds_to_claim(1000, transition=0.8, xi=0.0625) == 111


@pytest.mark.parametrize("capacity, transition, xi", [(1500, 0.8, 0.0625), (18750, 0.8, 0.0625), (50, 0.5, 0.1),
                                                      (1e6, 0.9, 0.02)])
def test_claim_by_hand(capacity, transition, xi):
    value = math.log(transition * capacity) / math.log(1 + xi)
    assert math.floor(value) != math.ceil(value)
    assert vr.rounds_to_claim(capacity, transition, xi) == vr.simulate_claim(capacity, transition, xi) == math.ceil(value)


@pytest.mark.parametrize("capacity, beta", [(1000, 0.875), (1e6, 0.875), (37, 0.5), (1e4, 0.98)])
def test_release_by_hand(capacity, beta):
    """beta = 0.875, C = 1000: log(1000) / log(8/7) = 51.73..., so 52 MD rounds."""
    value = math.log(capacity) / math.log(1 / beta)
    assert math.floor(value) != math.ceil(value)
    assert vr.rounds_to_release(capacity, beta) == vr.simulate_release(capacity, beta) == math.ceil(value)
    if (capacity, beta) == (1000, 0.875):
        assert math.ceil(value) == 52 and 0.875 ** 51 * 1000 > 1 >= 0.875 ** 52 * 1000


@pytest.mark.parametrize("capacity_window, n_flows, alpha, beta, expected", [
    (1000, 3, 1.0, 0.875, 42),   # 125 / 3 = 41.67
    (1500, 50, 1.0, 0.875, 4),   # 150 Mb/s (18 750 packets/s) x 80 ms, 50 flows: 187.5 / 50 = 3.75
    (1000, 7, 0.5, 0.9, 29),     # 100 / 3.5 = 28.57
])
def test_epoch_by_hand(capacity_window, n_flows, alpha, beta, expected):
    value = (1 - beta) * capacity_window / (n_flows * alpha)
    assert math.floor(value) != math.ceil(value) == expected
    assert vr.epoch_rounds(capacity_window, n_flows, alpha, beta) == expected
    assert vr.simulate_epoch(capacity_window, n_flows, alpha, beta) == expected


def test_fairness_by_hand():
    """delta_w0 = 100, beta = 0.875: log(100) / log(8/7) = 34.49, so 35 epochs of 42 AI rounds (C T = 1000, N = 3)."""
    value = math.log(100) / math.log(1 / 0.875)
    assert math.floor(value) == 34
    assert vr.epochs_to_fair(100, 0.875) == 35
    assert vr.rounds_to_fair(1000, 3, 100) == 35 * 42
    # eq. (37)'s right-hand side, (1 - beta) / (alpha log(1/beta)) P log(delta_w0) with P = C T / N,
    # is 34.49 x 41.67 = 1436.98 rounds; rounding each factor up first gives 35 x 42
    per_flow_bdp = 1000 / 3
    real = (1 - 0.875) / (1 * math.log(1 / 0.875)) * per_flow_bdp * math.log(100)
    assert real == pytest.approx(value * 125 / 3) and 1436 < real < 1437
    run = vr.simulate_fairness(1000, 3, 100)
    assert run.epochs == 35 and run.epoch_ai_rounds[0] == 42
    assert 35 * 41 + 1 <= run.ai_rounds <= 35 * 42
    assert 0.875 < run.final_difference <= 1


def test_time_by_hand():
    assert vr.rounds_to_time(10, 2) == 14.0  # rtt = t_rho: an MD round with its freeze is 2 t_rho
    assert vr.rounds_to_time(10, 2, freeze=False) == 12.0
    assert vr.rounds_to_time(10, 2, rtt=0.1, t_rho=0.2) == 13.0  # each MD round 0.2 + 0.1 s
    assert vr.rounds_to_time(0, 52, rtt=0.2, t_rho=0.2) == 104.0
    assert vr.time_to_fair(1000, 3, 100) == 35 * 42 + 35 * 2
    assert vr.time_to_fair(1000, 3, 100, freeze=False) == 35 * 43


# --- exact boundaries: the formula is a whole number, so the count is that number, not one more ------

@pytest.mark.parametrize("k", [1, 3, 6, 7, 12, 40])
def test_claim_lands_on_its_boundary(k):
    """transition C = (17/16)^k exactly: k MI rounds (math.log gives 3.0000000000000004 at k = 3)."""
    capacity = 2 * Fraction(17, 16) ** k
    assert vr.rounds_to_claim(capacity, 0.5, 0.0625) == vr.simulate_claim(capacity, 0.5, 0.0625) == k
    if Fraction(str(float(capacity))) == capacity:  # the float's shortest decimal is this number exactly
        assert vr.rounds_to_claim(float(capacity), 0.5, 0.0625) == k


@pytest.mark.parametrize("capacity, beta, k", [(2.0 ** 29, 0.5, 29), (2.0 ** 59, 0.5, 59), (8.0 ** 13, 0.125, 13),
                                               (Fraction(8, 7) ** 20, 0.875, 20)])
def test_release_lands_on_its_boundary(capacity, beta, k):
    """beta^k C = 1 exactly: k MD rounds (the release stops at <= 1)."""
    assert vr.rounds_to_release(capacity, beta) == vr.simulate_release(capacity, beta) == k


@pytest.mark.parametrize("capacity_window, n_flows, alpha, beta, transition, k", [
    (1000, 1, 1.0, 0.875, 0.8, 125),
    (1000, 5, 1.0, 0.875, 0.8, 25),
    (10, 1, 1.0, 0.7, 0.5, 3),      # 0.7 read as 7/10: 7 + 3 = 10 exactly
    (1000, 1, 1.0, 0.9, 0.8, 100),
])
def test_epoch_lands_on_its_boundary(capacity_window, n_flows, alpha, beta, transition, k):
    assert vr.epoch_rounds(capacity_window, n_flows, alpha, beta) == k
    assert vr.simulate_epoch(capacity_window, n_flows, alpha, beta, transition) == k


@pytest.mark.parametrize("delta_w0, beta, k", [(1, 0.5, 0), (2.0 ** 10, 0.5, 10), (64, 0.125, 2), (8, 0.5, 3)])
def test_epochs_land_on_their_boundary(delta_w0, beta, k):
    assert vr.epochs_to_fair(delta_w0, beta) == k


def test_fairness_lands_on_its_boundary():
    """beta = 0.5, delta_w0 = 2^5: 5 epochs, each of exactly 20 AI rounds (C T = 80, N = 2, alpha = 1)."""
    run = vr.simulate_fairness(80, 2, 32, alpha=1, beta=0.5, transition=0.5)
    assert run.epochs == vr.epochs_to_fair(32, 0.5) == 5
    assert run.epoch_ai_rounds == (20,) * 5 and run.ai_rounds == vr.rounds_to_fair(80, 2, 32, 1, 0.5) == 100
    assert run.final_difference == 1


# --- properties: simulation == closed form == the paper's formula, rounded up -----------------------

@given(capacity=st.floats(2, 1e6), transition=st.floats(0.5, 0.95), xi=st.floats(0.01, 0.5))
def test_simulated_claim_is_ceil_eq35(capacity, transition, xi):
    expected = _ceil_away_from_whole(math.log(transition * capacity) / math.log(1 + xi))
    assert vr.simulate_claim(capacity, transition, xi) == vr.rounds_to_claim(capacity, transition, xi) == expected


@given(capacity=st.floats(1.5, 1e9), beta=st.floats(0.05, 0.99))
def test_simulated_release_is_ceil_eq36(capacity, beta):
    expected = _ceil_away_from_whole(math.log(capacity) / math.log(1 / beta))
    assert vr.simulate_release(capacity, beta) == vr.rounds_to_release(capacity, beta) == expected


@given(per_flow_window=st.floats(1, 200), n_flows=st.integers(1, 20), alpha=st.floats(0.25, 4),
       beta=st.floats(0.5, 0.99), below=st.floats(0.5, 1))
def test_simulated_epoch_is_ceil_of_the_epoch_length(per_flow_window, n_flows, alpha, beta, below):
    capacity_window = per_flow_window * n_flows
    expected = _ceil_away_from_whole((1 - beta) * capacity_window / (n_flows * alpha))
    rounds = vr.simulate_epoch(capacity_window, n_flows, alpha, beta, transition=beta * below)
    assert rounds == vr.epoch_rounds(capacity_window, n_flows, alpha, beta) == expected


@given(per_flow_window=st.floats(2, 100), n_flows=st.integers(2, 6), alpha=st.floats(0.5, 2),
       beta=st.floats(0.5, 0.95), share=st.floats(0, 0.99))
def test_simulated_fairness_against_eq37(per_flow_window, n_flows, alpha, beta, share):
    capacity_window = per_flow_window * n_flows
    delta_w0 = 1 + share * (beta * capacity_window - 1)
    epochs = _ceil_away_from_whole(math.log(delta_w0) / math.log(1 / beta)) if delta_w0 > 1 else 0
    epoch = _ceil_away_from_whole((1 - beta) * capacity_window / (n_flows * alpha))
    run = vr.simulate_fairness(capacity_window, n_flows, delta_w0, alpha, beta, transition=0.5)
    assert run.epochs == vr.epochs_to_fair(delta_w0, beta) == epochs
    assert vr.epoch_rounds(capacity_window, n_flows, alpha, beta) == epoch
    assert vr.rounds_to_fair(capacity_window, n_flows, delta_w0, alpha, beta) == epochs * epoch
    assert run.ai_rounds == sum(run.epoch_ai_rounds)
    if epochs:
        assert run.epoch_ai_rounds[0] == epoch
        assert set(run.epoch_ai_rounds[1:]) <= {epoch - 1, epoch}
        assert epochs * (epoch - 1) + 1 <= run.ai_rounds <= epochs * epoch
        assert beta < run.final_difference <= 1  # the run stopped at the first epoch that got there
    else:
        assert run.ai_rounds == 0


@given(mantissa_bits=st.integers(1, 4), alpha=st.sampled_from([0.5, 1, 2]), n_flows=st.integers(2, 6),
       epoch=st.integers(1, 30), share=st.floats(0, 0.99))
def test_simulated_fairness_equals_eq37_when_the_epoch_is_whole(mantissa_bits, alpha, n_flows, epoch, share):
    """(1 - beta) C T / (N alpha) = K exactly: every peak is C T and the run takes m K AI rounds."""
    beta = 1 - 2.0 ** -mantissa_bits  # 0.5, 0.75, 0.875, 0.9375
    capacity_window = epoch * n_flows * alpha * 2 ** mantissa_bits
    assume(beta * capacity_window > 1.5)
    delta_w0 = 1 + share * (beta * capacity_window - 1)
    run = vr.simulate_fairness(capacity_window, n_flows, delta_w0, alpha, beta, transition=0.5)
    assert run.epoch_ai_rounds == (epoch,) * run.epochs
    assert run.ai_rounds == vr.rounds_to_fair(capacity_window, n_flows, delta_w0, alpha, beta)


@given(windows=st.lists(st.floats(0.5, 50), min_size=2, max_size=4), capacity_window=st.floats(20, 400),
       rounds=st.integers(0, 60))
def test_run_rounds_applies_the_rule_of_each_rounds_load(windows, capacity_window, rounds):
    trace = vr.run_rounds(windows, capacity_window, rounds)
    assert trace.windows.shape == (rounds + 1, len(windows)) and len(trace.actions) == rounds
    for r, action in enumerate(trace.actions):
        before, after = trace.windows[r], trace.windows[r + 1]
        assert trace.load_factors[r] == pytest.approx(before.sum() / capacity_window, rel=1e-12)
        if not math.isclose(trace.load_factors[r], 0.8, rel_tol=1e-9) and not math.isclose(trace.load_factors[r], 1):
            assert action == vr.load_action(trace.load_factors[r])
        factor = {"MI": 1.0625, "AI": 1.0, "MD": 0.875}[action]
        assert after - after[0] == pytest.approx((before - before[0]) * factor, rel=1e-9, abs=1e-9)
        if action == "AI":
            assert after - before == pytest.approx([1.0] * len(windows))


def test_a_run_from_one_packet_claims_in_rounds_to_claim_then_settles_into_aimd():
    trace = vr.run_rounds([1], 1000, 300)
    claim = vr.rounds_to_claim(1000)
    assert trace.actions[:claim] == ("MI",) * claim and trace.actions[claim] == "AI"
    assert set(trace.actions[claim:]) == {"AI", "MD"}
    assert trace.windows[claim:].min() >= 0.8 * 1000 and trace.windows[claim:].max() < 1000 + 1


def test_load_action_reads_the_two_bit_code():
    assert [vr.load_action(rho) for rho in (0, 0.79, 0.8, 0.99, 1, 3)] == ["MI", "MI", "AI", "AI", "MD", "MD"]


# --- bad input ---------------------------------------------------------------------------------------

BAD = [
    (vr.rounds_to_claim, (1.0,), {}, "capacity"),
    (vr.rounds_to_claim, (1.1,), {}, "capacity"),  # 0.8 C < 1: below the starting aggregate
    (vr.rounds_to_claim, (1000,), {"xi": 0}, "xi"),
    (vr.rounds_to_claim, (1000,), {"xi": -0.1}, "xi"),
    (vr.rounds_to_claim, (1000,), {"transition": 1.0}, "transition"),
    (vr.rounds_to_claim, (1000,), {"transition": 0}, "transition"),
    (vr.simulate_claim, (0.5,), {}, "capacity"),
    (vr.simulate_claim, (1000,), {"xi": 1e-9, "max_rounds": 100}, "max_rounds"),
    (vr.rounds_to_release, (1000,), {"beta": 1.0}, "beta"),
    (vr.rounds_to_release, (1000,), {"beta": 0}, "beta"),
    (vr.rounds_to_release, (1000,), {"beta": 1.5}, "beta"),
    (vr.rounds_to_release, (1,), {}, "capacity"),
    (vr.rounds_to_release, (float("nan"),), {}, "capacity"),
    (vr.rounds_to_release, ("big",), {}, "capacity"),
    (vr.rounds_to_release, (True,), {}, "capacity"),
    (vr.simulate_release, (1000,), {"beta": -0.5}, "beta"),
    (vr.epoch_rounds, (1000, 0), {}, "n_flows"),
    (vr.epoch_rounds, (1000, 2.5), {}, "n_flows"),
    (vr.epoch_rounds, (1000, 2), {"alpha": 0}, "alpha"),
    (vr.epoch_rounds, (1000, 2), {"alpha": -1}, "alpha"),
    (vr.epoch_rounds, (0, 2), {}, "capacity_window"),
    (vr.epoch_rounds, (float("inf"), 2), {}, "capacity_window"),
    (vr.epoch_rounds, (1000, 2), {"beta": 1}, "beta"),
    (vr.simulate_epoch, (1000, 2), {"beta": 0.7}, "beta"),  # below the transition point 0.8
    (vr.epochs_to_fair, (0.5,), {}, "delta_w0"),
    (vr.epochs_to_fair, (10,), {"beta": 0}, "beta"),
    (vr.rounds_to_fair, (1000, 0, 10), {}, "n_flows"),
    (vr.simulate_fairness, (1000, 1, 10), {}, "n_flows"),
    (vr.simulate_fairness, (1000, 2, 875), {}, "delta_w0"),  # not below beta C T = 875
    (vr.simulate_fairness, (1000, 2, 0.5), {}, "delta_w0"),
    (vr.rounds_to_time, (-1,), {}, "rounds"),
    (vr.rounds_to_time, (1.5,), {}, "rounds"),
    (vr.rounds_to_time, (1, -1), {}, "md_rounds"),
    (vr.rounds_to_time, (1,), {"rtt": 0}, "rtt"),
    (vr.rounds_to_time, (1,), {"t_rho": -0.2}, "t_rho"),
    (vr.time_to_fair, (1000, 3, 100), {"rtt": -1}, "rtt"),
    (vr.run_rounds, ([], 100, 5), {}, "flow_windows"),
    (vr.run_rounds, ([1, -1], 100, 5), {}, "flow_windows"),
    (vr.run_rounds, ([1], 100, -1), {}, "rounds"),
    (vr.run_rounds, ([1], 0, 5), {}, "capacity_window"),
    (vr.load_action, (-1,), {}, "load_factor"),
]


@pytest.mark.parametrize("function, args, kwargs, field", BAD,
                         ids=[f"{f.__name__}-{field}-{i}" for i, (f, _, _, field) in enumerate(BAD)])
def test_bad_input_raises_parameter_error_naming_the_field(function, args, kwargs, field):
    with pytest.raises(ParameterError) as caught:
        function(*args, **kwargs)
    assert caught.value.field == field
    assert isinstance(caught.value, ValueError) and field in str(caught.value)
