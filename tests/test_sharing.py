"""Sharing rules: the QCP paper's examples, PS against ES, GES, QCP's eqs. (4)-(6) and (16), the ES fixed
point against single-link max-min with demands, and the errors bad inputs raise."""

from __future__ import annotations

import math
import re
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from fluidcc.errors import ParameterError, ShapeError
from fluidcc.maxmin import maxmin
from fluidcc.network import Flow, Link, Network
from fluidcc.sharing import (
    EfficientShareFixedPoint,
    GeneralizedShare,
    efficient_share_fixed_point,
    efficient_sharing,
    fractional_flow_count,
    generalized_efficient_sharing,
    processor_sharing,
    qcp_rate,
    weighted_qcp_rate,
)

PAPER = {"capacity": 100, "rates": [10, 50, 70], "previous_rate": 40}

exact_positive = st.one_of(st.integers(1, 1000), st.fractions(Fraction(1, 100), 1000)).filter(lambda v: v > 0)
exact_rates = st.lists(exact_positive, min_size=1, max_size=12)
float_positive = st.floats(0.01, 1000.0)


# ----------------------------------------------------------------------------- the paper's example
def test_paper_example_is_exactly_400_over_9() -> None:
    share = efficient_sharing(**PAPER)
    assert share == Fraction(400, 9) and isinstance(share, Fraction)
    # The same with the units sent in the interval given explicitly (n_k = R_k tau, tau = 1 s).
    assert efficient_sharing(**PAPER, interval=1, sent=[10, 50, 70]) == Fraction(400, 9)
    assert efficient_sharing(Fraction(100), [Fraction(10), 50, 70], Fraction(40)) == Fraction(400, 9)


def test_paper_example_in_float64() -> None:
    share = efficient_sharing(100.0, [10.0, 50.0, 70.0], 40.0)
    assert isinstance(share, np.float64)
    assert round(float(share), 2) == 44.44
    assert efficient_sharing(100, np.array([10.0, 50.0, 70.0]), 40) == pytest.approx(400 / 9, rel=1e-15)


def test_processor_sharing_gives_less_than_es_in_the_example() -> None:
    assert processor_sharing(100, 3) == Fraction(100, 3)
    assert round(float(processor_sharing(100.0, 3)), 1) == 33.3
    assert processor_sharing(100, 3) < efficient_sharing(**PAPER)


def test_example_counts_two_and_a_quarter_flows() -> None:
    assert fractional_flow_count(PAPER["rates"], PAPER["previous_rate"]) == Fraction(9, 4)
    assert fractional_flow_count(PAPER["rates"]) == 3


# ------------------------------------------------------------------------------------------ GES
@settings(deadline=None)
@given(capacity=exact_positive, rates=exact_rates, previous=st.one_of(st.none(), exact_positive),
       weight=exact_positive)
def test_ges_with_equal_weights_is_es(capacity, rates, previous, weight) -> None:
    unit = generalized_efficient_sharing(capacity, rates, [1] * len(rates), previous)
    expected = efficient_sharing(capacity, rates, previous) if previous is not None else Fraction(capacity, len(rates))
    assert unit.base_rate == expected
    assert list(unit.rates) == [expected] * len(rates)
    # Equal weights other than 1 give the same rates (the base rate scales by 1/weight).
    scaled = generalized_efficient_sharing(capacity, rates, [weight] * len(rates), previous)
    assert scaled.base_rate == expected / weight and list(scaled.rates) == list(unit.rates)


