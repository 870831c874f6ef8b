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
# # MIAIMD quick start: the fluid model of VCP
#
# VCP (Xia, Subramanian, Stoica and Kalyanaraman, *One more bit is enough*) lets routers feed
# back a two-bit load factor, and lets end hosts answer with multiplicative increase (MI),
# additive increase (AI) or multiplicative decrease. Section 5 of the VCP paper studies it
# through a fluid model, **MIAIMD**: flow $i$ has a window $w_i$ (packets), and with one RTT
# $T$ (s) shared by all flows (part 2 of this notebook lifts this) on a link of capacity $C$,
#
# $$\dot w_i(t) = \frac{1}{T}\,\bigl[w_i(t)\,\xi(\rho(t)) + \alpha\bigr] \quad (10), \qquad
#   \xi(\rho) = \kappa\,\frac{1-\rho}{\rho} \quad (11), \qquad
#   \rho(t) = \frac{\sum_j w_j(t-T)}{\gamma C T} \quad (12).$$
#
# Summing (10) over the $N$ flows gives (13), and with (11) and (12) the delay-differential
# equation (14) for the total window $w = \sum_i w_i$:
#
# $$\dot w(t) = \frac{1}{T}\Bigl\{\kappa\, w(t)\Bigl[\frac{\gamma C T}{w(t-T)} - 1\Bigr] + N\alpha\Bigr\}. \quad (14)$$
#
# **Theorem 1.** For $N$ flows with the same RTT $T$ on one bottleneck, if $\kappa \le 1/2$ then
# (14) is globally asymptotically stable, with the unique equilibrium
# $w^* = \gamma C T + N\alpha/\kappa$ and per-flow rates $r_i^* = \gamma C/N + \alpha/(\kappa T)$.
#
# This notebook
#
# 1. simulates the base point (150 Mb/s, 80 ms, 50 flows, $\kappa = 0.25$) and checks $w^*$;
# 2. checks the heterogeneous-RTT equilibrium of section 5;
# 3. sweeps $\kappa$ with the aggregate equation (14) and locates the onset of oscillation;
# 4. draws a small two-dimensional stability map with `run_sweep`.
#
# Units are SI throughout: seconds, packets (1000 bytes), packets per second.
# This file is both the notebook (open it in JupyterLab with jupytext) and a script
# (`python notebooks/miaimd_quickstart.py`); the test suite executes it.

# %%
# Small defaults: the test suite executes this notebook (tests/test_notebooks.py), so the
# whole run must stay well under a minute. The full-size figures use larger values, e.g.
# DURATION_RTTS = 1000, KAPPA_POINTS = 200, KAPPA_HORIZON_RTTS = 2000, SWEEP_POINTS = 64,
# STEPS_PER_DELAY = 64 and RTOL = 1e-8 (error-controlled step doubling).
DURATION_RTTS = 200          # base-point horizon, in RTTs
HETERO_DURATION_RTTS = 400   # heterogeneous-RTT horizon, in units of the longest RTT
KAPPA_POINTS = 40            # points of the 1-D kappa sweep of eq. (14)
KAPPA_HORIZON_RTTS = 400     # horizon of each point of the kappa sweep, in RTTs
SWEEP_POINTS = 12            # points per axis of the 2-D sweep
SWEEP_HORIZON_RTTS = 250     # horizon of each point of the 2-D sweep, in RTTs
STEPS_PER_DELAY = 32         # RK4 steps per (shortest) RTT
RTOL = None                  # None: fixed step; a number: refine each point until its error estimate is below it

# %%
import numpy as np
import matplotlib.pyplot as plt
from scipy.optimize import brentq

from fluidcc import units
from fluidcc.dde import solve
from fluidcc.models import MIAIMDAggregate, miaimd
from fluidcc.plotting import sweep_heatmap, timeseries_figure
from fluidcc.stability import BEHAVIOUR_NAMES, classify
from fluidcc.sweep import SweepSpec, parse_grid, run_sweep, simulate

# fluidcc.plotting selects the file-only Agg backend; show figures inline in the notebook.
# %matplotlib inline

