# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # RCP vs QCP: estimating the number of flows, and sharing a network
#
# RCP and QCP both give every flow one explicit rate per router. They differ in how a router
# estimates how many flows share its link. RCP (Dukkipati et al., *Processor sharing flows in
# the Internet*) divides by $\hat N = C/R$, its own rate; QCP (*Quick congestion Control
# Protocol*) counts the flows from the rates their packets carry (eq. 4), and counts a flow
# held below its share elsewhere as a fraction of a flow (*efficient sharing*, Definition 1).
#
# This notebook uses fluidcc's per-flow fluid models of both on networks
# (`fluidcc.models.rcp_network`, `fluidcc.models.qcp_network`) and the sharing rules as functions
# (`fluidcc.sharing`), in four parts:
#
# 1. the sharing rules on the QCP paper's own example (capacity 100, rates 10, 50, 70);
# 2. RCP paper Fig. 2: flows join and leave one link; does $C/R(t)$ track $N(t)$?
# 3. QCP paper Table 2 / Fig. 3: 10 flows on a 20 Mb/s, 100 ms link; each protocol's estimate
#    of $N$ over time, and what it costs in utilization, queue and completion time;
# 4. QCP paper Figs. 10/11 in fluid form: two bottlenecks, rates against max-min.
#
# Units are SI inside (seconds, packets of 1000 bytes, packets per second); rates are shown in
# Mb/s. **How to run.** In JupyterLab (with jupytext) this file is the notebook and runs the
# quick horizons, as the test suite executes it; the cells assert the key claims, so the
# notebook fails if they break. As a script, `python notebooks/rcp_vs_qcp.py --out DIR` runs
# the full horizons (about a minute on 2 cores), `--quick` the notebook's; both write
# `rcp_fig2.png`, `n_estimate.png/.csv`, `two_bottleneck.png/.csv` and `results.json` (every
# number, with provenance) into the output folder. No number in a markdown cell is a result:
# the code cells print them.

# %% [markdown]
# ## The models
#
# **RCP** (RCP paper, eq. 2). Every control interval $T = \min(\tau, d_0)$ link $l$ updates
#
# $$R(t) = R(t-T)\Bigl[1 + \frac{T}{d_0}\,\frac{\alpha\,(C - y) - \beta\,q/d_0}{C}\Bigr],$$
#
# with $d_0$ the moving average (gain 0.02 per packet) of the RTTs its packets carry. In fluid
# form $T$ cancels from the rate law, $\frac{d}{dt}\log R = [\alpha(C-\hat y) - \beta q/d_0]/(d_0 C)$,
# and stays as the window over which $\hat y$ is measured. Every flow sends at the smallest
# $R_l$ on its path, learned one RTT late (a new flow at the rate its SYN collected).
#
# **QCP** (QCP paper, eqs. 4, 12, 16). Every control interval $d$, link $l$ sets
#
# $$R(t) = \frac{\alpha\,C\,d - \beta\,q}{\sum_j 1/\check R_j},\qquad
#   \check R_j = \max\bigl(R_j,\ R(t-d)\bigr)\ \ (12),$$
#
# summed over the packets of the interval, each carrying its flow's sending rate $R_j$. In
# per-flow form the denominator is $d$ times the *count* $N_a = \sum_i x_i / \max(x_i, R(t-d))$:
# a flow that follows the link counts one, a flow held at $x_i < R(t-d)$ elsewhere counts
# $x_i / R(t-d)$. The simplified eq. (14) uses $N_a = y / R(t-d)$. In fluid form $\log R$ moves
# towards the value of eq. (4) in one interval; sources set $cwnd = \hat R \cdot RTT$.

# %%
from fractions import Fraction

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from fluidcc import reproduce, scenarios, sharing
from fluidcc.dde import solve
from fluidcc.maxmin import maxmin
from fluidcc.models import qcp_network, rcp_network
from fluidcc.units import pps_to_mbps

# %% tags=["parameters"]
OPTIONS = reproduce.options("rcp_vs_qcp", description="RCP vs QCP: estimating N, and two bottlenecks",
                            quick_help="shorter horizons for the estimate of N and the two bottlenecks")
QUICK, OUT = OPTIONS.quick, OPTIONS.out
RESULTS = reproduce.Results(OPTIONS)