@settings(deadline=None)
@given(capacity=exact_positive, data=st.data(), previous=st.one_of(st.none(), exact_positive))
def test_ges_rates_are_proportional_to_the_weights(capacity, data, previous) -> None:
    rates = data.draw(exact_rates)
    weights = data.draw(st.lists(exact_positive, min_size=len(rates), max_size=len(rates)))
    result = generalized_efficient_sharing(capacity, rates, weights, previous)
    assert isinstance(result, GeneralizedShare)
    base, per_source = result
    assert all(rate == weight * base for rate, weight in zip(per_source, weights))
    # The same in float64, to rounding.
    floats = generalized_efficient_sharing(float(capacity), [float(r) for r in rates], [float(w) for w in weights],
                                           None if previous is None else float(previous))
    np.testing.assert_allclose(floats.rates, np.array(per_source, dtype=float), rtol=1e-12)


@settings(deadline=None)
@given(capacity=exact_positive, data=st.data())
def test_ges_without_previous_rate_is_gps(capacity, data) -> None:
    rates = data.draw(exact_rates)
    weights = data.draw(st.lists(exact_positive, min_size=len(rates), max_size=len(rates)))
    _, per_source = generalized_efficient_sharing(capacity, rates, weights)
    assert list(per_source) == [w * Fraction(capacity) / sum(weights) for w in weights]  # eq. (9)


def test_ges_paper_example_with_weights() -> None:
    # (10/40) 1 + (50/50) 2 + (70/70) 1 = 13/4 weighted flows.
    base, per_source = generalized_efficient_sharing(100, [10, 50, 70], [1, 2, 1], 40)
    assert base == Fraction(400, 13) and list(per_source) == [Fraction(400, 13), Fraction(800, 13), Fraction(400, 13)]


# ------------------------------------------------------------------------------------------ QCP
@settings(deadline=None)
@given(capacity=exact_positive, queue=st.integers(0, 50), interval=exact_positive, rates=exact_rates,
       alpha=exact_positive, beta=exact_positive, with_sent=st.booleans())
def test_weighted_qcp_with_unit_weights_is_qcp(capacity, queue, interval, rates, alpha, beta, with_sent) -> None:
    sent = [r * interval / 2 + 1 for r in rates] if with_sent else None
    weighted = weighted_qcp_rate(capacity, queue, interval, rates, [1] * len(rates), alpha=alpha, beta=beta, sent=sent)
    assert weighted == qcp_rate(capacity, queue, interval, rates, alpha=alpha, beta=beta, sent=sent)


@settings(deadline=None)
@given(capacity=exact_positive, queue=st.integers(0, 50), interval=exact_positive, data=st.data(),
       alpha=exact_positive, beta=exact_positive)
def test_weighted_qcp_fills_the_available_rate(capacity, queue, interval, data, alpha, beta) -> None:
    # Eq. (15): flows sending at their rate all interval count omega_i each, so sum_i omega_i R = alpha C - beta q/d.
    rates = data.draw(exact_rates)
    weights = data.draw(st.lists(exact_positive, min_size=len(rates), max_size=len(rates)))
    rate = weighted_qcp_rate(capacity, queue, interval, rates, weights, alpha=alpha, beta=beta)
    assert sum(w * rate for w in weights) == alpha * capacity - beta * Fraction(queue) / interval


@settings(deadline=None)
@given(capacity=exact_positive, share=exact_positive, n_flows=st.integers(1, 40), interval=exact_positive)
def test_qcp_counts_n_flows_sending_at_the_share(capacity, share, n_flows, interval) -> None:
    # Eqs. (5)-(6): every flow sent at R for the interval, so (1/d) sum_j 1/R_j = N and eq. (4) is C/N.
    rates = [share] * n_flows
    assert fractional_flow_count(rates, share, interval=interval) == n_flows
    assert qcp_rate(capacity, 0, interval, rates, alpha=1) == Fraction(capacity, n_flows)
    assert qcp_rate(capacity, 0, interval, rates, previous_rate=share, alpha=1) == Fraction(capacity, n_flows)
    expected = (Fraction(1, 2) * capacity - Fraction(3, 10) * 7 / Fraction(interval)) / n_flows
    assert qcp_rate(capacity, 7, interval, rates, alpha=Fraction(1, 2), beta=Fraction(3, 10)) == expected


