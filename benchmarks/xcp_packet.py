"""XCP and iXCP at packet level (exact engine) on the iXCP paper's networks, against the fluid
fixed point (`fluidcc.models.XCPNetwork.equilibrium`) and max-min.

Scenarios (statistics without the first 20 % of each run: each flow's in-order data at its
receiver between 20 % of the run and its end, from a second run of the deterministic engine that
stops at 20 %):

- `fig2`: the Fig. 1 network (155 and 100 Mb/s, 20 ms each), one short flow on the first link and
  n long flows across both, all from t = 0; XCP and iXCP, each as ONE batch over n (one flow table
  per n). Per n: l1's utilization, the short flow's rate over its max-min rate (55 Mb/s), beside
  the fluid fixed point's (XCP's closed form: `fluidcc.models.xcp_network.two_link_fixed_point`);
  the mean queue at l1, the drops, and how far apart the long flows' windows are at the end. Cost:
  each batch's wall time beside ns-3's TCP NewReno on the same network and duration
  (`ns3/twolink.cc`, the n values on 2 processes). `--start-within S` starts the flows uniformly
  within the first S seconds (seed `--start-seed`) instead of all at 0.
- `fig2trace`: one of those runs (the first `--n` and `--variants`) sampled every 20 ms, to see
  what holds the short flow below max-min: the instants when the long flows' windows step down
  together (their delivered rate more than half a packet per flow and window below l2's capacity),
  l1's shuffled bandwidth h after them; with `--trace-window A B` the windows and the bottlenecks
  the long flows name, every 0.1 s from A to B.
- `fig5`: the five-hop network (`fluidcc.scenarios.ixcp_fig4`): per link the utilization and the
  mean normalized rate (rate / max-min rate) of the flows bottlenecked there, with their spread.
- `fig7`: the dynamic network of Figs. 6/7 (`fluidcc.scenarios.ixcp_fig6`: 150, 100 and 120 Mb/s;
  flows join at 20 s and leave at 40 s), 60 s: each flow's throughput per `--sample` seconds at
  its receiver (`simulate_exact(..., flow_series=True)`) against its max-min rate in each phase;
  per phase how long until every active flow stays within `--tolerance` of it
  (`fluidcc.runs.settling_times`), and the deviation at the phase's end.
- `random`: random networks (1-5 links, 2-20 flows; capacities scaled so that every flow's max-min
  rate is `--per-rtt` packets per propagation RTT, senders' interfaces 10x the fastest link): each
  long-lived flow's rate against the fluid fixed point.

`--scale` multiplies every capacity (0.1: a tenth of the paper's rates); `--window-rounding off`
runs the senders whose header declares the window they send with (the iXCP paper's section 4.1:
`fluidcc.packet.exact_protocols.xcp`).

    PYTHONPATH=src python benchmarks/xcp_packet.py --scenario fig2 --out fig2.json
    PYTHONPATH=src python benchmarks/xcp_packet.py --scenario fig2trace --variants ixcp --n 256 --duration 60
    PYTHONPATH=src python benchmarks/xcp_packet.py --scenario fig5
    PYTHONPATH=src python benchmarks/xcp_packet.py --scenario fig7
    PYTHONPATH=src python benchmarks/xcp_packet.py --scenario random --seeds 1 2 3 4 5 6
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import time

import numpy as np
import xarray as xr
from _harness import write_json
from _packet_scenarios import ns3_runs

from fluidcc import scenarios
from fluidcc.maxmin import maxmin, maxmin_at
from fluidcc.models import xcp_network
from fluidcc.network import Network
from fluidcc.packet import simulate_exact
from fluidcc.packet.exact_protocols import IXCP, XCP
from fluidcc.packet.workloads import FlowTable
from fluidcc.runs import settling_times

PROTOCOLS = {"xcp": XCP, "ixcp": IXCP}


def protocol(args, variant: str):
    return PROTOCOLS[variant](window_rounding=args.window_rounding == "on")


def scaled(network: Network, scale: float) -> Network:
    return Network(tuple(dataclasses.replace(l, capacity_pps=l.capacity_pps * scale) for l in network.links),
                   network.flows)


def late_goodput(network, protocol, tables, duration_s: float, sample_s: float):
    """(the full runs, each flow's goodput after 20 % of the run, packets/s (run, flow), wall s of both calls)."""
    began = time.perf_counter()
    full = simulate_exact(network, protocol, tables, duration_s=duration_s, sample_s=sample_s,
                          seeds=list(range(len(tables))))
    early = simulate_exact(network, protocol, tables, duration_s=0.2 * duration_s, sample_s=sample_s,
                           seeds=list(range(len(tables))))
    wall = time.perf_counter() - began
    return full, (full.received.values - early.received.values) / (0.8 * duration_s), wall


def fig2_table(n: int, args) -> FlowTable:
    """Fig. 2's flows for n long flows: flow 0 the short one; all from t = 0, or started uniformly
    within `--start-within` s from a stream of their own per n and `--start-seed` (so a run's
    starts do not depend on the other n of the sweep, and fig2 and fig2trace draw the same)."""
    starts = (np.random.default_rng([args.start_seed, n]).uniform(0.0, args.start_within, n + 1)
              if args.start_within > 0 else np.zeros(n + 1))
    return FlowTable(starts, np.full(n + 1, np.inf), route=np.array([0] + [1] * n))


def fig2(args) -> dict:
    ns = args.n
    base = scaled(scenarios.ixcp_fig1(1), args.scale)  # flow 0: the short route, flow 1: the long one
    c1, c2 = base.capacities_pps
    packet_bytes = float(base.packet_bytes)
    tables = [fig2_table(n, args) for n in ns]
    out = {"n": ns, "capacities_pps": [c1, c2], "duration_s": args.duration, "start_within_s": args.start_within}
    for variant in args.variants:
        full, rate, wall = late_goodput(base, protocol(args, variant), tables, args.duration, args.duration / 100)
        rows = []
        for k, n in enumerate(ns):
            network = scaled(scenarios.ixcp_fig1(n), args.scale)
            fixed = xcp_network.XCPNetwork(network, variant).equilibrium(xcp_network.network_params(network))
            run = full.isel(run=k)
            r = rate[k, : n + 1]
            row = {"n": n, "status": str(run.message.values), "utilization_l1": float(r.sum() / c1),
                   "utilization_l2": float(r[1:].sum() / c2), "short_over_maxmin": float(r[0] / (c1 - c2)),
                   "long_over_maxmin_mean": float(r[1:].mean() / (c2 / n)),
                   "fluid_utilization_l1": float(fixed["utilization"][0]),
                   "fluid_short_over_maxmin": float(fixed["flow_rate"][0] / (c1 - c2)),
                   "queue_mean_l1": float(run.queue_mean.values[0]), "buffer_l1": float(json.loads(full.attrs["buffer_packets"])[0]),
                   "drops": int(run.dropped.values.sum() + run.control_dropped.values.sum()),
                   "timeouts": int(run.timeouts.values.sum()),
                   # the long flows' windows at the end (packets): how far apart they are
                   "long_cwnd_min_packets": float(run.cwnd_bytes.values[1: n + 1].min() / packet_bytes),
                   "long_cwnd_max_packets": float(run.cwnd_bytes.values[1: n + 1].max() / packet_bytes)}
            rows.append(row)
            print(f"{variant:4s} n = {n:4d}: l1 {100 * row['utilization_l1']:5.1f} % (fluid "
                  f"{100 * row['fluid_utilization_l1']:5.1f} %), short / max-min {row['short_over_maxmin']:.3f} "
                  f"(fluid {row['fluid_short_over_maxmin']:.3f}), l2 {100 * row['utilization_l2']:5.1f} %, "
                  f"queue l1 {row['queue_mean_l1']:.1f} of {row['buffer_l1']:.0f}, drops {row['drops']}, "
                  f"long windows {row['long_cwnd_min_packets']:.3f}-{row['long_cwnd_max_packets']:.3f} packets, "
                  f"{row['status']}")
        print(f"{variant}: the batch of {len(ns)} runs (to {args.duration:g} s and to {0.2 * args.duration:g} s): "
              f"{wall:.0f} s wall")
        out[variant] = {"rows": rows, "wall_s": wall, "simulated_s": 1.2 * args.duration * len(ns)}
    if args.ns3:
        results, wall = ns3_runs("twolink", [[f"--long-flows={n}", "--stagger=0", f"--duration={args.duration:g}",
                                              "--seed=1"] for n in ns], processes=2)
        out["ns3_tcp"] = {"wall_s": wall, "simulated_s": args.duration * len(ns),
                          "per_run_wall_s": [r.get("wall_s") for r in results]}
        print(f"ns-3 TCP NewReno, the same {len(ns)} networks for {args.duration:g} s on 2 processes: {wall:.0f} s wall "
              f"({wall / (args.duration * len(ns)):.2f} s per simulated second; fluidcc above: "
              + ", ".join(f"{v} {out[v]['wall_s'] / out[v]['simulated_s']:.2f}" for v in args.variants) + ")")
    return out


def fig2trace(args) -> dict:
    """What holds the short flow of Fig. 2 below max-min, on one run (the first `--n`, the first of
    `--variants`):

    - the run sampled every 20 ms: the instants after 20 % of the run when the long flows' windows
      step down together (their delivered rate more than half a packet per flow and max-min window
      below l2's capacity), l1's shuffled bandwidth h in the 0.3 s after each against its median at
      other times, and how often l1's phi was negative (l1 telling its flows to shed);
    - with `--trace-window A B`: runs of the same network and flows stopped at A, A + 0.1, ..., B s:
      the short flow's window, the long flows' mean window, and how many long flows' last ACK
      named l1 as their bottleneck."""
    n, variant, step = args.n[0], args.variants[0], 0.02
    base = scaled(scenarios.ixcp_fig1(1), args.scale)  # route 0: the short flow's, route 1: the long flows'
    c1, c2 = base.capacities_pps
    packet_bytes = float(base.packet_bytes)
    table = fig2_table(n, args)
    run = simulate_exact(base, protocol(args, variant), [table], duration_s=args.duration, sample_s=step,
                         flow_series=True).isel(run=0)
    t = run.sample_time.values
    rate = run.delivered_series.values / step
    short, long_load = rate[:, 0] / (c1 - c2), rate[:, 1:].sum(axis=1) / c2
    shuffle = run.xcp_shuffle_series.values[:, 0]
    late = t > 0.2 * args.duration
    window = c2 / n * float(base.rtt_s[1])  # a long flow's max-min window, packets
    threshold = 1.0 - 0.5 / window  # half a packet per long flow below l2's capacity
    dip = long_load < threshold
    steps = t[late & dip & ~np.roll(dip, 1)]  # where a dip begins (the first sample is never late)
    after = np.zeros(t.shape, bool)
    peaks = []
    for t0 in steps:
        soon = (t >= t0) & (t <= t0 + 0.3)  # the step's own sample and the 0.3 s after it
        after |= soon
        peaks.append(float(shuffle[soon].max()))
    calm = shuffle[late & ~after]
    out = {"n": n, "variant": variant, "steps_s": steps.tolist(), "steps_per_s": len(steps) / (0.8 * args.duration),
           "l1_shuffle_after_steps_median": float(np.median(peaks)) if peaks else None,
           "l1_shuffle_median_else": float(np.median(calm)) if calm.size else None,
           "l1_phi_negative_share": float(np.mean(run.xcp_phi_series.values[late, 0] < 0)),
           "short_over_maxmin_late": float(short[late].mean()),
           "short_over_maxmin_last_5s": float(short[t > args.duration - 5.0].mean())}
    print(f"{variant} n = {n}, {args.duration:g} s: after 20 % of the run the long flows' windows stepped down "
          f"together {len(steps)} times ({out['steps_per_s']:.2f} per s; below {100 * threshold:.1f} % of l2); "
          f"l1's shuffled bandwidth h, its largest value from a step to 0.3 s after it: "
          + (f"{out['l1_shuffle_after_steps_median']:.0f} bytes (median over the steps)" if peaks else "(no step)")
          + (f", against a median of {out['l1_shuffle_median_else']:.0f} bytes at other times" if calm.size else "")
          + f"; l1's phi < 0 at "
          f"{100 * out['l1_phi_negative_share']:.1f} % of the 20-ms samples; the short flow at "
          f"{out['short_over_maxmin_late']:.3f} of max-min after 20 % of the run, "
          f"{out['short_over_maxmin_last_5s']:.3f} over its last 5 s")
    if args.trace_window:
        first, last = args.trace_window
        rows = []
        for end in np.round(np.arange(first, last + 1e-9, 0.1), 6):
            prefix = simulate_exact(base, protocol(args, variant), [table], duration_s=float(end),
                                    sample_s=0.1).isel(run=0)
            named = prefix.bottleneck.values[1: n + 1]
            rows.append({"t_s": float(end), "short_cwnd_packets": float(prefix.cwnd_bytes.values[0] / packet_bytes),
                         "long_cwnd_mean_packets": float(prefix.cwnd_bytes.values[1: n + 1].mean() / packet_bytes),
                         "long_naming_l1": int(np.sum(named == 0))})
            print(f"  at {end:6.2f} s: short flow's window {rows[-1]['short_cwnd_packets']:7.2f} packets, long flows' "
                  f"mean window {rows[-1]['long_cwnd_mean_packets']:.3f}, {rows[-1]['long_naming_l1']} of {n} long "
                  f"flows name l1 as their bottleneck")
        out["trace"] = rows
    return out


def fig5(args) -> dict:
    network = scenarios.ixcp_fig4(scale=args.scale)
    fair = maxmin(network).rates_pps
    groups = np.repeat(np.arange(5), scenarios.IXCP_FIG4_GROUPS)
    capacity = network.capacities_pps
    out = {"scale": args.scale, "duration_s": args.duration}
    for variant in args.variants:
        table = FlowTable(np.zeros(network.n_flows), np.full(network.n_flows, np.inf), route=np.arange(network.n_flows))
        full, rate, wall = late_goodput(network, protocol(args, variant), [table], args.duration, args.duration / 100)
        run, r = full.isel(run=0), rate[0]
        fixed = xcp_network.XCPNetwork(network, variant).equilibrium(xcp_network.network_params(network))
        load = np.array([r[[l in f.route for f in network.flows]].sum() for l in network.link_names])
        norm = r / fair
        row = {"status": str(run.message.values), "wall_s": wall, "utilization": (load / capacity).tolist(),
               "fluid_utilization": fixed["utilization"].tolist(),
               "normalized_mean": [float(norm[groups == k].mean()) for k in range(5)],
               "normalized_std": [float(norm[groups == k].std()) for k in range(5)],
               "fluid_normalized_mean": [float((fixed["flow_rate"] / fair)[groups == k].mean()) for k in range(5)],
               "worst_flow_vs_fluid": float(np.max(np.abs(r / fixed["flow_rate"] - 1))),
               "queue_mean": run.queue_mean.values.tolist(),
               "drops": int(run.dropped.values.sum() + run.control_dropped.values.sum())}
        out[variant] = row
        print(f"{variant:4s}: utilization {np.round(100 * np.array(row['utilization']), 1).tolist()} % "
              f"(fluid {np.round(100 * np.array(row['fluid_utilization']), 1).tolist()}); normalized rate per "
              f"link {np.round(row['normalized_mean'], 3).tolist()} +- {np.round(row['normalized_std'], 3).tolist()} "
              f"(fluid {np.round(row['fluid_normalized_mean'], 3).tolist()}); worst flow against the fluid "
              f"{100 * row['worst_flow_vs_fluid']:.1f} %; queues {np.round(row['queue_mean'], 1).tolist()}; "
              f"drops {row['drops']}; {row['status']}; {wall:.0f} s")
    return out


def fig7(args) -> dict:
    network = scaled(scenarios.ixcp_fig6(), args.scale)
    out = {"scale": args.scale, "duration_s": args.duration, "sample_s": args.sample, "tolerance": args.tolerance}
    for variant in args.variants:
        began = time.perf_counter()
        run = simulate_exact(network, protocol(args, variant), duration_s=args.duration, sample_s=args.sample,
                             flow_series=True).isel(run=0)
        wall = time.perf_counter() - began
        times = run.sample_time.values - args.sample / 2  # each sample's middle
        fair = np.stack([maxmin_at(network, t).rates_pps for t in times])
        series = xr.Dataset({"rate": (("time", "flow"), run.delivered_series.values / args.sample),
                             "maxmin_rate": (("time", "flow"), fair)}, coords={"time": times},
                            attrs={"network": json.dumps(network.to_dict())})
        rows = settling_times(series, tolerance=args.tolerance)
        utilization = run.served.values / (args.sample * network.capacities_pps)
        for row in rows:
            inside = (times > row["start_s"] + 10.0) & (times <= row["stop_s"])
            row["utilization_after_10s"] = utilization[inside].mean(axis=0).tolist()
        out[variant] = {"status": str(run.message.values), "wall_s": wall, "phases": rows}
        for row in rows:
            print(f"{variant:4s} [{row['start_s']:g}, {row['stop_s']:g}) s: every flow within "
                  f"{100 * args.tolerance:g} % of max-min from {row['settling_s']:.1f} s after the change on; at the "
                  f"phase's end {100 * row['final_deviation']:.1f} % off (worst over its last 5 s "
                  f"{100 * row['max_deviation_last_5s']:.1f} %); utilization from 10 s on "
                  f"{np.round(100 * np.array(row['utilization_after_10s']), 1).tolist()} %")
        print(f"{variant}: {run.message.values}, {wall:.0f} s")
    return out


def random_sized(seed: int, per_rtt: float, scale: float = 1.0) -> Network:
    """A random network (1-5 links, 2-20 flows, delays 5-30 ms) whose capacities make the smallest
    max-min rate `per_rtt` packets per propagation RTT (times `scale`), senders' interfaces 10x
    the fastest link."""
    rng = np.random.default_rng(seed)
    network = scenarios.random_network(int(rng.integers(1, 6)), int(rng.integers(2, 21)), seed=seed,
                                       capacity_mbps=(10.0, 100.0), delay_ms=(5.0, 30.0))
    factor = scale * per_rtt / float(np.min(maxmin(network).rates_pps * network.rtt_s))
    links = tuple(dataclasses.replace(l, capacity_pps=l.capacity_pps * factor) for l in network.links)
    fastest = max(l.capacity_pps for l in links)
    return Network(links, tuple(dataclasses.replace(f, interface_pps=10 * fastest) for f in network.flows))


def random(args) -> dict:
    out = {"per_rtt": args.per_rtt, "duration_s": args.duration, "seeds": {}}
    for seed in args.seeds:
        network = random_sized(seed, args.per_rtt)
        table = FlowTable(np.zeros(network.n_flows), np.full(network.n_flows, np.inf), route=np.arange(network.n_flows))
        rows = {}
        for variant in args.variants:
            full, rate, wall = late_goodput(network, protocol(args, variant), [table], args.duration, args.duration / 100)
            fixed = xcp_network.XCPNetwork(network, variant).equilibrium(xcp_network.network_params(network))
            error = rate[0] / fixed["flow_rate"] - 1
            rows[variant] = {"status": str(full.message.values[0]), "worst": float(np.max(np.abs(error))),
                             "errors": error.tolist(), "drops": int(full.dropped.values.sum()), "wall_s": wall}
            print(f"seed {seed} ({network.n_links} links, {network.n_flows} flows) {variant:4s}: worst flow "
                  f"{100 * rows[variant]['worst']:5.1f} % from the fluid fixed point; mean |error| "
                  f"{100 * np.mean(np.abs(error)):.1f} %; drops {rows[variant]['drops']}; {wall:.0f} s")
        out["seeds"][seed] = rows
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scenario", choices=("fig2", "fig2trace", "fig5", "fig7", "random"), default="fig2")
    parser.add_argument("--variants", nargs="+", choices=tuple(PROTOCOLS), default=list(PROTOCOLS))
    parser.add_argument("--n", type=int, nargs="+", default=[4, 8, 16, 32, 64, 128, 256], help="fig2: long flows")
    parser.add_argument("--duration", type=float, default=None, help="simulated s per run (20; fig7: 60)")
    parser.add_argument("--sample", type=float, default=1.0, help="fig7: s per throughput sample")
    parser.add_argument("--tolerance", type=float, default=0.05, help="fig7: relative distance to max-min")
    parser.add_argument("--scale", type=float, default=1.0, help="capacity scale (fig2, fig5)")
    parser.add_argument("--window-rounding", choices=("on", "off"), default="on",
                        help="on: the header declares cwnd, the sender sends whole packets (ns-2's XCP)")
    parser.add_argument("--start-within", type=float, default=0.0,
                        help="fig2, fig2trace: the flows start uniformly within this many seconds (0: all at t = 0)")
    parser.add_argument("--start-seed", type=int, default=1, help="fig2, fig2trace: seed of the start times")
    parser.add_argument("--trace-window", type=float, nargs=2, default=None, metavar=("A", "B"),
                        help="fig2trace: the windows at A, A + 0.1, ..., B s")
    parser.add_argument("--ns3", action="store_true", help="fig2: time ns-3's TCP on the same networks")
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3, 4, 5, 6], help="random: networks")
    parser.add_argument("--per-rtt", type=float, default=10.0, help="random: smallest max-min rate, packets per RTT")
    parser.add_argument("--out", default=None, help="JSON file for the results")
    args = parser.parse_args()
    if args.duration is None:
        args.duration = 60.0 if args.scenario == "fig7" else 20.0
    if not (math.isfinite(args.start_within) and args.start_within >= 0):
        parser.error(f"--start-within: {args.start_within} s; allowed: 0 s or more")
    if args.trace_window and not 0 < args.trace_window[0] <= args.trace_window[1]:
        parser.error(f"--trace-window: {args.trace_window[0]} {args.trace_window[1]}; allowed: 0 < A <= B (s)")
    if args.ns3 and args.scale != 1.0:
        parser.error("--ns3 times ns-3's program at the paper's capacities: leave --scale at 1")
    result = {"fig2": fig2, "fig2trace": fig2trace, "fig5": fig5, "fig7": fig7, "random": random}[args.scenario](args)
    write_json(args.out, {"args": vars(args), **result})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