FIG2_DURATION_S = 150.0                               # RCP paper Fig. 2: flows join at 40 s, leave at 100 s
FIG2_INITIAL_RATE_FRACTION = 0.01                     # the router's R / C before the first flows (N_hat = 100)
ESTIMATE_DURATION_S = 20.0 if QUICK else 40.0         # QCP paper Table 2 / Fig. 3
TWO_BOTTLENECK_DURATION_S = 30.0 if QUICK else 60.0   # QCP paper Figs. 10/11
ESTIMATE_TOLERANCE = 0.05                             # "the estimate is right": within 5 % of N
FILE_PACKETS = 4000.0                                 # Table 2's 4 MB files, in 1000-byte packets
print(f"horizons: Fig. 2 {FIG2_DURATION_S:g} s, estimate of N {ESTIMATE_DURATION_S:g} s, two bottlenecks "
      f"{TWO_BOTTLENECK_DURATION_S:g} s; output in {OUT}")


# %%
def simulate(protocol: str, network, duration: float, save_step: float, **gains):
    """(times, observed dict, states, model) of one run of `protocol` on `network` (accounting on)."""
    variant = gains.pop("variant", "exact")
    if protocol == "rcp":
        model, params = rcp_network.RCPNetwork(network, accounting=True), rcp_network.network_params(network, **gains)
    else:
        model = qcp_network.QCPNetwork(network, variant=variant, accounting=True)
        params = qcp_network.network_params(network, **gains)
    times = np.arange(int(round(duration / save_step)) + 1) * save_step
    solution = solve(model, params, duration, times, steps_per_delay=32)
    assert solution.status[0] == 0, solution.messages[0]
    return times, model.observe(times, solution.ys[0], params), solution.ys[0], model


def settle_time(times, error, tolerance: float, start: float = 0.0) -> float | None:
    """First time (after `start`) from which |error| <= tolerance until the end; None if never."""
    inside = times >= start
    bad = np.flatnonzero(inside & (np.abs(error) > tolerance))
    if bad.size == 0:
        return float(times[inside][0])
    if bad[-1] == len(times) - 1:
        return None
    return float(times[bad[-1] + 1])


# %% [markdown]
# ## 1. Sharing rules: processor sharing against efficient sharing
#
# The QCP paper's example (section 6.1): a resource of capacity $X = 100$ units/s, three sources
# sending at 10, 50 and 70 units/s, the previous allocation $R(t-d) = 40$. Efficient sharing
# counts the first source, held at 10 elsewhere, as $10/40$ of a source. Processor sharing
# divides by 3. Then: where does ES settle when the sources are held at given demands?

# %%
es = sharing.efficient_sharing(100, [10, 50, 70], 40)
ps = sharing.processor_sharing(100, 3)
print(f"ES: {es} = {float(es):.4f} per source (count {sharing.fractional_flow_count([10, 50, 70], 40)}); "
      f"PS: {float(ps):.4f}")
assert es == Fraction(400, 9)

demands = [10.0, 20.0, 200.0, 200.0]  # two sources held elsewhere, two that want more
fixed = sharing.efficient_share_fixed_point(100.0, demands)
ps_rates = np.minimum(demands, 100.0 / len(demands))
table = pd.DataFrame({"demand": demands, "ES at its fixed point": fixed.source_rates,
                      "PS (C/N, capped by demand)": ps_rates})
print(table.to_string())
print(f"ES uses {sum(fixed.source_rates):.6g} of 100; PS uses {ps_rates.sum():.6g}")
assert abs(sum(fixed.source_rates) - 100.0) < 1e-9 and ps_rates.sum() < 100.0

# %% [markdown]
# ## 2. RCP paper Fig. 2: does $C/R$ track $N$?
#
# One 100 Mb/s link, RTT 100 ms (the paper's text gives neither); 20 flows from $t = 0$, 20 more
# from 40 s, the first 20 leave at 100 s. RCP's gains are the paper's ($\alpha = 0.1$,
# $\beta = 1$, $\tau = 10$ ms, RTT average gain 0.02); the router starts at $R = 0.01\,C$ (an
# estimate of 100 flows, five times the 20 flows). Per phase: how long $C/R$ takes to come and
# stay within 5 % of $N$.