def test_qcp_eq6_with_windows_and_rtts() -> None:
    # n_i / d = w_i / RTT_i: three flows with windows (units) and RTTs (s), interval d = 1/10 s.
    windows, rtts, interval = [30, 12, 50], [Fraction(1, 5), Fraction(3, 100), Fraction(1, 2)], Fraction(1, 10)
    rates = [w / rtt for w, rtt in zip(windows, rtts)]
    sent = [interval * r for r in rates]
    assert fractional_flow_count(rates, interval=interval, sent=sent) == 3
    assert qcp_rate(600, 0, interval, rates, sent=sent) == 200


def test_fractional_flows() -> None:
    # A flow bottlenecked elsewhere at 10 < R(t - d) = 40 counts 1/4; one that sent half its rate's bytes, 1/2.
    assert fractional_flow_count([10, 40], 40) == Fraction(5, 4)
    assert fractional_flow_count([40, 40], interval=2, sent=[40, 80]) == Fraction(3, 2)
    assert qcp_rate(100, 0, 1, [10, 40], previous_rate=40) == 80
    # Above the previous share a flow counts one (eq. (12)); a burst (more bytes than R d) counts more.
    assert fractional_flow_count([80, 40], 40) == 2
    assert fractional_flow_count([80, 40], 40, sent=[160, 40]) == 3
    assert fractional_flow_count([80, 40], 40, sent=[40, 40]) == Fraction(3, 2)


def test_float_and_exact_agree() -> None:
    exact = qcp_rate(1000, 30, Fraction(1, 10), [10, 200, 400], previous_rate=150, alpha=Fraction(1, 2), beta=1)
    floating = qcp_rate(1000.0, 30.0, 0.1, [10.0, 200.0, 400.0], previous_rate=150.0, alpha=0.5, beta=1.0)
    assert isinstance(exact, Fraction) and isinstance(floating, np.float64)
    assert floating == pytest.approx(float(exact), rel=1e-14)


def test_large_queue_gives_eq4_as_written() -> None:
    # No floor: beta q > alpha C d makes eq. (4) negative.
    assert qcp_rate(100, 50, Fraction(1, 10), [10, 10]) < 0


# ------------------------------------------------------------------- ES fixed point vs max-min
demand = st.one_of(st.floats(0.5, 500.0), st.just(math.inf))


def _one_link_maxmin(capacity: float, demands: list[float]) -> np.ndarray:
    network = Network((Link("l", capacity),), tuple(Flow(f"f{k}", ("l",), demand_pps=d) for k, d in enumerate(demands)))
    return maxmin(network).rates_pps


@settings(deadline=None)
@given(capacity=st.floats(1.0, 1000.0), demands=st.lists(demand, min_size=1, max_size=30))
def test_es_fixed_point_is_work_conserving_and_max_min(capacity, demands) -> None:
    iterated = efficient_share_fixed_point(capacity, demands)
    direct = efficient_share_fixed_point(capacity, demands, method="direct")
    assert isinstance(iterated, EfficientShareFixedPoint) and iterated.converged
    assert iterated.demands_fit == direct.demands_fit == (sum(demands) <= capacity)
    if sum(demands) > capacity:
        assert iterated.load == pytest.approx(capacity, rel=1e-9)
        assert direct.load == pytest.approx(capacity, rel=1e-12)
        assert iterated.rate == pytest.approx(direct.rate, abs=1e-9 * capacity)
        assert iterated.rate <= capacity * (1 + 1e-12)
    else:
        assert iterated.rate == direct.rate == capacity
        np.testing.assert_array_equal(iterated.source_rates, demands)
    reference = _one_link_maxmin(capacity, demands)
    np.testing.assert_allclose(iterated.source_rates, reference, rtol=0, atol=1e-9 * capacity)
    np.testing.assert_allclose(direct.source_rates, reference, rtol=1e-12, atol=1e-12 * capacity)