# %% [markdown]
# ## 1. The base point and Theorem 1
#
# $C$ = 150 Mb/s = 18750 packets/s, $T$ = 80 ms, $N$ = 50 flows, $\kappa$ = 0.25, and the model
# defaults $\alpha$ = 1 packet per RTT, $\gamma$ = 0.98. Every flow starts from a window of one
# packet. Theorem 1 predicts $w^* = 0.98 \cdot 18750 \cdot 0.08 + 50 \cdot 1 / 0.25 = 1670$ packets.

# %%
capacity_pps = units.mbps_to_pps(150.0)
rtt_s, n_flows, kappa, alpha, gamma = 0.08, 50, 0.25, 1.0, 0.98
assert capacity_pps == 18750.0

base = simulate(
    "miaimd",
    {"kappa": kappa, "capacity": capacity_pps, "rtt": rtt_s, "flows": n_flows},
    duration_s=DURATION_RTTS * rtt_s,
    saves_per_rtt=20,
    steps_per_delay=STEPS_PER_DELAY,
    rtol=RTOL,
)
assert base.attrs["status_message"] == "ok", base.attrs["status_message"]

w_star = gamma * capacity_pps * rtt_s + n_flows * alpha / kappa  # Theorem 1
rho_star = 1 + n_flows * alpha / (kappa * gamma * capacity_pps * rtt_s)
total_window = base["window"].sum("flow")
final_total = float(total_window[-1])
print(f"w* (Theorem 1) = {w_star:.6f} packets; simulated total window at "
      f"t = {float(base.time[-1]):.2f} s: {final_total:.6f} packets")
print(f"load factor: rho* = {rho_star:.6f}, simulated {float(base.load_factor[-1]):.6f}")
assert abs(w_star - 1670.0) < 1e-9
assert abs(final_total / w_star - 1) < 1e-6
assert abs(float(base.load_factor[-1]) / rho_star - 1) < 1e-6

# %%
fig = timeseries_figure(base)

# %% [markdown]
# The windows grow multiplicatively from one packet, overshoot during the first RTTs, and
# settle on the dotted equilibrium lines; the load factor settles at
# $\rho^* = 1 + N\alpha/(\kappa\gamma C T) > 1$: the AI term keeps the offered load above
# the target $\gamma C$.
#
# ## 2. Heterogeneous RTTs
#
# With RTTs $T_i$, section 5 gives every flow the same window
# $w_i^* = \gamma C \hat T_h / N + \alpha/\kappa$, with $\hat T_h = N / \sum_i 1/T_i$ the harmonic
# mean RTT, hence the rates
#
# $$r_i^* = \frac{\gamma C}{N}\,\frac{\hat T_h}{T_i} + \frac{\alpha}{\kappa T_i}:$$
#
# the fluid model shares the link in inverse proportion to the RTTs (VCP itself scales its
# MI/AI parameters with the RTT to counter this, section 3.4). Three flows with RTTs 40, 80
# and 160 ms share a 10 Mb/s link: the additive increase, which is what equalises the windows,
# acts slowly when per-flow windows are large, and a small link keeps the convergence to
# $10^{-4}$ within a short run. `simulate` uses the default `delay_split="forward"`; the
# equilibrium does not depend on how each RTT is split, stability may.

# %%
rtts = np.array([0.040, 0.080, 0.160])
hetero_capacity_pps = units.mbps_to_pps(10.0)
hetero = simulate(
    "miaimd",
    {"kappa": kappa, "capacity": hetero_capacity_pps},
    rtts=rtts,
    duration_s=HETERO_DURATION_RTTS * rtts.max(),
    saves_per_rtt=5,
    steps_per_delay=STEPS_PER_DELAY,
    rtol=RTOL,
)
assert hetero.attrs["status_message"] == "ok", hetero.attrs["status_message"]

n = len(rtts)
harmonic_rtt = n / np.sum(1 / rtts)
r_star = gamma * hetero_capacity_pps / n * harmonic_rtt / rtts + alpha / (kappa * rtts)
np.testing.assert_allclose(r_star, hetero["equilibrium_rate"].values, rtol=1e-12)