# %%
fig2 = scenarios.rcp_fig2()
with RESULTS.section("rcp_fig2") as found:
    times, observed, states, model = simulate("rcp", fig2, FIG2_DURATION_S, 0.05,
                                              initial_rate_fraction=FIG2_INITIAL_RATE_FRACTION)
    n_active = np.stack([fig2.active(t) for t in times]).sum(axis=1).astype(float)
    estimate = observed["flow_estimate"][:, 0]
    utilization = observed["load"][:, 0] / fig2.capacities_pps[0]
    phases = []
    for start, stop in fig2.phases():
        stop = min(stop, FIG2_DURATION_S)
        inside = (times >= start) & (times < stop)
        n = float(n_active[inside][0])
        settle = settle_time(times[inside], estimate[inside] / n - 1.0, ESTIMATE_TOLERANCE, start)
        phases.append({"phase": f"[{start:g}, {stop:g}) s", "flows": n,
                       "estimate_at_end": float(estimate[inside][-1]),
                       "within_5pct_after_s": None if settle is None else settle - start,
                       "mean_utilization": float(np.mean(utilization[inside])),
                       "max_queue_packets": float(np.max(model.block(states[inside], "queue")))})
    found.update({"phases": phases, "gains": {"alpha": 0.1, "beta": 1.0, "rate_interval_s": 0.01, "rtt_gain": 0.02},
                  "initial_rate_fraction": FIG2_INITIAL_RATE_FRACTION})
print(pd.DataFrame(phases).set_index("phase").round(3).to_string())
for phase in phases:  # C/R tracks N(t) in every phase
    assert phase["within_5pct_after_s"] is not None and abs(phase["estimate_at_end"] / phase["flows"] - 1) < 1e-3

fig, axes = plt.subplots(2, 1, figsize=(8, 5.5), sharex=True, constrained_layout=True)
axes[0].plot(times, estimate, color="C0", label="C / R(t) (RCP's estimate)")
axes[0].plot(times, n_active, "k--", lw=1, label="N(t)")
axes[0].set_ylabel("flows")
axes[0].set_yscale("log")  # the queue of 40 s sends C/R far above N for a few seconds
axes[0].legend()
axes[1].plot(times, utilization, color="C1")
axes[1].set_ylabel("utilization")
axes[1].set_xlabel("time (s)")
axes[0].set_title("RCP on one 100 Mb/s link (RCP paper Fig. 2, fluid)")
fig.savefig(OUT / "rcp_fig2.png", dpi=120)
plt.show()

# %% [markdown]
# ## 3. QCP paper Table 2 / Fig. 3: the estimate of $N$ over time
#
# Ten long-lived flows on a 20 Mb/s link with 50 ms propagation delay (RTT 100 ms), all starting
# at $t = 0$ with every router at $R = 0.05\,C$ (so RCP's $\hat N$ starts at 20). QCP with
# $\alpha = \beta = 1$ and $d$ = the RTT (eq. 4 with eq. 12, and the simplified eq. 14), QCP with
# $d$ = half the RTT, and RCP with the two gain pairs of the QCP paper's Fig. 3. For each: when
# the estimate first comes within 5 % of $N$, and from when it stays there (also in control
# intervals $d$); the error over time; and the consequences: utilization, queue, and when each
# flow has sent its 4 MB file (Table 2).

