"""Sharing rules of explicit congestion control: processor sharing, efficient sharing and QCP's rate.

Equations are those of the QCP paper (Quick Congestion Control, sections 4-8):

* processor sharing (PS), eq. (9) with equal weights: R = X / N;
* efficient sharing (ES), Definition 1: R(t) = X / ((1/tau) sum_j 1/Ř_j), eq. (8), with the max
  rule Ř_j = max(R_j, R(t - d)) of eq. (7);
* generalized efficient sharing (GES), eqs. (10)-(11): R(t) = X / ((1/tau) sum_j phi_j/Ř_j), and
  the source of unit j then gets phi_j R(t);
* QCP's rate, eq. (4): R(t) = (alpha C d - beta q) / sum_j 1/R_j = (alpha C - beta q/d) / N_a,
  with eq. (12)'s Ř_j in place of R_j when the previous rate R(t - d) is given;
* weighted QCP, eqs. (15)-(16): R(t) = (alpha C d - beta q) / sum_j omega_j/R_j;
* `efficient_share_fixed_point`: where eq. (8) settles when source k is bottlenecked elsewhere at
  its demand d_k: sum_k min(d_k, R*) = X, single-link max-min fairness with demands (section 6.1's
  claim that ES is work-conserving where PS is not).

Per-source form
---------------
The paper sums over the units (bytes, packets) that reach the router in one interval, each unit
carrying its source's rate. Here the sources are given instead: source i sends at the rate R_i and
puts n_i units into the interval tau (``sent``; by default n_i = R_i tau, the source sent at R_i for
the whole interval). Its n_i units all carry R_i, so the paper's sums become

    (1/tau) sum_j phi_j/Ř_j = sum_i (n_i/tau) phi_i/Ř_i   ( = sum_i phi_i R_i/Ř_i by default),

the *flow count* (weighted by phi). Without the max rule (Ř_i = R_i) and with the default ``sent``
every source counts phi_i, so GES is GPS (eq. (9)) and QCP is PS (eqs. (5)-(6)). With the max rule
a source sending below the previous share counts R_i/R(t - d) < 1 (a fractional flow, section
6.2), which is how ES hands the capacity it cannot use to the other sources.

Numbers
-------
Rates are in units per second, intervals in seconds, ``queue`` and ``sent`` in units (bytes or
packets: one unit throughout). When every numeric input is an int or a `fractions.Fraction`
(NumPy integer arrays included) the arithmetic is exact and the results are `Fraction`s (arrays of
dtype object); otherwise it is float64 (NumPy scalars and arrays). Defaults such as ``interval=1``
are ints and do not force float64.

Rates must be > 0: a source sending at rate 0 puts no unit into the interval, so the router never
sees it; leave it out. Bad input raises `fluidcc.errors.ParameterError` (`ShapeError` for lengths)
naming the field (``"weights[2]"`` for the first bad element), the value and what is allowed.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Literal, NamedTuple, Union

import numpy as np

from .errors import ParameterError, ShapeError

__all__ = [
    "EfficientShareFixedPoint",
    "GeneralizedShare",
    "efficient_share_fixed_point",
    "efficient_sharing",
    "fractional_flow_count",
    "generalized_efficient_sharing",
    "processor_sharing",
    "qcp_rate",
    "weighted_qcp_rate",
]

Number = Union[float, Fraction]

_POSITIVE = "a finite number > 0"
_NONNEGATIVE = "a finite number >= 0"


# ------------------------------------------------------------------------------- validation
def _is_rational(value: Any) -> bool:
    return isinstance(value, numbers.Rational) and not isinstance(value, (bool, np.bool_))


def _sequence(values: Any, field: str) -> list | np.ndarray:
    if isinstance(values, np.ndarray):
        return values
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        raise ParameterError(field, values, "a 1-D sequence of numbers, one per source")
    return list(values)


def _all_rational(*inputs: Any) -> bool:
    """True when every number among the inputs (scalars, lists, arrays; None skipped) is exact."""
    for value in inputs:
        if value is None:
            continue
        if isinstance(value, np.ndarray):
            if value.dtype.kind in "iu":
                continue
            if value.dtype != object:
                return False
            value = value.ravel().tolist()
        items = value if isinstance(value, list) else [value]
        if not all(_is_rational(item) for item in items):
            return False
    return True


def _valid(array: np.ndarray, zero_ok: bool, inf_ok: bool) -> np.ndarray:
    above = array >= 0 if zero_ok else array > 0
    if array.dtype == object:
        return np.asarray(above, dtype=bool)
    return above & (~np.isnan(array) if inf_ok else np.isfinite(array))


def _scalar(value: Any, field: str, exact: bool, allowed: str, *, zero_ok: bool = False) -> Number:
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise ParameterError(field, value, allowed)
    try:
        number = Fraction(value) if exact else float(value)
    except OverflowError:
        raise ParameterError(field, value, allowed) from None
    if not ((number >= 0 if zero_ok else number > 0) and (exact or math.isfinite(number))):
        raise ParameterError(field, value, allowed)
    return number


def _vector(values: list | np.ndarray, field: str, exact: bool, allowed: str, *, zero_ok: bool = False,
            inf_ok: bool = False, length: int | None = None) -> np.ndarray:
    """A checked 1-D array: float64, or dtype object holding Fractions when `exact`."""
    shape_rule = "a non-empty 1-D sequence of numbers, one per source"
    if isinstance(values, np.ndarray) and values.ndim != 1:
        raise ShapeError(field, f"shape {values.shape}", shape_rule)
    items = values.tolist() if isinstance(values, np.ndarray) else values
    if not (isinstance(values, np.ndarray) and values.dtype.kind in "iuf"):
        for k, item in enumerate(items):
            if isinstance(item, (bool, np.bool_)) or not isinstance(item, numbers.Real):
                raise ParameterError(f"{field}[{k}]", item, allowed)
    if exact:
        array = np.empty(len(items), dtype=object)
        array[:] = [Fraction(item) for item in items]
    else:
        try:
            array = np.asarray(items, dtype=np.float64)
        except (TypeError, ValueError, OverflowError):
            raise ParameterError(field, values, shape_rule) from None
    if array.ndim != 1:
        raise ShapeError(field, f"shape {array.shape}", shape_rule)
    if array.size == 0:
        raise ShapeError(field, "shape (0,)", shape_rule)
    if length is not None and array.size != length:
        raise ShapeError(field, f"{array.size} values", f"one value per source in rates ({length})")
    ok = _valid(array, zero_ok, inf_ok)
    if not ok.all():
        k = int(np.argmin(ok))
        raise ParameterError(f"{field}[{k}]", items[k], allowed)
    return array


def _output(value: Number, exact: bool) -> Number:
    return Fraction(value) if exact else np.float64(value)


class _Sources(NamedTuple):
    rates: np.ndarray
    weights: np.ndarray | None
    previous_rate: Number | None
    interval: Number
    sent: np.ndarray | None


def _sources(exact: bool, rates, weights, previous_rate, interval, sent) -> _Sources:
    checked = _vector(rates, "rates", exact, _POSITIVE + " (units/s; a source at rate 0 sends nothing: omit it)")
    n = checked.size
    return _Sources(
        rates=checked,
        weights=None if weights is None else _vector(weights, "weights", exact, _POSITIVE, length=n),
        previous_rate=None if previous_rate is None else _scalar(previous_rate, "previous_rate", exact,
                                                                _POSITIVE + " (units/s)"),
        interval=_scalar(interval, "interval", exact, _POSITIVE + " (s)"),
        sent=None if sent is None else _vector(sent, "sent", exact, _NONNEGATIVE + " (units)", zero_ok=True,
                                               length=n),
    )


def _flow_count(sources: _Sources) -> Number:
    """(1/tau) sum_i n_i phi_i / Ř_i: the denominator of eqs. (4), (8), (11) and (16) over the interval.

    Ř_i = max(R_i, R(t - d)) (eqs. (7), (12)) when a previous rate is given, else R_i; n_i/tau is
    the rate at which source i's units arrive in the interval (R_i unless ``sent`` is given).
    """
    rates, weights, previous, interval, sent = sources
    carried = rates if previous is None else np.where(rates >= previous, rates, previous)
    arriving = rates if sent is None else sent / interval
    terms = arriving / carried if weights is None else arriving * weights / carried
    return terms.sum()


def _share(available: Number, sources: _Sources, sent: Any) -> Number:
    count = _flow_count(sources)
    if count == 0:
        raise ParameterError("sent", sent, "at least one source with units sent > 0 in the interval "
                                           "(with none the flow count is 0 and the share unbounded)")
    return available / count


# ----------------------------------------------------------------------------------- rules
def processor_sharing(capacity: Number, n_flows: int) -> Number:
    """Processor sharing: X / N, QCP paper eq. (9) with equal weights (units/s).

    capacity: X, units/s, finite and > 0. n_flows: N, a whole number >= 1.
    """
    exact = _all_rational(capacity)
    available = _scalar(capacity, "capacity", exact, _POSITIVE + " (units/s)")
    if isinstance(n_flows, (bool, np.bool_)) or not isinstance(n_flows, numbers.Integral) or n_flows < 1:
        raise ParameterError("n_flows", n_flows, "a whole number of flows >= 1")
    return _output(available / int(n_flows), exact)


def efficient_sharing(capacity: Number, rates, previous_rate: Number, *, interval: Number = 1,
                      sent=None) -> Number:
    """The Efficient Share of Definition 1 (QCP paper eq. (8) with eq. (7)), units/s.

    R(t) = X / sum_k (n_k/tau) / max(R_k, R(t - d)), which is X / sum_k R_k / max(R_k, R(t - d))
    when each source sent at its rate for the whole interval (``sent=None``).

    capacity: X, units/s. rates: R_k, the sources' current sending rates, units/s, each > 0.
    previous_rate: R(t - d), the share offered in the previous interval, units/s, > 0.
    interval: tau, s, > 0. sent: n_k, units each source put into the interval (>= 0, not all 0);
    None means n_k = R_k tau.

    The paper's example: X = 100, rates 10, 50, 70, R(t - d) = 40 give 100 / 2.25 = 400/9.
    """
    rates, sent = _sequence(rates, "rates"), None if sent is None else _sequence(sent, "sent")
    exact = _all_rational(capacity, rates, previous_rate, interval, sent)
    available = _scalar(capacity, "capacity", exact, _POSITIVE + " (units/s)")
    return _output(_share(available, _sources(exact, rates, None, previous_rate, interval, sent), sent), exact)


class GeneralizedShare(NamedTuple):
    """The result of generalized efficient sharing (QCP paper eqs. (10)-(11)).

    base_rate: R(t) of eq. (11), the share of one unit of weight, units/s.
    rates: phi_j R(t), the rate each source gets, units/s, shape (N,) (proportional to the weights).
    """

    base_rate: Number
    rates: np.ndarray


def generalized_efficient_sharing(capacity: Number, rates, weights, previous_rate: Number | None = None, *,
                                  interval: Number = 1, sent=None) -> GeneralizedShare:
    """Generalized efficient sharing, QCP paper eqs. (10)-(11): per-source rates phi_j R(t).

    R(t) = X / sum_k (n_k/tau) phi_k / Ř_k, which is X / sum_k phi_k R_k / Ř_k with ``sent=None``;
    Ř_k = max(R_k, previous_rate) (eq. (7)) when previous_rate is given, else R_k, in which case
    (with ``sent=None``) every source counts phi_k and this is GPS, eq. (9): phi_j X / sum_k phi_k.
    With equal weights 1, base_rate is `efficient_sharing`'s R(t).

    capacity: X, units/s. rates: R_k, units/s, each > 0. weights: phi_k, each > 0, one per source.
    previous_rate: R(t - d), units/s, or None. interval, sent: as in `efficient_sharing`.
    Returns a `GeneralizedShare` (base_rate, rates); unpack it as ``base, per_source = ...``.
    """
    rates, weights = _sequence(rates, "rates"), _sequence(weights, "weights")
    sent = None if sent is None else _sequence(sent, "sent")
    exact = _all_rational(capacity, rates, weights, previous_rate, interval, sent)
    available = _scalar(capacity, "capacity", exact, _POSITIVE + " (units/s)")
    sources = _sources(exact, rates, weights, previous_rate, interval, sent)
    base = _output(_share(available, sources, sent), exact)
    return GeneralizedShare(base, sources.weights * base)


def fractional_flow_count(rates, previous_rate: Number | None = None, *, interval: Number = 1,
                          sent=None) -> Number:
    """The number of flows QCP counts, N_a: the denominator of eq. (4) divided by d (eqs. (5), (13)).

    N_a = (1/d) sum_j 1/Ř_j = sum_i (n_i/d) / Ř_i, with Ř_i = max(R_i, R(t - d)) (eq. (12)) when
    previous_rate is given, else R_i. With ``sent=None`` (n_i = R_i d) a flow counts 1 without the
    max rule (eq. (6): QCP counts N) and min(1, R_i / R(t - d)) with it: a flow bottlenecked
    elsewhere, below the previous share, is a fraction of a flow. Eq. (13)'s y / R(t - d) is the
    simplified estimate of this count, not computed here.

    rates: R_i, units/s, each > 0. previous_rate: R(t - d), units/s, or None. interval: d, s.
    sent: n_i, units each flow put into the interval (>= 0), or None for n_i = R_i d.
    """
    rates, sent = _sequence(rates, "rates"), None if sent is None else _sequence(sent, "sent")
    exact = _all_rational(rates, previous_rate, interval, sent)
    return _output(_flow_count(_sources(exact, rates, None, previous_rate, interval, sent)), exact)


def _qcp(capacity, queue, interval, rates, weights, previous_rate, alpha, beta, sent) -> Number:
    """(alpha C - beta q/d) / ((1/d) sum_j omega_j / Ř_j): eqs. (4), (12) and (16) in one."""
    rates = _sequence(rates, "rates")
    weights = None if weights is None else _sequence(weights, "weights")
    sent = None if sent is None else _sequence(sent, "sent")
    exact = _all_rational(capacity, queue, interval, rates, weights, previous_rate, alpha, beta, sent)
    link = _scalar(capacity, "capacity", exact, _POSITIVE + " (units/s)")
    backlog = _scalar(queue, "queue", exact, _NONNEGATIVE + " (units)", zero_ok=True)
    gain = _scalar(alpha, "alpha", exact, _POSITIVE)
    drain = _scalar(beta, "beta", exact, _POSITIVE)
    sources = _sources(exact, rates, weights, previous_rate, interval, sent)
    available = gain * link - drain * backlog / sources.interval
    return _output(_share(available, sources, sent), exact)


def qcp_rate(capacity: Number, queue: Number, interval: Number, rates, *, previous_rate: Number | None = None,
             alpha: Number = 1, beta: Number = 1, sent=None) -> Number:
    """QCP's rate, QCP paper eq. (4), with eq. (12)'s max rule when previous_rate is given, units/s.

    R(t) = (alpha C d - beta q) / sum_j 1/Ř_j = (alpha C - beta q/d) / N_a, with N_a the
    `fractional_flow_count` of the flows. When every flow sent at R(t - d) (and ``sent=None``),
    N_a = N and R(t) = (alpha C - beta q/d) / N, C/N at alpha = 1, q = 0 (eqs. (5)-(6)).

    capacity: C, units/s. queue: q, units, >= 0. interval: d, s. rates: R_i, units/s, each > 0.
    previous_rate: R(t - d), units/s, or None (no max rule). alpha > 0, beta > 0: gains.
    sent: n_i, units each flow put into the interval, or None for n_i = R_i d.
    The value is eq. (4) as written: it is <= 0 when beta q >= alpha C d (no floor is applied).
    """
    return _qcp(capacity, queue, interval, rates, None, previous_rate, alpha, beta, sent)


def weighted_qcp_rate(capacity: Number, queue: Number, interval: Number, rates, weights, *,
                      alpha: Number = 1, beta: Number = 1, sent=None) -> Number:
    """Weighted QCP's rate per unit of weight, QCP paper eq. (16), units/s; flow j then sends omega_j R(t).

    R(t) = (alpha C d - beta q) / sum_j omega_j / R_j, the sum over the units of the interval.
    Per flow: flow i put n_i units into the interval, each carrying omega_i / R_i, so
    R(t) = (alpha C - beta q/d) / sum_i (n_i/d) omega_i / R_i. With ``sent=None`` (n_i = R_i d: the
    flow sent at R_i all interval) flow i counts omega_i whatever its rate, so
    R(t) = (alpha C - beta q/d) / sum_i omega_i and the flows' rates omega_i R(t) add up to
    alpha C - beta q/d (eq. (15)); the rates then matter only through ``sent``. With all weights 1
    this is `qcp_rate` without the max rule.

    capacity: C, units/s. queue: q, units, >= 0. interval: d, s. rates: R_i, units/s, each > 0.
    weights: omega_i, each > 0, one per flow. alpha > 0, beta > 0. sent: n_i, units, or None.
    """
    return _qcp(capacity, queue, interval, rates, weights, None, alpha, beta, sent)


# ----------------------------------------------------------------------------- fixed point
@dataclass(frozen=True)
class EfficientShareFixedPoint:
    """Where efficient sharing settles on one link whose sources have demands.

    rate: R*, the share the link offers every source, units/s (the capacity when demands fit).
    source_rates: min(d_k, R*), what each source sends, units/s, shape (N,).
    demands_fit: sum_k d_k <= X: every source sends its demand and capacity may stay unused.
    method: "iterate" or "direct". iterations: ES updates made (0 for "direct").
    converged: the iteration met its tolerance (always True for "direct").
    """

    rate: Number
    source_rates: np.ndarray
    demands_fit: bool
    method: str
    iterations: int
    converged: bool

    @property
    def load(self) -> Number:
        """sum_k min(d_k, R*), the traffic on the link, units/s (X when the demands exceed it)."""
        return self.source_rates.sum()


def efficient_share_fixed_point(capacity: Number, demands, *, method: Literal["iterate", "direct"] = "iterate",
                                tol: float = 1e-12, max_iterations: int = 100_000) -> EfficientShareFixedPoint:
    """The fixed point of efficient sharing (eq. (8)) on one link where source k sends min(d_k, R).

    A source bottlenecked elsewhere at d_k (its demand) sends min(d_k, R(t - d)), so its Ř_k is
    R(t - d) and eq. (8) becomes the map

        R <- X / sum_k min(d_k, R) / R = X R / S(R),     S(R) = sum_k min(d_k, R).

    R / S(R) is nondecreasing, so the map is monotone and R <- X R / S(R) moves towards the
    fixed point S(R*) = X from either side: ES is work-conserving. When sum_k d_k > X the root is
    unique, R* <= X and min(d_k, R*) is single-link max-min fairness with demands (water-filling).
    When the demands fit (sum_k d_k <= X), once R >= max_k d_k the uncapped map multiplies R by
    X / sum_k d_k >= 1 each step, and every such R lets each source send its demand; no source can
    use more than the link, so the offered rate is capped at X and R* = X is reported with
    ``demands_fit=True``.

    method: "iterate" runs the capped map R <- min(X, X R / S(R)) from R = X in float64 until the
        relative step |X / S(R) - 1| is <= tol (the load is then within tol of X, unless the
        demands fit and the cap holds R at X) or max_iterations ES updates. Near R* the step
        shrinks by the factor 1 - m R* / X per update, m the sources with d_k > R*; as
        X = S(R*) <= N R*, that is at most 1 - 1/N, so about N ln(1/tol) updates suffice.
        "direct" solves S(R) = X by sorting the demands: exact (Fractions) with int/Fraction inputs.
    capacity: X, units/s, > 0. demands: d_k, units/s, each > 0 (inf: no cap elsewhere; it forces
        float64 — a demand of X is the exact equivalent).
    """
    demands = _sequence(demands, "demands")
    if method not in ("iterate", "direct"):
        raise ParameterError("method", method, "'iterate' or 'direct'")
    exact = method == "direct" and _all_rational(capacity, demands)
    available = _scalar(capacity, "capacity", exact, _POSITIVE + " (units/s)")
    wants = _vector(demands, "demands", exact, "a number > 0 units/s (inf: no cap)", inf_ok=True)
    demands_fit = bool(wants.sum() <= available)
    if method == "direct":
        rate = available if demands_fit else _water_level(available, sorted(wants.tolist()))
        return EfficientShareFixedPoint(_output(rate, exact), np.minimum(wants, rate), demands_fit, method, 0, True)

    if isinstance(tol, bool) or not isinstance(tol, numbers.Real) or not (0 < tol < 1):
        raise ParameterError("tol", tol, "a relative tolerance with 0 < tol < 1")
    if isinstance(max_iterations, bool) or not isinstance(max_iterations, numbers.Integral) or max_iterations < 1:
        raise ParameterError("max_iterations", max_iterations, "a whole number >= 1")
    rate, converged, iterations = available, False, 0
    while iterations < max_iterations and not converged:
        iterations += 1
        updated = min(available, available * rate / np.minimum(wants, rate).sum())
        converged = bool(abs(updated - rate) <= tol * rate)
        rate = updated
    return EfficientShareFixedPoint(np.float64(rate), np.minimum(wants, rate), demands_fit, method, iterations,
                                    converged)


def _water_level(available: Number, ascending: list) -> Number:
    """The R with sum_k min(d_k, R) = X for demands (sorted ascending) adding up to more than X."""
    below = 0
    for k, demand in enumerate(ascending):
        remaining = len(ascending) - k
        if below + remaining * demand >= available:
            return (available - below) / remaining
        below += demand
    raise AssertionError("the demands add up to more than the capacity, so a level exists")
