"""The MI/AI/MD round model of VCP behind Theorems 3 and 4 (VCP paper, sections 3.3-3.4, 5, 11.3-11.4).

N flows with one RTT share one link whose capacity, in packets per round, is the capacity window
C T (packets). As in section 3.3 a round is one RTT and the RTT equals the load-factor interval
t_rho, so every flow hears the same load factor at the same time. In each round the link reads
the aggregate window w = sum_i w_i as the load factor rho = w / (C T) (eq. (1) without a queue;
pass gamma C T as the capacity window to model a target utilization gamma < 1), quantizes it into
the 2-bit code and every flow applies one rule:

    rho <  transition        low load   MI:  w_i <- w_i (1 + xi)       (2)
    transition <= rho < 1    high load  AI:  w_i <- w_i + alpha         (3)  (the aggregate gains N alpha)
    rho >= 1                 overload   MD:  w_i <- w_i beta            (4)

with transition = 0.8, xi = xi(80 %) = 0.0625 from eq. (5) with kappa = 0.25, alpha = 1 and
beta = 0.875 (section 3.3, Table 1).

**Closed forms** (each the ceiling of the paper's real-valued count, evaluated exactly):

* `rounds_to_claim`, eq. (35): MI rounds from aggregate 1 to transition C,
  ceil(log(transition C) / log(1 + xi)).
* `rounds_to_release`, eq. (36): MD rounds from aggregate C to 1, ceil(log C / log(1/beta)).
* `epoch_rounds` (section 11.4): AI rounds from beta C T to C T, ceil((1 - beta) C T / (N alpha)).
* `epochs_to_fair` (section 11.4): epochs (MDs) that shrink a window difference from delta_w0 to 1,
  ceil(log delta_w0 / log(1/beta)).
* `rounds_to_fair`, eq. (37): epochs_to_fair * epoch_rounds, the product of the two ceilings (the
  paper's m times the paper's epoch, each rounded up on its own, since both count whole rounds).

Each ceiling is the smallest whole number of rounds that reaches the target: e.g. eq. (35) is the
smallest m >= 0 with (1 + xi)^m >= transition C. So a count lands exactly on its boundary (beta = 0.5,
C = 2^k gives k MD rounds, not k + 1).

**The simulation** (`simulate_claim`, `simulate_release`, `simulate_epoch`, `simulate_fairness`,
`run_rounds`) iterates the rules above round by round and counts; it does not use the closed
forms. Its stopping rules are the paper's targets: the claim stops at the first round whose
load is no longer low (w >= transition C), the release once w <= 1 (r(m) = 1 in eq. (36)), an
epoch at the first overload (w >= C T), the fairness run after the first MD that leaves every
window difference <= 1. The simulated claim, release and epoch counts and the number of epochs
equal the closed forms exactly. The total AI rounds of a fairness run obey an exact relation
instead (see `simulate_fairness`): an MD cuts the window it finds, and after the first epoch that
window may overshoot C T by up to N alpha, so a later epoch lasts K or K - 1 AI rounds
(K = `epoch_rounds`); the total equals eq. (37) whenever (1 - beta) C T / (N alpha) is a whole
number.

**Exact arithmetic.** Counts jump at exact boundaries (beta C T + K N alpha = C T, beta^m C = 1),
where float rounding would move a count by one. The model therefore computes in rational numbers
(`fractions.Fraction`): an int or a Fraction is taken as it is, a float that is a whole number as
that number, and any other float as the shortest decimal that rounds to it (what Python prints: 0.7
is 7/10, not the binary double just below it), so beta = 0.7 and C T = 10 give exactly 3 AI rounds
per epoch. Pass Fractions to put a count exactly on a boundary no short decimal reaches, such as
C = 2 (17/16)^20. The logarithms of the closed forms are estimated in floats and then settled by
comparing exact powers.

**Time and the MD freeze** (section 3.4). An MI or AI round lasts t_rho: one RTT when rtt = t_rho,
and for other RTTs the scaled parameters (6)-(7) give a flow the round's MI or AI factor per t_rho.
An MD round lasts t_rho without the freeze (a flow cuts at most once per t_rho and reads the next
load factor one interval later). With the freeze, a round containing an MD lasts t_rho + rtt: the
sender cuts, holds its window for t_rho, then runs AI for one RTT to read the new load factor. As
in the paper's proofs the window after an MD round is beta w: the alpha of that last RTT is not
added. `rounds_to_time` converts counts of rounds into time in units of t_rho. Eq. (37) counts
only the AI rounds (the MD of eq. (4) is instantaneous); `time_to_fair` adds the MD rounds.

Units: windows and the capacity window C T in packets; alpha in packets per round; xi, beta,
transition dimensionless; for the claim and the release, `capacity` is C relative to the aggregate
rate of 1 the paper starts from (claim) or ends at (release), e.g. C T in packets for a start at
one packet per round; rtt and t_rho in seconds (any one unit); times in units of t_rho.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from ..errors import ParameterError

__all__ = [
    "AI", "MAX_ROUNDS", "MD", "MI", "FairnessRun", "RoundTrace", "epoch_rounds", "epochs_to_fair", "load_action",
    "rounds_to_claim", "rounds_to_fair", "rounds_to_release", "rounds_to_time", "run_rounds", "simulate_claim",
    "simulate_epoch", "simulate_fairness", "simulate_release", "time_to_fair",
]

MI = "MI"
AI = "AI"
MD = "MD"

#: The most rounds a simulation runs before it refuses (a guard against, say, xi = 1e-9).
MAX_ROUNDS = 1_000_000


# --- input -----------------------------------------------------------------------------------------

def _exact(name: str, value) -> Fraction:
    """`value` as an exact rational: ints and Fractions as they are, a whole float as that whole number,
    any other float as its shortest decimal."""
    if isinstance(value, bool):
        raise ParameterError(name, value, "a real number, not a bool")
    if isinstance(value, (Fraction, numbers.Integral)):
        return Fraction(value)
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ParameterError(name, value, "a real number") from None
    if not math.isfinite(number):
        raise ParameterError(name, value, "a finite number")
    # a whole float is that whole number (2.0**59, not the decimal 5.764607523034235e+17 it prints as)
    return Fraction(number) if number.is_integer() else Fraction(str(number))


def _positive(name: str, value, unit: str = "") -> Fraction:
    exact = _exact(name, value)
    if exact <= 0:
        raise ParameterError(name, value, f"a finite value > 0{unit}")
    return exact


def _unit_interval(name: str, value) -> Fraction:
    exact = _exact(name, value)
    if not 0 < exact < 1:
        raise ParameterError(name, value, "a value in the open interval (0, 1)")
    return exact


def _whole(name: str, value, minimum: int) -> int:
    exact = _exact(name, value)
    if exact.denominator != 1 or exact < minimum:
        raise ParameterError(name, value, f"a whole number >= {minimum}")
    return int(exact)


def _capacity(value, transition: Fraction | None = None) -> Fraction:
    """C of eqs. (35)-(36): > 1, and for the claim transition C >= 1 (the MI starts at aggregate 1)."""
    exact = _exact("capacity", value)
    if exact <= 1:
        raise ParameterError("capacity", value,
                             "a value > 1 (relative to the aggregate rate of 1), as eqs. (35)-(36) need")
    if transition is not None and transition * exact < 1:
        raise ParameterError("capacity", value, f"a value >= 1 / transition = {float(1 / transition):g}, so that the "
                             "MI target transition C is at least the starting aggregate of 1")
    return exact


def _ceil_log(base: Fraction, target: Fraction) -> int:
    """The smallest m >= 0 with base^m >= target (base > 1): ceil(log target / log base), exactly."""
    def log(x: Fraction) -> float:  # ints of any size are fine for math.log
        return math.log(x.numerator) - math.log(x.denominator)

    m = max(0, math.ceil(log(target) / log(base)))
    while m > 0 and base ** (m - 1) >= target:
        m -= 1
    while base ** m < target:
        m += 1
    return m


# --- closed forms ----------------------------------------------------------------------------------

def rounds_to_claim(capacity, transition=0.8, xi=0.0625) -> int:
    """Eq. (35), rounded up: MI rounds from aggregate rate 1 until it reaches transition * C.

    ceil(log(transition C) / log(1 + xi)), the smallest m >= 0 with (1 + xi)^m >= transition C.
    capacity: C > 1 relative to the starting aggregate, with transition C >= 1; transition: the
    load-factor transition point in (0, 1) (rho-hat, 0.8); xi: the MI parameter, > 0 (0.0625).
    """
    transition_ = _unit_interval("transition", transition)
    xi_ = _positive("xi", xi)
    return _ceil_log(1 + xi_, transition_ * _capacity(capacity, transition_))


def rounds_to_release(capacity, beta=0.875) -> int:
    """Eq. (36), rounded up: MD rounds from aggregate C until it is at most 1.

    ceil(log C / log(1/beta)), the smallest m >= 0 with beta^m C <= 1. capacity: C > 1 relative
    to the final aggregate; beta: the MD factor in (0, 1).
    """
    beta_ = _unit_interval("beta", beta)
    return _ceil_log(1 / beta_, _capacity(capacity))


def epoch_rounds(capacity_window, n_flows, alpha=1.0, beta=0.875) -> int:
    """The AI rounds of one epoch (section 11.4): ceil((1 - beta) C T / (N alpha)).

    What is rounded is the paper's epoch length (1 - beta) C T / (N alpha) itself: the result is the
    smallest K with beta C T + K N alpha >= C T, the number of AI rounds that take the aggregate
    from beta C T to at least C T. capacity_window: C T in packets, > 0; n_flows: N >= 1; alpha:
    the AI parameter in packets per round, > 0; beta: the MD factor in (0, 1).
    """
    window = _positive("capacity_window", capacity_window, " packets")
    flows = _whole("n_flows", n_flows, 1)
    alpha_ = _positive("alpha", alpha, " packets per round")
    beta_ = _unit_interval("beta", beta)
    return math.ceil((1 - beta_) * window / (flows * alpha_))


def epochs_to_fair(delta_w0, beta=0.875) -> int:
    """Epochs to fairness (section 11.4), rounded up: ceil(log delta_w0 / log(1/beta)).

    The smallest m >= 0 with beta^m delta_w0 <= 1: each epoch ends with one MD, which multiplies
    every window difference by beta (AI adds the same alpha to every window). delta_w0: the
    initial largest window difference in packets, >= 1; beta in (0, 1).
    """
    beta_ = _unit_interval("beta", beta)
    difference = _exact("delta_w0", delta_w0)
    if difference < 1:
        raise ParameterError("delta_w0", delta_w0, "a window difference >= 1 packet")
    return _ceil_log(1 / beta_, difference)


def rounds_to_fair(capacity_window, n_flows, delta_w0, alpha=1.0, beta=0.875) -> int:
    """Eq. (37) in whole rounds: epochs_to_fair(delta_w0, beta) * epoch_rounds(C T, N, alpha, beta).

    The AI rounds of the epochs that bring the window difference from delta_w0 to <= 1; the
    paper's m and epoch length are each rounded up before they are multiplied. The epochs' MD
    rounds are not counted (eq. (4) is instantaneous); `time_to_fair` counts them.
    """
    return epochs_to_fair(delta_w0, beta) * epoch_rounds(capacity_window, n_flows, alpha, beta)


def rounds_to_time(rounds, md_rounds=0, *, rtt=1.0, t_rho=1.0, freeze=True) -> float:
    """Time taken by `rounds` MI or AI rounds and `md_rounds` MD rounds, in units of t_rho.

    An MI or AI round lasts t_rho (one RTT when rtt = t_rho; the RTT scaling (6)-(7) makes any
    flow's MI or AI per t_rho that of one round). An MD round lasts t_rho + rtt with the freeze of
    section 3.4 (`freeze=True`: the cut, the window held for t_rho, then one RTT of AI to read the
    new load factor) and t_rho without it. rounds, md_rounds: whole numbers >= 0; rtt, t_rho:
    seconds, > 0.
    """
    increase = _whole("rounds", rounds, 0)
    decrease = _whole("md_rounds", md_rounds, 0)
    rtt_ = _positive("rtt", rtt, " s")
    interval = _positive("t_rho", t_rho, " s")
    md_length = 1 + rtt_ / interval if freeze else Fraction(1)
    return float(increase + decrease * md_length)


def time_to_fair(capacity_window, n_flows, delta_w0, alpha=1.0, beta=0.875, *, rtt=1.0, t_rho=1.0,
                 freeze=True) -> float:
    """Eq. (37) as time, in units of t_rho, with each epoch's MD round counted.

    `rounds_to_time(rounds_to_fair(...), epochs_to_fair(...), rtt=rtt, t_rho=t_rho, freeze=freeze)`:
    with rtt = t_rho and the freeze, m epochs of K AI rounds take m (K + 2) t_rho, where eq. (37)
    says m K RTTs.
    """
    return rounds_to_time(rounds_to_fair(capacity_window, n_flows, delta_w0, alpha, beta),
                          epochs_to_fair(delta_w0, beta), rtt=rtt, t_rho=t_rho, freeze=freeze)


# --- the rules -------------------------------------------------------------------------------------

def load_action(load_factor, transition=0.8) -> str:
    """The action the 2-bit load code asks for: MI below the transition point, AI up to 1, MD at 1 and above."""
    rho = _exact("load_factor", load_factor)
    if rho < 0:
        raise ParameterError("load_factor", load_factor, "a value >= 0")
    return _action(rho, _unit_interval("transition", transition))


def _action(rho: Fraction, transition: Fraction) -> str:
    return MI if rho < transition else AI if rho < 1 else MD


def _apply(action: str, windows: list[Fraction], alpha: Fraction, beta: Fraction, xi: Fraction) -> list[Fraction]:
    if action == MI:
        return [w * (1 + xi) for w in windows]
    if action == AI:
        return [w + alpha for w in windows]
    return [w * beta for w in windows]


def _step(windows, capacity_window, alpha, beta, xi, transition) -> tuple[str, list[Fraction]]:
    """One round: the link reads rho = sum(w) / C T, every flow applies the rule of its code."""
    action = _action(sum(windows) / capacity_window, transition)
    return action, _apply(action, windows, alpha, beta, xi)


def _guard(rounds: int, max_rounds: int, what: str) -> None:
    if rounds >= max_rounds:
        raise ParameterError("max_rounds", max_rounds,
                             f"more rounds than {what} takes; raise it or change the parameters")


# --- simulations -----------------------------------------------------------------------------------

def simulate_claim(capacity, transition=0.8, xi=0.0625, *, max_rounds=MAX_ROUNDS) -> int:
    """MI rounds, simulated: from aggregate 1 on a link of capacity C, the rounds until the load is no
    longer low (w >= transition C). Equals `rounds_to_claim` (eq. (35)). MI scales every window
    alike, so how the aggregate is split among flows does not matter."""
    transition_ = _unit_interval("transition", transition)
    xi_ = _positive("xi", xi)
    capacity_ = _capacity(capacity, transition_)
    windows, rounds = [Fraction(1)], 0
    while _action(sum(windows) / capacity_, transition_) == MI:
        _guard(rounds, max_rounds, "the claim")
        windows = _apply(MI, windows, Fraction(0), Fraction(0), xi_)
        rounds += 1
    return rounds


def simulate_release(capacity, beta=0.875, *, max_rounds=MAX_ROUNDS) -> int:
    """MD rounds, simulated: from aggregate C, cut by beta each round until it is at most 1 (eq. (36)'s
    r(m) = 1). Equals `rounds_to_release`. (With a link of capacity 1 the rules would cut once more
    when the aggregate lands exactly on 1, since rho = 1 is overload; eq. (36) stops there.)"""
    beta_ = _unit_interval("beta", beta)
    windows, rounds = [_capacity(capacity)], 0
    while sum(windows) > 1:
        _guard(rounds, max_rounds, "the release")
        windows = _apply(MD, windows, Fraction(0), beta_, Fraction(0))
        rounds += 1
    return rounds


def _aimd_parameters(capacity_window, n_flows, alpha, beta, transition, min_flows=1):
    window = _positive("capacity_window", capacity_window, " packets")
    flows = _whole("n_flows", n_flows, min_flows)
    alpha_ = _positive("alpha", alpha, " packets per round")
    beta_ = _unit_interval("beta", beta)
    transition_ = _unit_interval("transition", transition)
    if beta_ < transition_:
        raise ParameterError("beta", beta, f"a value >= transition = {transition}: an MD from C T must land in the "
                             "high-load (AI) region for an epoch to be AI rounds (section 3.2)")
    return window, flows, alpha_, beta_, transition_


def simulate_epoch(capacity_window, n_flows, alpha=1.0, beta=0.875, transition=0.8, *, max_rounds=MAX_ROUNDS) -> int:
    """AI rounds of one epoch, simulated: N flows start right after an MD from exactly C T (aggregate
    beta C T) and the rules run until the first overload (w >= C T). Equals `epoch_rounds`.

    beta >= transition is required, so that the rules choose AI, not MI, after the MD.
    """
    window, flows, alpha_, beta_, transition_ = _aimd_parameters(capacity_window, n_flows, alpha, beta, transition)
    windows, rounds = [beta_ * window / flows] * flows, 0
    while True:
        action, after = _step(windows, window, alpha_, beta_, Fraction(0), transition_)
        if action == MD:
            return rounds
        _guard(rounds, max_rounds, "an epoch")
        windows, rounds = after, rounds + 1


@dataclass(frozen=True)
class FairnessRun:
    """A simulated AIMD run to fairness.

    epochs: the number of epochs (= MDs) until every window difference is <= 1; equals
    `epochs_to_fair`. ai_rounds: the AI rounds of all epochs, sum(epoch_ai_rounds).
    epoch_ai_rounds: the AI rounds of each epoch; the first is `epoch_rounds` = K, each later one is K
    or K - 1. final_difference: the largest window difference at the end, packets (exact).
    """

    epochs: int
    ai_rounds: int
    epoch_ai_rounds: tuple[int, ...]
    final_difference: Fraction


def simulate_fairness(capacity_window, n_flows, delta_w0, alpha=1.0, beta=0.875, transition=0.8, *,
                      max_rounds=MAX_ROUNDS) -> FairnessRun:
    """Epochs of an N-flow AIMD until the largest window difference is <= 1 (section 11.4, eq. (37)).

    The flows start right after an MD from exactly C T: the aggregate is beta C T, one flow's window
    is delta_w0 above the N - 1 others. An epoch is AI rounds until the first overload, then one MD.

    Exact relation to the closed forms: `epochs` == `epochs_to_fair(delta_w0, beta)`; the first
    epoch has K = `epoch_rounds(...)` AI rounds; a later epoch starts from beta w_peak with
    C T <= w_peak < C T + N alpha, so it has K or K - 1. Hence, with m epochs,
    m (K - 1) + 1 <= ai_rounds <= m K = `rounds_to_fair(...)` (for m >= 1), with ai_rounds = m K when
    (1 - beta) C T / (N alpha) is a whole number (every peak is then exactly C T).

    n_flows >= 2; delta_w0 in [1, beta C T) so that every window is positive; beta >= transition.
    """
    window, flows, alpha_, beta_, transition_ = _aimd_parameters(capacity_window, n_flows, alpha, beta, transition,
                                                                 min_flows=2)
    difference = _exact("delta_w0", delta_w0)
    if not 1 <= difference < beta_ * window:
        raise ParameterError("delta_w0", delta_w0, "a window difference >= 1 and < beta C T = "
                             f"{float(beta_ * window):g} packets, so that every window is positive")
    low = (beta_ * window - difference) / flows
    windows = [low + difference] + [low] * (flows - 1)
    epoch_lengths: list[int] = []
    rounds = ai_in_epoch = 0
    while max(windows) - min(windows) > 1:
        _guard(rounds, max_rounds, "the run to fairness")
        action, windows = _step(windows, window, alpha_, beta_, Fraction(0), transition_)
        rounds += 1
        if action == MD:
            epoch_lengths.append(ai_in_epoch)
            ai_in_epoch = 0
        else:
            ai_in_epoch += 1
    return FairnessRun(epochs=len(epoch_lengths), ai_rounds=sum(epoch_lengths), epoch_ai_rounds=tuple(epoch_lengths),
                       final_difference=max(windows) - min(windows))


@dataclass(frozen=True)
class RoundTrace:
    """A run of the rules round by round.

    windows: per-flow windows in packets, shape (rounds + 1, N), row 0 the start; load_factors:
    rho = sum(w) / C T read in each round, shape (rounds,); actions: the action of each round
    ("MI", "AI" or "MD"). Values are exact until converted to float64 here.
    """

    windows: np.ndarray
    load_factors: np.ndarray
    actions: tuple[str, ...]


def run_rounds(flow_windows, capacity_window, rounds, *, alpha=1.0, beta=0.875, xi=0.0625,
               transition=0.8) -> RoundTrace:
    """Run the MI/AI/MD rules (2)-(4) for `rounds` rounds from the given per-flow windows.

    flow_windows: a sequence of N > 0 windows in packets; capacity_window: C T in packets (gamma C T
    for a target utilization gamma); rounds: a whole number >= 0. Computed exactly; the rationals
    grow with every MI or MD round, so this is meant for up to some thousands of rounds.
    """
    window = _positive("capacity_window", capacity_window, " packets")
    count = _whole("rounds", rounds, 0)
    alpha_ = _positive("alpha", alpha, " packets per round")
    beta_ = _unit_interval("beta", beta)
    xi_ = _positive("xi", xi)
    transition_ = _unit_interval("transition", transition)
    try:
        values = list(flow_windows)
    except TypeError:
        raise ParameterError("flow_windows", flow_windows, "a sequence of windows in packets") from None
    if not values:
        raise ParameterError("flow_windows", flow_windows, "at least one flow's window")
    windows = [_positive("flow_windows", w, " packets") for w in values]
    rows, loads, actions = [windows], [], []
    for _ in range(count):
        loads.append(sum(windows) / window)
        action, windows = _step(windows, window, alpha_, beta_, xi_, transition_)
        rows.append(windows)
        actions.append(action)
    return RoundTrace(windows=np.array([[float(w) for w in row] for row in rows]),
                      load_factors=np.array([float(x) for x in loads]), actions=tuple(actions))