@settings(deadline=None)
@given(capacity=st.floats(1.0, 1000.0), data=st.data())
def test_ps_leaves_capacity_unused_where_es_does_not(capacity, data) -> None:
    n = data.draw(st.integers(2, 20))
    fair = capacity / n
    small = data.draw(st.floats(0.01 * fair, 0.99 * fair))  # a source bottlenecked elsewhere
    others = data.draw(st.lists(st.floats(fair, 10 * capacity), min_size=n - 1, max_size=n - 1))
    demands = [small, *others]
    assume(sum(demands) > capacity * (1 + 1e-6))
    ps_load = sum(min(d, processor_sharing(capacity, n)) for d in demands)
    assert ps_load < capacity * (1 - 1e-9)
    es = efficient_share_fixed_point(capacity, demands)
    assert es.load == pytest.approx(capacity, rel=1e-9)
    assert es.rate > processor_sharing(capacity, n)


@settings(deadline=None)
@given(capacity=exact_positive, demands=st.lists(exact_positive, min_size=1, max_size=12))
def test_direct_fixed_point_is_exact(capacity, demands) -> None:
    result = efficient_share_fixed_point(capacity, demands, method="direct")
    assert isinstance(result.rate, Fraction)
    if sum(demands) > capacity:
        assert result.load == capacity
        # R* is a fixed point of eq. (8) with each source sending min(d_k, R*).
        assert efficient_sharing(capacity, list(result.source_rates), result.rate) == result.rate
    else:
        assert result.rate == capacity and list(result.source_rates) == demands


def test_fixed_point_of_the_paper_example() -> None:
    result = efficient_share_fixed_point(100, [10, 50, 70], method="direct")
    assert result.rate == 45 and list(result.source_rates) == [10, 45, 45]
    iterated = efficient_share_fixed_point(100, [10, 50, 70])
    assert iterated.rate == pytest.approx(45, rel=1e-10) and iterated.iterations > 1
    # From the paper's R(t - d) = 40 the sources send min(d_k, 40): one ES step gives 400/9, still below R* = 45.
    assert efficient_sharing(100, [10, 40, 40], 40) == Fraction(100, 90) * 40


def test_iteration_reports_non_convergence() -> None:
    result = efficient_share_fixed_point(1000.0, [0.999] * 999 + [math.inf], max_iterations=5)
    assert not result.converged and result.iterations == 5


