"""XCP vs iXCP on the iXCP paper's networks, and MIAIMD (VCP's fluid model) on the VCP parking lot.

Reproduces, with fluidcc's fluid models on networks:

a. iXCP paper, Figs. 1 and 2: one short flow on a 155 Mb/s link, n long flows over it and a
   100 Mb/s link (n = 2, 4, ..., 1024). The short flow's rate, the 155 Mb/s link's utilization and
   the ratio to the max-min rate (55 Mb/s) under XCP (eqs. (1)-(2)) and iXCP (eq. (3)), from the
   fixed point (`XCPNetwork.equilibrium`) and from simulation (all n in one batch: the n long flows
   are one flow of multiplicity n), with the largest deviation between the two over the end of the
   run; and the symbolic n -> oo limit of XCP's utilization, alpha / (alpha + gamma).
b. iXCP paper, Figs. 6 and 7 (flows join at 20 s and leave at 40 s): XCP and iXCP for 60 s; per
   phase the settling time to within 2 % of max-min and the deviation at the end of the phase.
c. VCP paper, section 4.2 (parking lot, seven links, 50 long and 5 cross flows per link; all links
   100 Mb/s, or link 4 at 50 Mb/s): MIAIMD's fixed point (eqs. (10), (16)) against max-min and a
   simulation check; with the paper's RTTs (long flows 280 ms, cross flows 40 ms) and with every
   flow at 280 ms, where Theorem 2 says the allocation is max-min fair relative to the
   equilibrium link loads gamma C_l rho_l*.

Run:

    python examples/xcp_vs_ixcp.py --out xcp-vs-ixcp          # full: 1-2 minutes on 2 cores
    python examples/xcp_vs_ixcp.py --quick --out xcp-vs-ixcp  # n up to 64, shorter horizons: ~40 s

It prints the tables and writes into --out: fig1_2.png, fig1_2.csv, fig6_7.png,
fig6_7_settling.csv, parking_lot.csv and results.json (every number, with provenance).
Units: rates in Mb/s (1000-byte packets) unless a column says packets/s; times in seconds.
"""

from __future__ import annotations

import dataclasses
import math
import sys
import time
from pathlib import Path

import numpy as np

from _report import run, table, write_csv  # examples/_report.py


def main(argv: list[str] | None = None) -> int:
    sections = (("fig1_2", fig1_2), ("fig6_7", fig6_7), ("parking_lot", parking_lot))
    return run(__doc__.split("\n\n")[0], sections, "n up to 64 and shorter horizons (about 40 s)", argv)


def _finite_or_none(value: float):
    return value if math.isfinite(value) else None


# ------------------------------------------------------------------------------------ a. Figs. 1, 2
#: Gains of the iXCP paper's simulations (and XCP's defaults): eqs. (1)-(3).
ALPHA, BETA, GAMMA = 0.4, 0.226, 0.1
SHORT_MAXMIN_MBPS = 55.0