# %%
ESTIMATORS = (
    ("QCP (1, 1) eq. (4)", "qcp", {"alpha": 1.0, "beta": 1.0}),
    ("QCP (1, 1) eq. (14)", "qcp", {"alpha": 1.0, "beta": 1.0, "variant": "simplified"}),
    ("QCP (1, 1) eq. (4), d = 50 ms", "qcp", {"alpha": 1.0, "beta": 1.0, "control_interval": 0.05}),
    ("RCP (0.1, 1)", "rcp", {"alpha": 0.1, "beta": 1.0}),
    ("RCP (1, 1)", "rcp", {"alpha": 1.0, "beta": 1.0}),
)
table2 = scenarios.qcp_table2()
N = float(table2.n_flows)
interval = float(qcp_network.mean_link_rtts(table2)[0])  # QCP's control interval d (100 ms)
duration = ESTIMATE_DURATION_S
with RESULTS.section("n_estimate") as found:
    rows, series = [], {}
    for label, protocol, gains in ESTIMATORS:
        times, observed, states, model = simulate(protocol, table2, duration, interval / 4, **dict(gains))
        estimate = observed["flow_estimate"][:, 0]
        error = estimate / N - 1.0
        settle = settle_time(times, error, ESTIMATE_TOLERANCE)
        first = np.flatnonzero(np.abs(error) <= ESTIMATE_TOLERANCE)
        utilization = observed["load"][:, 0] / table2.capacities_pps[0]
        queue = model.block(states, "queue")[:, 0]
        sent = model.block(states, "sent")
        finish = [float(times[np.argmax(s >= FILE_PACKETS)]) if s[-1] >= FILE_PACKETS else None for s in sent.T]
        rows.append({
            "run": label,
            "first_within_5pct_s": float(times[first[0]]) if first.size else None,
            "stays_within_5pct_from_s": settle,
            "stays_within_5pct_from_intervals": None if settle is None else settle / interval,
            "mean_abs_error_first_10s": float(np.mean(np.abs(error[times <= 10.0]))),
            "max_abs_error_last_5s": float(np.max(np.abs(error[times >= duration - 5.0]))),
            **{f"error_at_{t:g}s": float(np.interp(t, times, error)) for t in (0.5, 1, 2, 5, 10, 20) if t <= duration},
            "mean_utilization_first_10s": float(np.mean(utilization[times <= 10.0])),
            "max_queue_packets": float(np.max(queue)),
            "last_4MB_file_done_s": None if any(f is None for f in finish) else max(finish),
        })
        series[label] = (times, estimate, utilization, queue)
    reproduce.write_csv(OUT / "n_estimate.csv", rows)
    found.update({"rows": rows, "control_interval_s": interval, "flows": N, "tolerance": ESTIMATE_TOLERANCE})
estimates = pd.DataFrame(rows).set_index("run")
print(estimates.T.round(3).to_string())
print(f"(4 MB x {table2.n_flows} flows at full utilization: {FILE_PACKETS * N / table2.capacities_pps[0]:.1f} s)")

by_run = {row["run"]: row for row in rows}
qcp = by_run["QCP (1, 1) eq. (4)"]
assert qcp["stays_within_5pct_from_intervals"] is not None and qcp["stays_within_5pct_from_intervals"] <= 5
assert by_run["RCP (0.1, 1)"]["max_abs_error_last_5s"] < 0.01   # slow, but it gets there
assert abs(by_run["RCP (0.1, 1)"]["error_at_1s"]) > 0.2         # 10 intervals in, still > 20 % off
assert by_run["RCP (1, 1)"]["max_abs_error_last_5s"] > 0.1      # keeps oscillating
assert by_run["RCP (1, 1)"]["stays_within_5pct_from_s"] is None

fig, axes = plt.subplots(3, 1, figsize=(8, 8), sharex=True, constrained_layout=True)
for k, (label, (times, estimate, utilization, queue)) in enumerate(series.items()):
    style = {"color": f"C{k}", "lw": 3.0 if k == 0 else 1.2, "ls": "--" if k == 1 else "-", "zorder": 5 - k}
    axes[0].plot(times, estimate, label=label, **style)
    axes[1].plot(times, utilization, **style)
    axes[2].plot(times, queue, **style)
axes[0].axhline(N, color="k", ls="--", lw=1, label="N")
axes[0].set_ylabel("estimate of N")
axes[0].set_ylim(0, 3 * N)
axes[0].legend(fontsize=8)
axes[1].set_ylabel("utilization")
axes[2].set_ylabel("queue (packets)")
axes[2].set_xlabel("time (s)")
axes[0].set_title("Estimating N: 10 flows, 20 Mb/s, RTT 100 ms (QCP paper Table 2 / Fig. 3, fluid)")
fig.savefig(OUT / "n_estimate.png", dpi=120)
plt.show()

# %% [markdown]
# ## 4. Two bottlenecks (QCP paper Figs. 10/11, fluid form)
#
# `scenarios.qcp_fig10()`: group 0 (5 flows) crosses a 5 Mb/s link `l0` and then a 20 Mb/s link
# `l1`; group 1 (5 flows) crosses only `l1`. Processor sharing at `l1` would offer every flow
# the same share and leave part of it unused (printed below). QCP with $(\alpha, \beta) = (1, 1)$
# and $(1, 0.5)$, RCP with $(0.1, 1)$: where do the rates settle against max-min, and is `l1`
# full?