# ------------------------------------------------------------------------------------- errors
GOOD = {"capacity": 100, "rates": [10, 50, 70], "previous_rate": 40}
QCP = {"capacity": 100, "queue": 0, "interval": 0.1, "rates": [10, 50, 70]}
BAD_INPUTS = [
    (processor_sharing, {"capacity": 0, "n_flows": 3}, "capacity"),
    (processor_sharing, {"capacity": 100, "n_flows": 0}, "n_flows"),
    (processor_sharing, {"capacity": 100, "n_flows": 2.0}, "n_flows"),
    (processor_sharing, {"capacity": 100, "n_flows": True}, "n_flows"),
    (efficient_sharing, {**GOOD, "capacity": math.inf}, "capacity"),
    (efficient_sharing, {**GOOD, "capacity": "100"}, "capacity"),
    (efficient_sharing, {**GOOD, "rates": [10, -1, 70]}, "rates[1]"),
    (efficient_sharing, {**GOOD, "rates": [10, 0, 70]}, "rates[1]"),
    (efficient_sharing, {**GOOD, "rates": [10.0, math.nan]}, "rates[1]"),
    (efficient_sharing, {**GOOD, "rates": []}, "rates"),
    (efficient_sharing, {**GOOD, "rates": 10}, "rates"),
    (efficient_sharing, {**GOOD, "rates": np.ones((2, 2))}, "rates"),
    (efficient_sharing, {**GOOD, "rates": [10, True]}, "rates[1]"),
    (efficient_sharing, {**GOOD, "previous_rate": 0}, "previous_rate"),
    (efficient_sharing, {**GOOD, "interval": 0}, "interval"),
    (efficient_sharing, {**GOOD, "interval": -0.5}, "interval"),
    (efficient_sharing, {**GOOD, "sent": [10, 50]}, "sent"),
    (efficient_sharing, {**GOOD, "sent": [10, -1, 70]}, "sent[1]"),
    (efficient_sharing, {**GOOD, "sent": [0, 0, 0]}, "sent"),
    (generalized_efficient_sharing, {**GOOD, "weights": [1, 0, 1]}, "weights[1]"),
    (generalized_efficient_sharing, {**GOOD, "weights": [1, math.nan, 1]}, "weights[1]"),
    (generalized_efficient_sharing, {**GOOD, "weights": [1, 1]}, "weights"),
    (generalized_efficient_sharing, {**GOOD, "weights": [1, 1, -2]}, "weights[2]"),
    (generalized_efficient_sharing, {**GOOD, "weights": [1, 1, 1], "previous_rate": -40}, "previous_rate"),
    (fractional_flow_count, {"rates": [1.0, math.inf]}, "rates[1]"),
    (fractional_flow_count, {"rates": [1, 2], "previous_rate": math.nan}, "previous_rate"),
    (qcp_rate, {**QCP, "queue": -1}, "queue"),
    (qcp_rate, {**QCP, "alpha": 0}, "alpha"),
    (qcp_rate, {**QCP, "beta": -1}, "beta"),
    (qcp_rate, {**QCP, "beta": 0}, "beta"),
    (qcp_rate, {**QCP, "interval": 0}, "interval"),
    (qcp_rate, {**QCP, "capacity": -100}, "capacity"),
    (qcp_rate, {**QCP, "previous_rate": 0}, "previous_rate"),
    (weighted_qcp_rate, {**QCP, "weights": [1, 2]}, "weights"),
    (weighted_qcp_rate, {**QCP, "weights": [1, 2, 0]}, "weights[2]"),
    (weighted_qcp_rate, {**QCP, "weights": [1, 1, 1], "alpha": -1}, "alpha"),
    (efficient_share_fixed_point, {"capacity": 0, "demands": [1]}, "capacity"),
    (efficient_share_fixed_point, {"capacity": 10, "demands": [1, 0]}, "demands[1]"),
    (efficient_share_fixed_point, {"capacity": 10, "demands": [math.nan]}, "demands[0]"),
    (efficient_share_fixed_point, {"capacity": 10, "demands": []}, "demands"),
    (efficient_share_fixed_point, {"capacity": 10, "demands": [1], "method": "newton"}, "method"),
    (efficient_share_fixed_point, {"capacity": 10, "demands": [1], "tol": 0}, "tol"),
    (efficient_share_fixed_point, {"capacity": 10, "demands": [1], "max_iterations": 0}, "max_iterations"),
]


@pytest.mark.parametrize(("function", "arguments", "field"), BAD_INPUTS,
                         ids=[f"{f.__name__}-{field}-{i}" for i, (f, _, field) in enumerate(BAD_INPUTS)])
def test_bad_input_names_the_field(function, arguments, field) -> None:
    with pytest.raises(ParameterError, match="^" + re.escape(field)) as caught:
        function(**arguments)
    assert caught.value.field == field
    assert "is not allowed" in str(caught.value) and caught.value.allowed


def test_error_carries_the_first_bad_value_and_its_position() -> None:
    with pytest.raises(ParameterError, match=r"weights\[1\] = 0 ") as caught:
        generalized_efficient_sharing(100, [10, 50, 70], [1, 0, -1])
    assert caught.value.value == 0
    with pytest.raises(ShapeError, match="weights"):
        generalized_efficient_sharing(100, [10, 50, 70], [1, 1])