final_rates = hetero["rate"].values[-1]
rel_err = np.abs(final_rates / r_star - 1)
print(f"harmonic mean RTT = {harmonic_rtt * 1e3:.3f} ms, t_end = {float(hetero.time[-1]):.1f} s")
print(" RTT [ms]   simulated rate   r_i* [packets/s]   relative error")
for rtt, rate, target, err in zip(rtts, final_rates, r_star, rel_err):
    print(f"{rtt * 1e3:8.0f}   {rate:14.6f}   {target:16.6f}   {err:14.2e}")
assert rel_err.max() < 1e-4

# %%
fig = timeseries_figure(hetero)

# %% [markdown]
# ## 3. Sweeping $\kappa$: Theorem 1 and the onset of oscillation
#
# Theorem 1's condition $\kappa \le 1/2$ is sufficient, not necessary. We integrate the
# aggregate equation (14) for a batch of $\kappa$ values in one `solve` call, with $C$, $T$ and
# $N$ fixed (so the per-flow BDP $\gamma C T / N$ is fixed too), and classify each trajectory
# of the total window: the deviation is $\max |w/w^* - 1|$ over the last 20% of the horizon,
# the amplitude is the relative half peak-to-peak over the last 10%.
#
# For comparison, linearising (14) around $w^*$ with $w = w^*(1+\delta)$ gives
# $T\dot\delta(t) = -a\,\delta(t) - b\,\delta(t-T)$, with $a = N\alpha/w^*$ and
# $b = \kappa\gamma C T / w^*$. Its characteristic equation $s + a + b e^{-s} = 0$ ($s = \lambda T$)
# has a pair of roots on the imaginary axis $s = \pm i\omega$ when
# $\omega\cot\omega = -a$ with $\omega \in (\pi/2, \pi)$ and $b = \sqrt{a^2 + \omega^2}$; the next
# cell solves this for the $\kappa_c$ at which the equilibrium loses linear stability.

# %%
kappas = np.linspace(0.05, 2.0, KAPPA_POINTS)
params = miaimd.aggregate_params(kappa=kappas, capacity_pps=capacity_pps, rtt_s=rtt_s, n_flows=n_flows)
saves_per_rtt = 4
save_times = np.tile(np.arange(KAPPA_HORIZON_RTTS * saves_per_rtt + 1) / saves_per_rtt * rtt_s, (KAPPA_POINTS, 1))
sol = solve(
    MIAIMDAggregate(), params, np.full(KAPPA_POINTS, KAPPA_HORIZON_RTTS * rtt_s), save_times,
    steps_per_delay=STEPS_PER_DELAY, rtol=RTOL,
)
w_eq = miaimd.equilibrium_homogeneous(kappas, alpha, gamma, capacity_pps, rtt_s, n_flows)["window"]
result = classify(save_times, sol.ys[..., 0], w_eq, sol.status)
names = np.array(BEHAVIOUR_NAMES)[result.behaviour]


def linear_margin(k):
    # b - b_crit(a): negative where the equilibrium of (14) is linearly stable.
    w = gamma * capacity_pps * rtt_s + n_flows * alpha / k
    a, b = n_flows * alpha / w, k * gamma * capacity_pps * rtt_s / w
    omega = brentq(lambda o: o / np.tan(o) + a, np.pi / 2, np.pi - 1e-12)
    return b - np.hypot(a, omega)


kappa_c = brentq(linear_margin, 0.5, 10.0)
oscillating = names == "oscillating"
converged = names == "converged"
onset = kappas[oscillating].min() if oscillating.any() else np.nan
last_converged = kappas[converged].max()
print(f"linear stability boundary of (14): kappa_c = {kappa_c:.4f} "
      f"({kappa_c / 0.5:.2f} times Theorem 1's sufficient bound 1/2)")
print(f"after {KAPPA_HORIZON_RTTS} RTTs: largest converged kappa = {last_converged:.3f}, "
      f"smallest oscillating kappa = {onset:.3f}")
for name in BEHAVIOUR_NAMES:
    if (names == name).any():
        print(f"  {name:12s} kappa in [{kappas[names == name].min():.3f}, {kappas[names == name].max():.3f}]"
              f" ({(names == name).sum()} points)")