def fig1_2(out: Path, quick: bool) -> dict:
    import sympy as sp

    from fluidcc import scenarios
    from fluidcc.dde import solve
    from fluidcc.models import xcp_network
    from fluidcc.units import pps_to_mbps

    ns = [2**k for k in range(1, 7 if quick else 11)]
    # Horizons (s) and the final window compared with the fixed point. iXCP is slower: the short
    # flow's only growth is its 1/(n+1) share of the spare bandwidth of link l1 (the shuffle on
    # l1 involves it alone), so its time constant grows like n (about 200 s at n = 1024).
    horizon = {"xcp": 100.0, "ixcp": 200.0} if quick else {"xcp": 400.0, "ixcp": 2000.0}
    window = 50.0 if quick else 200.0
    steps_per_delay = 16
    network = scenarios.ixcp_fig1(1)  # flow 0: short; flow 1: one long flow standing for n
    capacity_l1 = network.capacities_pps[0]
    print(f"a. iXCP paper Figs. 1/2: short flow on l1 (155 Mb/s), n long flows on l1 and l2 (100 Mb/s); "
          f"n = {ns[0]} ... {ns[-1]}")
    rows = []
    series = {}
    for variant in ("xcp", "ixcp"):
        model = xcp_network.XCPNetwork(network, variant)
        params = xcp_network.network_params(network, alpha=ALPHA, beta=BETA, gamma=GAMMA,
                                            multiplicity=[[1, n] for n in ns])
        fixed = [model.equilibrium(params, point=k) for k in range(len(ns))]
        assert all(f["consistent"] for f in fixed), f"{variant}: an inconsistent fixed point"
        T = horizon[variant]
        save = np.linspace(T - window, T, int(round(window / 0.5)) + 1)
        begin = time.perf_counter()
        solution = solve(model, params, T, save, steps_per_delay=steps_per_delay)
        sim_wall = time.perf_counter() - begin
        assert np.all(solution.status == 0), solution.messages
        rates = solution.ys[:, :, :2]  # (B, S, 2): short, one long flow
        for k, n in enumerate(ns):
            fp_rates = fixed[k]["flow_rate"]
            deviation = float(np.max(np.abs(rates[k] / fp_rates - 1.0)))
            short_sim = float(rates[k, -1, 0])
            utilization_sim = float((rates[k, -1, 0] + n * rates[k, -1, 1]) / capacity_l1)
            rows.append({
                "variant": variant, "n_long": n,
                "fixed_point_short_mbps": pps_to_mbps(float(fp_rates[0])),
                "fixed_point_utilization_l1": float(fixed[k]["utilization"][0]),
                "fixed_point_ratio_to_maxmin": pps_to_mbps(float(fp_rates[0])) / SHORT_MAXMIN_MBPS,
                "simulated_short_mbps": pps_to_mbps(short_sim),
                "simulated_utilization_l1": utilization_sim,
                "simulated_ratio_to_maxmin": pps_to_mbps(short_sim) / SHORT_MAXMIN_MBPS,
                "max_relative_deviation_sim_vs_fixed_point": deviation,
                "deviation_window_s": f"[{T - window:g}, {T:g}]",
            })
        series[variant] = {"horizon_s": T, "window_s": window, "simulation_wall_s": sim_wall}
        print(f"  {variant}: simulated {T:g} s for all n in one batch ({len(ns)} points, {steps_per_delay} "
              f"RK4 steps per 40 ms RTT) in {sim_wall:.1f} s")

    headers = ["variant", "n", "short Mb/s (fp)", "util l1 (fp)", "ratio (fp)", "short Mb/s (sim)",
               "util l1 (sim)", "max |sim/fp - 1| over last " + f"{window:g} s"]
    print(table(headers, [[r["variant"], r["n_long"], f"{r['fixed_point_short_mbps']:.4f}",
                            f"{r['fixed_point_utilization_l1']:.4f}", f"{r['fixed_point_ratio_to_maxmin']:.4f}",
                            f"{r['simulated_short_mbps']:.4f}", f"{r['simulated_utilization_l1']:.4f}",
                            f"{r['max_relative_deviation_sim_vs_fixed_point']:.1e}"] for r in rows]))
    write_csv(out / "fig1_2.csv", rows)

    # The n -> oo limit of XCP's utilization, from the closed form of eqs. (1)-(2).
    closed = xcp_network.two_link_fixed_point("xcp")
    s = closed["symbols"]
    paper = {s["c_a"]: 155, s["c_b"]: 100, s["alpha"]: sp.Rational(2, 5), s["gamma"]: sp.Rational(1, 10)}
    limit = sp.nsimplify(closed["limit_utilization"].subs(paper))
    bound = sp.Rational(2, 5) / (sp.Rational(2, 5) + sp.Rational(1, 10))
    assert limit == bound == sp.Rational(4, 5), limit
    short_limit = limit * 155 - 100
    print(f"  XCP n -> oo (two_link_fixed_point): utilization -> {limit} = alpha/(alpha + gamma) = "
          f"{float(limit):.2f}; short flow -> {short_limit} Mb/s = {float(short_limit / 55):.3f} of max-min")
    _plot_fig1_2(out / "fig1_2.png", rows, float(limit))
    return {"rows": rows, "simulation": series, "steps_per_delay": steps_per_delay,
            "limit_utilization_xcp": str(limit), "limit_utilization_xcp_symbolic": str(closed["limit_utilization"]),
            "limit_short_rate_mbps_xcp": float(short_limit), "gains": {"alpha": ALPHA, "beta": BETA, "gamma": GAMMA}}


