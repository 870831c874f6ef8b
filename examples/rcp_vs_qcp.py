"""RCP vs QCP: how each router estimates its number of flows, and what that does to the rates.

Reproduces, with fluidcc's per-flow fluid models (`fluidcc.models.rcp_network`, `qcp_network`):

a. RCP paper, Fig. 2: 20 long-lived flows start at t = 0, 20 more at 40 s, the first 20 finish
   at 100 s (one 100 Mb/s link, RTT 100 ms: the paper's text does not give them). RCP with the
   paper's gains (alpha = 0.1, beta = 1, tau = 10 ms), the router starting at R = 0.01 C:
   C/R(t) against N(t) and the utilization; per phase, how long C/R takes to come within 5 % of N.
b. QCP paper, Table 2 / Fig. 3: 10 long-lived flows on a 20 Mb/s link with 50 ms propagation
   delay, all starting at t = 0 (every router starting from R = 0.05 C, N_hat = 20). The estimate
   of N over time for QCP (alpha = beta = 1; eq. (4) with eq. (12), and the simplified eq. (14))
   (and eq. (4) with d = 50 ms, half the RTT) and for RCP with (alpha, beta) = (0.1, 1) and
   (1, 1); when each estimate comes and stays
   within 5 % of N, in QCP control intervals (d = 100 ms); the error over time; and the
   consequences: utilization, queue, and when each flow has sent its 4 MB file (Table 2).
c. QCP paper, Figs. 10/11 in fluid form (`fluidcc.scenarios.qcp_fig10`: group 0 held at a 5 Mb/s
   link, group 1 sharing a 20 Mb/s link with it): rates against max-min and the shared link's
   utilization for QCP (1, 1), QCP (1, 0.5) and RCP (0.1, 1), and what processor sharing would
   leave unused.

Run:

    python examples/rcp_vs_qcp.py --out rcp-vs-qcp          # about a minute on 2 cores
    python examples/rcp_vs_qcp.py --quick --out rcp-vs-qcp  # shorter horizons for b and c

It prints the tables and writes into --out: rcp_fig2.png, n_estimate.png, n_estimate.csv,
two_bottleneck.png, two_bottleneck.csv and results.json (every number, with provenance).
Units: rates in Mb/s (1000-byte packets) unless a column says packets/s; times in seconds.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from _report import run, table, write_csv  # examples/_report.py

#: How close an estimate of N must be (relative) to count as settled.
ESTIMATE_TOLERANCE = 0.05
#: Table 2's file size: 4 MB of 1000-byte packets.
FILE_PACKETS = 4000.0


def main(argv: list[str] | None = None) -> int:
    sections = (("rcp_fig2", rcp_fig2), ("n_estimate", n_estimate), ("two_bottleneck", two_bottleneck))
    return run(__doc__.split("\n\n")[0], sections, "shorter horizons for b and c", argv)


def _simulate(protocol: str, network, duration: float, save_step: float, **gains):
    """(times, observed dict, states, model) of one run (accounting on)."""
    from fluidcc.dde import solve
    from fluidcc.models import qcp_network, rcp_network

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


def settle_time(times: np.ndarray, error: np.ndarray, tolerance: float, start: float = 0.0) -> float | None:
    """First time (after `start`) from which |error| <= tolerance until the end; None if never."""
    inside = times >= start
    bad = np.flatnonzero(inside & (np.abs(error) > tolerance))
    if bad.size == 0:
        return float(times[inside][0])
    if bad[-1] == len(times) - 1:
        return None
    return float(times[bad[-1] + 1])


# --------------------------------------------------------------------------- a. RCP Fig. 2
#: The router's rate before the first flows (R / C): N_hat = 100, five times the 20 flows.
FIG2_INITIAL_RATE_FRACTION = 0.01

def rcp_fig2(out: Path, quick: bool) -> dict:
    from fluidcc import scenarios

    network = scenarios.rcp_fig2()
    duration = 150.0
    times, observed, states, model = _simulate("rcp", network, duration, 0.05,
                                               initial_rate_fraction=FIG2_INITIAL_RATE_FRACTION)
    n_active = np.stack([network.active(t) for t in times]).sum(axis=1).astype(float)
    estimate = observed["flow_estimate"][:, 0]
    utilization = observed["load"][:, 0] / network.capacities_pps[0]
    print("a. RCP paper Fig. 2: 20 flows from 0 s, 20 more from 40 s, the first 20 leave at 100 s "
          f"(100 Mb/s, RTT 100 ms, alpha = 0.1, beta = 1; R starts at {FIG2_INITIAL_RATE_FRACTION:g} C)")
    rows = []
    for start, stop in network.phases():
        stop = min(stop, duration)
        inside = (times >= start) & (times < stop)
        n = float(n_active[inside][0])
        settle = settle_time(times[inside], estimate[inside] / n - 1.0, ESTIMATE_TOLERANCE, start)
        rows.append({"phase": f"[{start:g}, {stop:g}) s", "flows": n,
                     "estimate_at_end": float(estimate[inside][-1]),
                     "within_5pct_after_s": None if settle is None else settle - start,
                     "mean_utilization": float(np.mean(utilization[inside])),
                     "max_queue_packets": float(np.max(model.block(states[inside], "queue")))})
    print(table(["phase", "N", "C/R at end", "C/R within 5 % of N after", "mean utilization", "max queue"],
                 [[r["phase"], f"{r['flows']:g}", f"{r['estimate_at_end']:.3f}",
                   "never" if r["within_5pct_after_s"] is None else f"{r['within_5pct_after_s']:.2f} s",
                   f"{r['mean_utilization']:.3f}", f"{r['max_queue_packets']:.1f}"] for r in rows]))
    _plot_rcp_fig2(out / "rcp_fig2.png", times, n_active, estimate, utilization)
    return {"phases": rows, "gains": {"alpha": 0.1, "beta": 1.0, "rate_interval_s": 0.01, "rtt_gain": 0.02},
            "initial_rate_fraction": FIG2_INITIAL_RATE_FRACTION}


def _plot_rcp_fig2(path, times, n_active, estimate, utilization) -> None:
    import matplotlib.pyplot as plt

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
    fig.savefig(path, dpi=120)
    plt.close(fig)


# ---------------------------------------------------------------------- b. QCP Table 2 / Fig. 3
#: The runs of the N-estimation experiment: label, protocol, gains.
ESTIMATORS = (
    ("QCP (1, 1) eq. (4)", "qcp", {"alpha": 1.0, "beta": 1.0}),
    ("QCP (1, 1) eq. (14)", "qcp", {"alpha": 1.0, "beta": 1.0, "variant": "simplified"}),
    ("QCP (1, 1) eq. (4), d = 50 ms", "qcp", {"alpha": 1.0, "beta": 1.0, "control_interval": 0.05}),
    ("RCP (0.1, 1)", "rcp", {"alpha": 0.1, "beta": 1.0}),
    ("RCP (1, 1)", "rcp", {"alpha": 1.0, "beta": 1.0}),
)


def n_estimate(out: Path, quick: bool) -> dict:
    from fluidcc import scenarios
    from fluidcc.models.qcp_network import mean_link_rtts

    network = scenarios.qcp_table2()
    n = float(network.n_flows)
    interval = float(mean_link_rtts(network)[0])  # QCP's control interval d (100 ms)
    duration = 20.0 if quick else 40.0
    print(f"b. QCP paper Table 2 / Fig. 3: {network.n_flows} flows on 20 Mb/s, RTT 100 ms; routers start at "
          f"R = 0.05 C (N_hat = 20); QCP control interval d = {interval * 1e3:g} ms")
    rows, series, printed = [], {}, []
    for label, protocol, gains in ESTIMATORS:
        times, observed, states, model = _simulate(protocol, network, duration, interval / 4, **dict(gains))
        estimate = observed["flow_estimate"][:, 0]
        error = estimate / n - 1.0
        settle = settle_time(times, error, ESTIMATE_TOLERANCE)
        first = np.flatnonzero(np.abs(error) <= ESTIMATE_TOLERANCE)
        utilization = observed["load"][:, 0] / network.capacities_pps[0]
        queue = model.block(states, "queue")[:, 0]
        sent = model.block(states, "sent")
        finish = [float(times[np.argmax(s >= FILE_PACKETS)]) if s[-1] >= FILE_PACKETS else None for s in sent.T]
        checkpoints = {f"error_at_{t:g}s": float(np.interp(t, times, error)) for t in (0.5, 1, 2, 5, 10, 20)
                       if t <= duration}
        row = {
            "run": label,
            "first_within_5pct_s": float(times[first[0]]) if first.size else None,
            "stays_within_5pct_from_s": settle,
            "stays_within_5pct_from_intervals": None if settle is None else settle / interval,
            "mean_abs_error_first_10s": float(np.mean(np.abs(error[times <= 10.0]))),
            "max_abs_error_last_5s": float(np.max(np.abs(error[times >= duration - 5.0]))),
            **checkpoints,
            "mean_utilization_first_10s": float(np.mean(utilization[times <= 10.0])),
            "max_queue_packets": float(np.max(queue)),
            "last_4MB_file_done_s": None if any(f is None for f in finish) else max(finish),
        }
        rows.append(row)
        series[label] = (times, estimate, utilization, queue)
        printed.append([label, "-" if row["first_within_5pct_s"] is None else f"{row['first_within_5pct_s']:.2f}",
                      "never" if settle is None else f"{settle:.2f} ({settle / interval:.1f} d)",
                      f"{row['mean_abs_error_first_10s']:.3f}", f"{row['max_abs_error_last_5s']:.3f}",
                      f"{row['mean_utilization_first_10s']:.3f}", f"{row['max_queue_packets']:.0f}",
                      "not within run" if row["last_4MB_file_done_s"] is None else f"{row['last_4MB_file_done_s']:.2f}"])
    print(table(["run", "first within 5 % (s)", "stays within 5 % from (s)", "mean |err| 0-10 s",
                  "max |err| last 5 s", "util 0-10 s", "max queue", "4 MB files done (s)"], printed))
    moments = [key for key in rows[0] if key.startswith("error_at_")]
    print("  estimate / N - 1 over time:")
    print(table(["run", *[key[len("error_at_"):] for key in moments]],
                 [[r["run"], *[f"{r[key]:+.3f}" for key in moments]] for r in rows]))
    print(f"  (4 MB x {network.n_flows} flows at full utilization: "
          f"{FILE_PACKETS * n / network.capacities_pps[0]:.1f} s)")
    write_csv(out / "n_estimate.csv", rows)
    _plot_n_estimate(out / "n_estimate.png", series, n)
    return {"rows": rows, "control_interval_s": interval, "flows": n, "tolerance": ESTIMATE_TOLERANCE}


def _plot_n_estimate(path, series, n) -> None:
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(3, 1, figsize=(8, 8), sharex=True, constrained_layout=True)
    for k, (label, (times, estimate, utilization, queue)) in enumerate(series.items()):
        style = {"color": f"C{k}", "lw": 3.0 if k == 0 else 1.2, "ls": "--" if k == 1 else "-", "zorder": 5 - k}
        axes[0].plot(times, estimate, label=label, **style)
        axes[1].plot(times, utilization, **style)
        axes[2].plot(times, queue, **style)
    axes[0].axhline(n, color="k", ls="--", lw=1, label="N")
    axes[0].set_ylabel("estimate of N")
    axes[0].set_ylim(0, 3 * n)
    axes[0].legend(fontsize=8)
    axes[1].set_ylabel("utilization")
    axes[2].set_ylabel("queue (packets)")
    axes[2].set_xlabel("time (s)")
    axes[0].set_title("Estimating N: 10 flows, 20 Mb/s, RTT 100 ms (QCP paper Table 2 / Fig. 3, fluid)")
    fig.savefig(path, dpi=120)
    plt.close(fig)


# ---------------------------------------------------------------------- c. QCP Figs. 10/11
TWO_BOTTLENECK_RUNS = (
    ("QCP (1, 1)", "qcp", {"alpha": 1.0, "beta": 1.0}),
    ("QCP (1, 0.5)", "qcp", {"alpha": 1.0, "beta": 0.5}),
    ("RCP (0.1, 1)", "rcp", {"alpha": 0.1, "beta": 1.0}),
)


def two_bottleneck(out: Path, quick: bool) -> dict:
    from fluidcc import scenarios
    from fluidcc.maxmin import maxmin
    from fluidcc.units import pps_to_mbps

    network = scenarios.qcp_fig10()
    fair = np.asarray(maxmin(network).rates_pps, dtype=float)
    shared = network.link_index("l1")
    capacity = network.capacities_pps[shared]
    on_shared = network.flows_on("l1")
    ps_load = sum(min(capacity / len(on_shared), fair[i]) for i in on_shared)
    duration = 30.0 if quick else 60.0
    g0, g1 = 0, network.n_flows - 1  # one flow of each group (the groups' flows are identical)
    print(f"c. QCP paper Figs. 10/11 (fluid): group 0 held at l0 (5 Mb/s), group 1 on l1 (20 Mb/s) with it; "
          f"max-min {pps_to_mbps(fair[g0]):g} and {pps_to_mbps(fair[g1]):g} Mb/s; processor sharing at l1 would "
          f"use {ps_load / capacity:.0%} of it")
    rows, series = [], {}
    for label, protocol, gains in TWO_BOTTLENECK_RUNS:
        times, observed, states, model = _simulate(protocol, network, duration, 0.02, **dict(gains))
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
    print(table(["run", "group 0 Mb/s", "group 1 Mb/s", "util l1 (last 5 s)", "max |rate/max-min - 1| last 5 s"],
                 [[r["run"], f"{r['group0_mbps']:.4f}", f"{r['group1_mbps']:.4f}",
                   f"{r['utilization_l1_last_5s_mean']:.4f}", f"{r['max_abs_deviation_last_5s']:.2e}"] for r in rows]))
    write_csv(out / "two_bottleneck.csv", rows)
    _plot_two_bottleneck(out / "two_bottleneck.png", series, fair[[g0, g1]])
    return {"rows": rows, "processor_sharing_utilization_l1": ps_load / capacity}


def _plot_two_bottleneck(path, series, fair) -> None:
    import matplotlib.pyplot as plt

    from fluidcc.units import pps_to_mbps

    fig, axes = plt.subplots(len(series), 1, figsize=(8, 2.6 * len(series)), sharex=True, constrained_layout=True)
    for ax, (label, (times, rates)) in zip(np.atleast_1d(axes), series.items()):
        for k, group in enumerate(("group 0", "group 1")):
            ax.plot(times, pps_to_mbps(rates[:, k]), color=f"C{k}", label=group)
            ax.axhline(pps_to_mbps(fair[k]), color=f"C{k}", ls="--", lw=1)
        ax.set_ylabel("rate (Mb/s)")
        ax.set_title(label + " (dashed: max-min)")
        ax.legend(fontsize=8)
    np.atleast_1d(axes)[-1].set_xlabel("time (s)")
    fig.savefig(path, dpi=120)
    plt.close(fig)


if __name__ == "__main__":
    raise SystemExit(main())