assert (sol.status == 0).all()
assert converged[kappas <= 0.5].all(), "Theorem 1: every kappa <= 1/2 converges"
assert converged[kappas < 0.9 * kappa_c].all(), "well inside the linear boundary, (14) converges too"
assert oscillating[kappas > 1.05 * kappa_c].all(), "beyond the linear boundary the equilibrium is unstable"

# %%
fig, ax = plt.subplots(figsize=(8, 4.5), constrained_layout=True)
floor = 1e-16  # deviations at round-off level, drawn on the log axis
ax.semilogy(kappas, np.maximum(result.deviation, floor), "o-", ms=3, label="deviation max|w/w* - 1|, last 20%")
ax.semilogy(kappas, np.maximum(result.amplitude, floor), "s-", ms=3, label="amplitude (half peak-to-peak), last 10%")
ax.axvline(0.5, color="k", ls="--", lw=1, label="Theorem 1: kappa = 1/2")
ax.axvline(kappa_c, color="C3", ls=":", lw=1.5, label=f"linear boundary kappa_c = {kappa_c:.3f}")
ax.set_xlabel("kappa")
ax.set_ylabel("relative to w*")
ax.set_title(f"eq. (14), C = 150 Mb/s, T = 80 ms, N = 50, after {KAPPA_HORIZON_RTTS} RTTs")
ax.legend(fontsize=8, loc="upper left");

# %% [markdown]
# Reading the plot with the printed numbers: every $\kappa \le 1/2$ converges, as Theorem 1
# guarantees, and so do larger values, well beyond $1/2$: the theorem's bound is conservative
# for these parameters. Sustained oscillation sets in near the linear boundary $\kappa_c$
# computed above. Points just below $\kappa_c$ may still be classified as oscillating: their
# dominant roots have a real part close to zero, so their oscillation decays over more RTTs
# than the horizon covers. A longer `KAPPA_HORIZON_RTTS` moves the observed onset toward
# $\kappa_c$.
#
# ## 4. A two-dimensional stability map
#
# `run_sweep` does the same for a grid over any parameters of the model (here $\kappa$ and the
# RTT, the others at their defaults: 150 Mb/s, 50 flows), chunked and, with `out_dir`,
# resumable. The dashed line is Theorem 1's $\kappa = 1/2$.
#
# Long RTTs mean a large per-flow BDP $\gamma C T / N$, and then the start-up from one packet
# per flow overshoots by many orders of magnitude: (11) makes $\xi(\rho)$ grow without bound
# as $\rho \to 0$, and the first RTT multiplies each window by about
# $e^{\kappa(\gamma C T / N - 1)}$ (printed below for the longest RTT). Such points need more
# than `SWEEP_HORIZON_RTTS` RTTs to come back and are classified `converging`; points whose
# start-up exceeds float64 are reported as `overflow`, in the data, not as an exception.

# %%
spec = SweepSpec(
    model="miaimd",
    axes=(
        parse_grid("miaimd", f"kappa=0.05:2:{SWEEP_POINTS}"),
        parse_grid("miaimd", f"rtt=10ms:1s:{SWEEP_POINTS}:log"),
    ),
    horizon_rtts=SWEEP_HORIZON_RTTS,
    steps_per_delay=STEPS_PER_DELAY,
    rtol=RTOL,
)
sweep = run_sweep(spec)
longest_rtt = float(sweep.rtt.max())
log10_startup = kappa * (gamma * capacity_pps * longest_rtt / n_flows - 1) / np.log(10)
print(f"start-up factor at T = {longest_rtt:g} s, kappa = {kappa}: about 10^{log10_startup:.0f}")
for code, name in enumerate(BEHAVIOUR_NAMES):
    print(f"{name:12s} {int((sweep.behaviour == code).sum()):4d} points")
below_bound = sweep.behaviour.isel(kappa=np.flatnonzero(sweep.kappa.values <= 0.5))
assert bool(below_bound.isin([0, 1]).all()), "kappa <= 1/2: converged or still converging"
fig = sweep_heatmap(sweep)