def _plot_fig1_2(path: Path, rows: list[dict], limit: float) -> None:
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), constrained_layout=True)
    for variant, colour in (("xcp", "C3"), ("ixcp", "C0")):
        mine = [r for r in rows if r["variant"] == variant]
        n = [r["n_long"] for r in mine]
        for ax, key in ((axes[0], "utilization_l1"), (axes[1], "ratio_to_maxmin")):
            ax.plot(n, [r["fixed_point_" + key] for r in mine], "-", color=colour, label=f"{variant}: fixed point")
            ax.plot(n, [r["simulated_" + key] for r in mine], "o", mfc="none", color=colour,
                    label=f"{variant}: simulation")
    axes[0].axhline(limit, color="k", ls=":", lw=1, label="XCP n -> oo: alpha/(alpha+gamma)")
    axes[1].axhline(24 / 55, color="k", ls=":", lw=1, label="XCP n -> oo: 24/55")
    axes[0].set_ylabel("utilization of the 155 Mb/s link")
    axes[1].set_ylabel("short flow's rate / max-min rate (55 Mb/s)")
    for ax in axes:
        ax.set_xscale("log", base=2)
        ax.set_xlabel("number of long flows n")
        ax.legend(fontsize=8)
        ax.grid(alpha=0.3)
    fig.suptitle("iXCP paper, Figs. 1/2: XCP under-utilizes the 155 Mb/s link; iXCP is max-min fair")
    fig.savefig(path, dpi=120)
    plt.close(fig)


# ------------------------------------------------------------------------------------ b. Figs. 6, 7
#: The iXCP paper's max-min rates for Figs. 6/7 (section 4.3), Mb/s, per phase.
PAPER_FIG6_MAXMIN = {
    0.0: {"long": 40, "s1": 110, "s2": 60, "s3": 40, "s4": 40},
    20.0: {"long": 30, "s1": 30, "s2": 70, "s3": 45, "s4": 45, "s5": 30, "s6": 30, "s7": 30},
    40.0: {"long": 50, "s1": 100, "s2": 50, "s3": 70},
}
SETTLING_TOLERANCE = 0.02