# %%
TWO_BOTTLENECK_RUNS = (
    ("QCP (1, 1)", "qcp", {"alpha": 1.0, "beta": 1.0}),
    ("QCP (1, 0.5)", "qcp", {"alpha": 1.0, "beta": 0.5}),
    ("RCP (0.1, 1)", "rcp", {"alpha": 0.1, "beta": 1.0}),
)
two = scenarios.qcp_fig10()
fair = np.asarray(maxmin(two).rates_pps, dtype=float)
shared = two.link_index("l1")
capacity = two.capacities_pps[shared]
on_shared = two.flows_on("l1")
ps_load = sum(min(capacity / len(on_shared), fair[i]) for i in on_shared)
duration = TWO_BOTTLENECK_DURATION_S
g0, g1 = 0, two.n_flows - 1  # one flow of each group (the groups' flows are identical)
print(f"max-min: group 0 {pps_to_mbps(fair[g0]):g} Mb/s, group 1 {pps_to_mbps(fair[g1]):g} Mb/s; processor sharing "
      f"at l1 would use {ps_load / capacity:.0%} of it")
with RESULTS.section("two_bottleneck") as found:
    rows, series, counts = [], {}, {}
    for label, protocol, gains in TWO_BOTTLENECK_RUNS:
        times, observed, states, model = simulate(protocol, two, duration, 0.02, **dict(gains))
        ratio = observed["rate"] / fair
        last = times >= duration - 5.0
        rows.append({
            "run": label,
            "group0_mbps": pps_to_mbps(float(observed["rate"][-1, g0])),
            "group1_mbps": pps_to_mbps(float(observed["rate"][-1, g1])),
            "maxmin_group0_mbps": pps_to_mbps(float(fair[g0])),
            "maxmin_group1_mbps": pps_to_mbps(float(fair[g1])),
            "utilization_l1_last_5s_mean": float(np.mean(observed["load"][last, shared]) / capacity),
            "max_abs_deviation_last_5s": float(np.max(np.abs(ratio[last] - 1.0))),
            "settled_within_1pct": bool(np.max(np.abs(ratio[last] - 1.0)) <= 0.01),
        })
        series[label] = (times, observed["rate"][:, [g0, g1]])
        counts[label] = float(observed["flow_estimate"][-1, shared])  # the router's estimate of N at l1
    reproduce.write_csv(OUT / "two_bottleneck.csv", rows)
    found.update({"rows": rows, "processor_sharing_utilization_l1": ps_load / capacity})
print(pd.DataFrame(rows).set_index("run").round(4).to_string())
# Efficient sharing counts a flow held at x < R elsewhere as x / R of a flow: at max-min, l1 carries
# the flows of group 1 whole and those of group 0 as fair[g0] / fair[g1] of a flow each.
fractional_count = sum(min(1.0, fair[i] / fair[g1]) for i in on_shared)
print(f"{len(on_shared)} flows cross l1; efficient sharing at max-min counts {fractional_count:.3f} of them; the "
      "routers' estimates at l1 at the end: " + ", ".join(f"{label} {n:.3f}" for label, n in counts.items()))
assert ps_load / capacity < 0.99  # processor sharing would leave part of l1 unused
for row in rows:  # every run ends at max-min with l1 full, counting the flows of group 0 as fractions
    assert row["settled_within_1pct"] and abs(row["utilization_l1_last_5s_mean"] - 1.0) <= 1e-3, row
    assert abs(counts[row["run"]] / fractional_count - 1) < 1e-3, (row["run"], counts[row["run"]])

fig, axes = plt.subplots(len(series), 1, figsize=(8, 2.6 * len(series)), sharex=True, constrained_layout=True)
for ax, (label, (times, rates)) in zip(np.atleast_1d(axes), series.items()):
    for k, group in enumerate(("group 0", "group 1")):
        ax.plot(times, pps_to_mbps(rates[:, k]), color=f"C{k}", label=group)
        ax.axhline(pps_to_mbps(fair[[g0, g1]][k]), color=f"C{k}", ls="--", lw=1)
    ax.set_ylabel("rate (Mb/s)")
    ax.set_title(label + " (dashed: max-min)")
    ax.legend(fontsize=8)
np.atleast_1d(axes)[-1].set_xlabel("time (s)")
fig.savefig(OUT / "two_bottleneck.png", dpi=120)
plt.show()

# %% [markdown]
# Both count the five flows held at `l0` as fractions at `l1` (QCP through eq. (12), RCP because
# $C/R$ is what the link's full load implies), so both end at max-min and `l1` stays full, where
# processor sharing would leave part of it unused.

# %%
print(f"wrote {RESULTS.write()} and the figures and tables beside it")