def fig6_7(out: Path, quick: bool) -> dict:
    from fluidcc import scenarios
    from fluidcc.models import xcp_network
    from fluidcc.sweep import settling_times, simulate_network
    from fluidcc.units import pps_to_mbps

    network = scenarios.ixcp_fig6()
    duration = 60.0
    print(f"b. iXCP paper Figs. 6/7: 3 links, flows join at 20 s and leave at 40 s; {duration:g} s simulated")
    datasets, phases, rows = {}, {}, []
    for variant in ("xcp", "ixcp"):
        begin = time.perf_counter()
        data = simulate_network(variant, network, {"alpha": ALPHA, "beta": BETA, "gamma": GAMMA}, duration_s=duration,
                                command="examples/xcp_vs_ixcp.py")
        wall = time.perf_counter() - begin
        assert data.attrs["status"] == 0, data.attrs["status_message"]
        datasets[variant] = data
        model = xcp_network.XCPNetwork(network, variant)
        params = xcp_network.network_params(network, alpha=ALPHA, beta=BETA, gamma=GAMMA)
        settle = settling_times(data, tolerance=SETTLING_TOLERANCE)
        phases[variant] = {"simulation_wall_s": wall, "phases": []}
        times = data["time"].values
        for row in settle:
            start, stop = row["start_s"], min(row["stop_s"], duration)
            inside = (times >= start) & (times < stop) if stop < duration else (times >= start)
            end_index = int(np.flatnonzero(inside)[-1])
            fair = data["maxmin_rate"].values[end_index]
            # The max-min rates fluidcc computes are the paper's.
            paper = PAPER_FIG6_MAXMIN[start]
            for name, mbps in paper.items():
                i = network.flow_index(name)
                assert abs(pps_to_mbps(fair[i]) - mbps) < 1e-9, (start, name, pps_to_mbps(fair[i]))
            # The model's own fixed point of the phase: XCP's deviation is its equilibrium, not a
            # transient.
            fixed = model.equilibrium(params, at=start + 1e-9)
            rate = data["rate"].values[end_index]
            sending = fair > 0
            fixed_gap = float(np.max(np.abs(rate[sending] / fixed["flow_rate"][sending] - 1.0)))
            slowest = _slowest_flow(data, start, stop, SETTLING_TOLERANCE)
            entry = {
                "variant": variant, "phase_start_s": start, "phase_end_s": stop,
                "settling_s": _finite_or_none(row["settling_s"]),
                "slowest_flow": slowest,
                "deviation_from_maxmin_at_end": row["final_deviation"],
                "deviation_from_fixed_point_at_end": fixed_gap,
                "time_of_end_sample_s": float(times[end_index]),
                **{f"rate_{name}_mbps": float(pps_to_mbps(rate[network.flow_index(name)])) for name in paper},
                **{f"maxmin_{name}_mbps": float(mbps) for name, mbps in paper.items()},
                **{f"fixed_point_{name}_mbps": float(pps_to_mbps(fixed["flow_rate"][network.flow_index(name)]))
                   for name in paper},
            }
            rows.append(entry)
            phases[variant]["phases"].append(entry)
        print(f"  {variant}: {wall:.1f} s of wall time (with the JAX compile)")
    print(table(["variant", "phase", f"settling to {SETTLING_TOLERANCE:.0%}", "slowest flow",
                  "max |rate/maxmin - 1| at end", "max |rate/fixed point - 1| at end"],
                 [[r["variant"], f"[{r['phase_start_s']:g}, {r['phase_end_s']:g}) s",
                   f"{r['settling_s']:.2f} s" if r["settling_s"] is not None else "never",
                   r["slowest_flow"] or "-", f"{r['deviation_from_maxmin_at_end']:.4f}",
                   f"{r['deviation_from_fixed_point_at_end']:.1e}"] for r in rows]))
    for variant in ("xcp", "ixcp"):
        for r in [r for r in rows if r["variant"] == variant]:
            names = [k[len("rate_"):-len("_mbps")] for k in r if k.startswith("rate_")]
            print(f"  {variant} at t = {r['time_of_end_sample_s']:.2f} s: "
                  + ", ".join(f"{n} {r['rate_' + n + '_mbps']:.2f} ({r['maxmin_' + n + '_mbps']:g})" for n in names)
                  + "  [Mb/s; max-min in brackets]")
    write_csv(out / "fig6_7_settling.csv", [
        {k: v for k, v in r.items() if not (k.startswith("rate_") or k.startswith("maxmin_") or
                                            k.startswith("fixed_point_"))} for r in rows])
    _plot_fig6_7(out / "fig6_7.png", datasets)
    return phases


def _slowest_flow(data, start: float, stop: float, tolerance: float):
    """The flow whose rate leaves the tolerance band around max-min last in [start, stop)."""
    times = data["time"].values
    inside = np.flatnonzero((times >= start) & (times < stop)) if stop < times[-1] else np.flatnonzero(times >= start)
    rates, fair = data["rate"].values[inside], data["maxmin_rate"].values[inside]
    last, who = -1, None
    for i, name in enumerate(data["flow"].values):
        if fair[0, i] <= 0:
            continue
        bad = np.flatnonzero(np.abs(rates[:, i] / fair[:, i] - 1.0) > tolerance)
        if bad.size and bad[-1] > last:
            last, who = int(bad[-1]), str(name)
    return who


def _plot_fig6_7(path: Path, datasets: dict) -> None:
    import matplotlib.pyplot as plt

    from fluidcc.units import pps_to_mbps

    fig, axes = plt.subplots(2, 2, figsize=(13, 7), sharex=True, constrained_layout=True,
                             gridspec_kw={"height_ratios": [2, 1]})
    for column, (variant, data) in enumerate(datasets.items()):
        t = data["time"].values
        rates = pps_to_mbps(data["rate"].values)
        fair = pps_to_mbps(data["maxmin_rate"].values)
        for i, name in enumerate(data["flow"].values):
            on = fair[:, i] > 0
            axes[0, column].plot(t, np.where(on, rates[:, i], np.nan), color=f"C{i}", lw=1.1, label=str(name))
            axes[0, column].plot(t, np.where(on, fair[:, i], np.nan), color=f"C{i}", lw=0.9, ls="--")
        for l, name in enumerate(data["link"].values):
            axes[1, column].plot(t, data["utilization"].values[:, l], lw=1.0, label=str(name))
        axes[1, column].axhline(1.0, color="k", ls=":", lw=0.8)
        axes[0, column].set_title(f"{variant.upper()}: rates (solid) and the paper's max-min rates (dashed)")
        axes[0, column].set_ylabel("rate [Mb/s]")
        axes[1, column].set_ylabel("link utilization")
        axes[1, column].set_xlabel("time [s]")
        axes[1, column].set_ylim(0.3, 1.08)
    axes[0, 1].legend(loc="upper right", fontsize=8, ncol=2)
    axes[1, 1].legend(loc="lower right", fontsize=8)
    fig.suptitle("iXCP paper, Figs. 6/7: flows s5-s7 join at 20 s, s4-s7 leave at 40 s")
    fig.savefig(path, dpi=120)
    plt.close(fig)


# ------------------------------------------------------------------------------------ c. parking lot
#: VCP paper, section 4.2, second case (link 4 at 50 Mb/s): Mb/s per flow.
VCP_PAPER_RATES = {"vcp_long": 0.39, "vcp_cross4": 4.96, "xcp_all": 0.85}


def equal_rtt_variant(network):
    """The same network with an access delay on every flow so that all RTTs equal the longest
    one exactly (bit for bit: then the flows share one delay of the DDE)."""
    target = float(network.rtt_s.max())
    delays = network.link_delays_s
    flows = []
    for flow in network.flows:
        path = sum(delays[network.link_index(name)] for name in flow.route)
        access = max(target / 2.0 - path, 0.0)
        for _ in range(8):  # nudge away a rounding difference of the sum
            rtt = 2.0 * (access + path)
            if rtt == target:
                break
            access = float(np.nextafter(access, np.inf if rtt < target else -np.inf))
        flows.append(dataclasses.replace(flow, access_delay_s=access))
    equal = network.replace(flows=flows)
    assert np.all(equal.rtt_s == target), np.unique(equal.rtt_s)
    return equal


def parking_lot(out: Path, quick: bool) -> dict:
    from fluidcc import scenarios
    from fluidcc.maxmin import maxmin
    from fluidcc.models import miaimd_network, xcp_network
    from fluidcc.sweep import simulate_network
    from fluidcc.units import pps_to_mbps

    defaults = {"kappa": 0.25, "alpha": 1.0, "gamma": 0.98}
    duration = 60.0 if quick else 150.0
    steps_per_delay = 16 if quick else 32
    print(f"c. VCP paper section 4.2, parking lot: MIAIMD (kappa {defaults['kappa']}, alpha {defaults['alpha']}, "
          f"gamma {defaults['gamma']}) fixed point vs max-min; simulation check over {duration:g} s")
    rows = []
    for link4 in (None, 50.0):
        base = scenarios.vcp_parking_lot(link4)
        variants = (("paper (long 280 ms, cross 40 ms)", base), ("equal (all 280 ms)", equal_rtt_variant(base)))
        for rtts, network in variants:
            model = miaimd_network.MIAIMDNetwork(network)
            params = miaimd_network.network_params(network, **defaults)
            fixed = model.equilibrium(params)
            assert fixed["consistent"] and fixed["methods_gap"] < 1e-8, fixed["methods_gap"]
            rates = fixed["flow_rate"]
            fair = np.asarray(maxmin(network).rates_pps, dtype=np.float64)
            # Theorem 2: max-min fair with respect to the equilibrium link loads gamma C_l rho_l*.
            loads = fixed["load_factor"] * defaults["gamma"] * network.capacities_pps
            fair_at_loads = np.asarray(maxmin(network.replace(capacities_pps=loads)).rates_pps, dtype=np.float64)
            gap_at_loads = float(np.max(np.abs(rates / fair_at_loads - 1.0)))
            # Theorem 2's formula r_i = alpha / (kappa T_i (1 - 1 / max_l rho_l)), each flow's own T_i.
            rho_path = np.array([fixed["load_factor"][network.route_indices(i)].max() for i in range(network.n_flows)])
            formula = defaults["alpha"] / (defaults["kappa"] * network.rtt_s * (1.0 - 1.0 / rho_path))
            formula_gap = float(np.max(np.abs(rates / formula - 1.0)))
            begin = time.perf_counter()
            data = simulate_network("miaimd", network, defaults, duration_s=duration, steps_per_delay=steps_per_delay,
                                    command="examples/xcp_vs_ixcp.py")
            wall = time.perf_counter() - begin
            final = data["rate"].values[-1]
            sim_gap = float(np.max(np.abs(final / rates - 1.0)))
            xcp = xcp_network.XCPNetwork(base, "xcp").equilibrium(xcp_network.network_params(base))["flow_rate"]
            names = network.flow_names
            pick = {"long": names.index("long[0]"), "cross1": names.index("cross1[0]"),
                    "cross4": names.index("cross4[0]")}
            row = {"link4_mbps": link4 if link4 is not None else 100.0, "rtts": rtts}
            for label, i in pick.items():
                row[f"{label}_rtt_ms"] = float(network.rtt_s[i] * 1e3)
                row[f"{label}_fixed_point_mbps"] = float(pps_to_mbps(rates[i]))
                row[f"{label}_simulated_mbps"] = float(pps_to_mbps(final[i]))
                row[f"{label}_maxmin_mbps"] = float(pps_to_mbps(fair[i]))
            for label, i in pick.items():
                row[f"{label}_xcp_fixed_point_mbps"] = float(pps_to_mbps(xcp[i]))
            row.update({
                "load_factor_l1": float(fixed["load_factor"][0]), "load_factor_l4": float(fixed["load_factor"][3]),
                "max_rel_gap_to_maxmin_at_equilibrium_loads": gap_at_loads,
                "max_rel_gap_to_theorem2_formula": formula_gap,
                "max_rel_gap_simulation_vs_fixed_point": sim_gap,
                "simulated_s": duration, "simulation_wall_s": wall,
            })
            rows.append(row)
    headers = ["l4 Mb/s", "RTTs", "long fp/sim/maxmin", "cross1 fp/sim/maxmin", "cross4 fp/sim/maxmin", "rho l1, l4",
               "vs maxmin @ loads", "sim vs fp"]
    print(table(headers, [[f"{r['link4_mbps']:g}", r["rtts"].split(" ")[0]]
                           + ["/".join(f"{r[k + suffix]:.4f}" for suffix in ("_fixed_point_mbps", "_simulated_mbps",
                                                                              "_maxmin_mbps"))
                              for k in ("long", "cross1", "cross4")]
                           + [f"{r['load_factor_l1']:.4f}, {r['load_factor_l4']:.4f}",
                              f"{r['max_rel_gap_to_maxmin_at_equilibrium_loads']:.1e}",
                              f"{r['max_rel_gap_simulation_vs_fixed_point']:.1e}"] for r in rows]))
    second = next(r for r in rows if r["link4_mbps"] == 50.0 and r["rtts"].startswith("paper"))
    ratio = second["cross4_fixed_point_mbps"] / second["long_fixed_point_mbps"]
    print(f"  l4 = 50 Mb/s, paper RTTs: MIAIMD fixed point long {second['long_fixed_point_mbps']:.3f}, cross4 "
          f"{second['cross4_fixed_point_mbps']:.3f} Mb/s (ratio {ratio:.2f} "
          f"= 280 ms / 40 ms); VCP paper (packet VCP): {VCP_PAPER_RATES['vcp_long']} and "
          f"{VCP_PAPER_RATES['vcp_cross4']} Mb/s")
    print(f"  XCP's fixed point there: long {second['long_xcp_fixed_point_mbps']:.3f}, cross4 "
          f"{second['cross4_xcp_fixed_point_mbps']:.3f}, cross1 {second['cross1_xcp_fixed_point_mbps']:.3f} Mb/s "
          f"(VCP paper, packet XCP: about {VCP_PAPER_RATES['xcp_all']} Mb/s for the first two)")
    write_csv(out / "parking_lot.csv", rows)
    return {"rows": rows, "parameters": defaults, "steps_per_delay": steps_per_delay, "vcp_paper": VCP_PAPER_RATES}


if __name__ == "__main__":
    sys.exit(main())
