"""VCP at packet level (exact engine) on the VCP paper's section 4 settings.

Every run has two-way traffic as the paper's: as many VCP flows on the reverse path as on the
forward one (their data shares the reverse link with the forward flows' ACKs, and the forward
link carries their ACKs), 1000-byte data packets and 40-byte ACKs, buffers of max(BDP, 2 packets
per flow), flows starting uniformly within the first second; statistics without the first 20 % of
each run, as the paper's.

- `fig3`: capacity sweep (`--capacities` Mb/s; RTT 80 ms, 50 + 50 flows, as the paper's),
  `fig4`: RTT sweep (`--rtts` ms; 150 Mb/s x `--scale`, 50 x `--scale` flows each way, so that
  each flow has the paper's rate), `fig5`: flow-count sweep (`--flows`, each way; 150 Mb/s x
  `--scale`, 80 ms: `--flows 1 10 50 100` at scale 0.1 spans the per-flow BDPs of the paper's
  10 ... 1000 flows), `ci`: the one batch of `tests/packet/test_vcp_sweeps.py` (Fig. 3 at 0.1
  Mb/s, 80 ms, 50 flows each way; Fig. 5 at 15 Mb/s, 80 ms, 10; Fig. 4 at 15 Mb/s, 10 ms, 5;
  Fig. 6 at 15 Mb/s, 80 ms, 5 with 10 short flows per second, seed 1003:
  the test's points, written again here; its run with the default --duration, --sample,
  --gamma, --alpha and --min-rto); `--gamma` sets the routers' target utilization, `--alpha` the AI step,
  `--min-rto` the senders' retransmission timer floor, `--rtt-samples` their RTT sampling and
  `--pacing` their pacing (`VCP.pacing`: none, the default; window; small) (all but `random`). Each sweep is ONE
  batch (`fluidcc.scenarios.vcp_sweep`): its points are disjoint link pairs of one network, one run
  per point whose flow table uses only its pair. Per point: the forward link's utilization (every
  byte served, ACKs included, over the capacity), its mean queue and its largest per-sample mean
  queue as fractions of the buffer, the fraction of the packets that reached it that it dropped, and
  the least and largest rate of its long-lived forward flows over their fair share (capacity /
  flows; data packets at the receivers, duplicates included, without the same first 20 %; not for
  `fig6`, whose per-flow series would hold thousands of flows), and of the samples (`--sample` s
  each) the fraction in which the link was used below 20 % and the fraction that ended with the
  overload code in force (with `--sample` = t_rho, one per load factor interval: how bursty the
  link's input is at that scale). A point given more than once (`--rtts 200 200 200`) runs with
  other start times each time, and its runs are summarized together (mean, least, largest). `--ns3`:
  ns-3's TCP NewReno on each point's forward direction (`ns3/shortflows.cc` with the same long-lived
  flows, capacity, RTT and buffer; one way), for the cost beside it.
- `fig6`: short flows beside the long ones (`--arrivals` per second at the paper's scale, x
  `--scale`; Poisson, Pareto sizes of mean 30 packets and shape `--pareto-shape`, which the paper
  does not give; 1.2 as the RCP and QCP papers' web traffic), on the forward link of 150 Mb/s x
  `--scale` and 80 ms with 50 x `--scale` long flows each way (the buffer from the long flows);
  each point's short flows finished within the run beside its figures.
- `fig7`: the parking lot (`fluidcc.scenarios.vcp_parking_lot`, `--scale` x its 100 Mb/s, link 4
  at half; `--n-long` and `--n-cross` flows, by default 50 and 5 x `--scale`, so that each flow
  has the paper's rate) with as many flows on the reverse path as long ones (none with
  `--one-way`), one run per case and seed of `--seeds` (the start times); each class's rate
  against the max-min rates the MIAIMD fluid model settles at (Theorem 2): the paper's direction
  is that VCP gives the long flows less and the cross flows more. Beside it each class's MDs per
  second and share of MI among its MI and AI ACKs, and per link how often it was at low load and
  how often and for how long at overload (what decides how a link is split between flows of
  different RTTs and paths: RESULTS.md).
  `--link4-cross-rtt-ms` gives link 4's cross flows another RTT (an access delay), to separate
  the RTT's part in that split.
- `random`: random networks (`fluidcc.scenarios.random_network`: 4 links of 10-40 Mb/s before
  scaling, 12 flows; one way; the start times from the seed), capacities scaled so
  that the smallest max-min rate is `--per-rtt` packets per RTT); per flow its rate over its
  max-min rate against the number of its links that max-min saturates (the paper's direction: the
  more, the less), with the rank correlation of the two (Spearman's, ties averaged), and by that
  number the flows' mean RTT and MDs per second (over the whole run); then pooled
  over the seeds: the mean ratio by that number, the rank correlation over every flow of every
  network with its p-value, and in how many networks the flows with one saturated link get more
  (over max-min) than those with several.

    PYTHONPATH=src python benchmarks/vcp_packet.py --scenario fig3 --ns3 --out fig3.json
    PYTHONPATH=src python benchmarks/vcp_packet.py --scenario fig7 --scale 0.1 --seeds 1 2 3
    PYTHONPATH=src python benchmarks/vcp_packet.py --scenario random --seeds $(seq 1 13) --duration 30
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import math
import tempfile
import time
from pathlib import Path

import numpy as np
from _harness import write_json
from _packet_scenarios import ns3_runs
from scipy.stats import spearmanr

from fluidcc import scenarios
from fluidcc.maxmin import maxmin
from fluidcc.network import Flow, Link, Network
from fluidcc.packet import simulate_exact
from fluidcc.packet.exact_protocols import VCP
from fluidcc.packet.exact_protocols._explicit import RTT_SAMPLES
from fluidcc.packet.exact_protocols.vcp import LOW, OVERLOAD, PACING
from fluidcc.packet.workloads import Pareto, PoissonArrivals
from fluidcc.units import mbps_to_pps


def sweep(points, duration: float, sample: float, protocol: VCP | None = None, short=None) -> tuple[list[dict], float]:
    later = 2.0 * duration  # the start of the other points' flows in each run
    network, tables, buffers = scenarios.vcp_sweep(points, later_s=later, short=short)
    began = time.perf_counter()
    runs = simulate_exact(network, protocol or VCP(), tables, duration_s=duration, sample_s=sample,
                          seeds=list(range(len(points))), buffers=buffers, flow_series=short is None)
    wall = time.perf_counter() - began
    rows = []
    statistics = scenarios.vcp_sweep_statistics(runs, points, buffers)
    for k, ((capacity, rtt, n), stats) in enumerate(zip(points, statistics)):
        run = runs.isel(run=k)
        late = run.sample_time.values > 0.2 * duration
        # per flow only without short flows (fig6's tables hold thousands of flows per run)
        share = forward_shares(run, tables[k], 2 * k, n, capacity, late, sample) if short is None else None
        served = run.served.sel(link=f"f{k}").values[late] / (capacity * sample)
        code = run.vcp_code_series.sel(link=f"f{k}").values[late]
        rows.append({"capacity_mbps": capacity * 8e-3 * network.packet_bytes / 1e3, "rtt_ms": 1e3 * rtt, "flows": n,
                     "buffer": float(buffers[2 * k]), **stats,
                     "forward_share_min": None if share is None else float(share.min()),
                     "forward_share_max": None if share is None else float(share.max()),
                     "samples_below_20_percent": float((served < 0.2).mean()),
                     "samples_at_overload": float((code == OVERLOAD).mean()),
                     "timeouts": int(run.timeouts.values.sum()), "status": str(run.message.values)})
        if short is not None and short[k] is not None:
            mine = (tables[k].start_s < later) & np.isfinite(tables[k].size_packets)
            fct = run.fct.values[: mine.size][mine]
            rows[-1].update({"short_flows": int(mine.sum()), "short_finished": int(np.isfinite(fct).sum()),
                             "short_afct_s": float(np.nanmean(fct)) if np.isfinite(fct).any() else None})
        r = rows[-1]
        print(f"C {r['capacity_mbps']:8.2f} Mb/s, RTT {r['rtt_ms']:6.0f} ms, {n:4d} + {n} flows: utilization "
              f"{100 * r['utilization']:5.1f} %, queue mean {100 * r['queue_mean_of_buffer']:5.2f} % / max "
              f"{100 * r['queue_max_of_buffer']:5.1f} % of {r['buffer']:.0f}, drops {100 * r['drop_fraction']:.3f} %, "
              f"timeouts {r['timeouts']}, "
              + ("" if share is None else f"forward flows' rates / fair share {r['forward_share_min']:.2f}-"
                 f"{r['forward_share_max']:.2f}, ")
              + f"samples used below 20 % {100 * r['samples_below_20_percent']:.1f} %, "
              f"at overload {100 * r['samples_at_overload']:.1f} %, {r['status']}"
              + (f"; short flows {r['short_finished']} of {r['short_flows']} finished" if "short_flows" in r else ""))
    return rows, wall


def forward_shares(run, table, route: int, n: int, capacity: float, late: np.ndarray, sample: float) -> np.ndarray:
    """Each long-lived forward flow's data packets at its receiver per second (duplicates included)
    over the samples `late` (each `sample` s), over its fair share capacity / n. The flows of
    `route` in the point's table are its own (the other points' use other routes)."""
    mine = (table.route == route) & np.isinf(table.size_packets)
    rate = run.delivered_series.values[late][:, : mine.size][:, mine].sum(axis=0) / (sample * late.sum())
    return rate / (capacity / n)


def ns3_cost(points, duration: float) -> dict:
    """ns-3's TCP NewReno on each point's forward direction (long-lived flows from the same starts,
    the point's capacity, RTT and buffer), 2 processes."""
    with tempfile.TemporaryDirectory() as folder:
        arguments = []
        for k, (capacity, rtt, n) in enumerate(points):
            path = Path(folder) / f"flows{k}.csv"
            starts = np.random.default_rng(k).uniform(0.0, 1.0, 2 * n)[:n]
            with open(path, "w", newline="") as handle:
                writer = csv.writer(handle)
                writer.writerow(["start_s", "size_packets"])
                writer.writerows([[repr(float(s)), "inf"] for s in starts])
            arguments.append([f"--flows-in={path}", f"--capacity-pps={capacity:g}", f"--rtpd={rtt:g}",
                              f"--buffer={max(math.ceil(capacity * rtt), 2 * n)}", f"--duration={duration:g}",
                              "--drain=0", "--seed=1"])
        results, wall = ns3_runs("shortflows", arguments, processes=2)
    return {"wall_s": wall, "per_run_wall_s": [r.get("wall_s") for r in results]}


def protocol_of(args) -> VCP:
    """VCP with the options' router target, AI step, retransmission timer floor, RTT sampling and pacing."""
    return VCP(gamma=args.gamma, alpha=args.alpha, min_rto_s=args.min_rto, rtt_samples=args.rtt_samples,
               pacing=args.pacing)


def run_sweep(args, points, short=None, arrivals=None) -> dict:
    """The sweep of `points` as one batch (`short`, `arrivals`: each point's short flows and their
    arrival rate, fig6), its cost, the summary of repeated points and ns-3's cost if asked."""
    rows, wall = sweep(points, args.duration, args.sample, protocol_of(args), short)
    for row, rate in zip(rows, arrivals or ()):
        row["arrivals_per_s"] = rate
    if arrivals:
        print("short flows per second of the points above: " + ", ".join(f"{rate:g}" for rate in arrivals))
    out = {"rows": rows, "wall_s": wall, "simulated_s": args.duration * len(points), "duration_s": args.duration}
    print(f"the batch of {len(points)} runs of {args.duration:g} s: {wall:.0f} s wall "
          f"({wall / out['simulated_s']:.2f} s per simulated second)")
    out["repeated"] = repeated(rows)
    if args.ns3:
        out["ns3_tcp"] = ns3_cost(points, args.duration)
        print(f"ns-3 TCP NewReno, each point's forward direction, {args.duration:g} s, 2 processes: "
              f"{out['ns3_tcp']['wall_s']:.0f} s wall")
    return out


def repeated(rows: list[dict]) -> list[dict]:
    """Points given more than once (each draws its own start times: point k's are uniform in the
    first second from seed k): per such setting, the mean, least and largest utilization and mean
    queue over its runs."""
    groups: dict[tuple, list[dict]] = {}
    for row in rows:
        key = (row["capacity_mbps"], row["rtt_ms"], row["flows"], row.get("arrivals_per_s"))
        groups.setdefault(key, []).append(row)
    out = []
    for (capacity, rtt, n, _), runs in groups.items():
        if len(runs) < 2:
            continue
        use = np.array([r["utilization"] for r in runs])
        queue = np.array([r["queue_mean_of_buffer"] for r in runs])
        out.append({"capacity_mbps": capacity, "rtt_ms": rtt, "flows": n, "runs": len(runs),
                    "utilization": {"mean": float(use.mean()), "min": float(use.min()), "max": float(use.max())},
                    "queue_mean_of_buffer": {"mean": float(queue.mean()), "min": float(queue.min()),
                                             "max": float(queue.max())}})
        print(f"C {capacity:g} Mb/s, RTT {rtt:g} ms, {n} + {n} flows, {len(runs)} start-time draws: utilization "
              f"{100 * use.mean():.1f} % (from {100 * use.min():.1f} to {100 * use.max():.1f}), mean queue "
              f"{100 * queue.mean():.1f} % of the buffer (from {100 * queue.min():.1f} to {100 * queue.max():.1f})")
    return out


def started(flows, seed) -> tuple:
    """`flows` with start times uniform within the first second, drawn from `seed`'s stream."""
    starts = np.random.default_rng(seed).uniform(0.0, 1.0, len(flows))
    return tuple(dataclasses.replace(f, start_s=float(s)) for f, s in zip(flows, starts))


def overload_episodes(code, sample: float) -> dict:
    """Of a link's code samples (each `sample` s): the fraction that ended with the low-load code in
    force, the fraction that ended with the overload code, and the mean length of a run of such
    samples (s): how long an overload lasts (a run cut by the first or last sample counts as
    shorter than it was)."""
    code = np.asarray(code)
    over = code == OVERLOAD
    edges = np.diff(np.concatenate([[0], over.astype(np.int8), [0]]))
    lengths = np.flatnonzero(edges == -1) - np.flatnonzero(edges == 1)
    return {"low_share": float((code == LOW).mean()), "overload_share": float(over.mean()),
            "overload_episode_s": float(lengths.mean() * sample) if lengths.size else 0.0}


def fig7(args) -> dict:
    """Per case (all links equal; link 4 at half) and per seed of `--seeds` (the flows' start times,
    uniform within the first second): each class's mean rate against max-min, its MDs per second
    and the share of MI among its MI and AI ACKs (over the whole run), and per link its use, how
    often it was at low load and how often and how long at overload."""
    out = {}
    for link4 in (None, 50.0):
        n_long = args.n_long or max(1, round(50 * args.scale))
        n_cross = args.n_cross or max(1, round(5 * args.scale))
        network = scenarios.vcp_parking_lot(None if link4 is None else link4 * args.scale, n_long=n_long,
                                            n_cross=n_cross, capacity_mbps=100.0 * args.scale)
        if args.link4_cross_rtt_ms is not None:  # the RTT's part in link 4's split, by an access delay
            access = (args.link4_cross_rtt_ms / 1e3 - 2.0 * network.links[3].delay_s) / 2.0
            network = Network(network.links, tuple(dataclasses.replace(f, access_delay_s=access)
                                                   if f.name.startswith("cross4[") else f for f in network.flows))
        rates_maxmin = maxmin(network).rates_pps
        n = network.n_flows
        # the reverse path: one reverse link per link, as many reverse flows as long ones
        links = tuple(Link(l.name, l.capacity_pps, l.delay_s, source=f"n{j}", target=f"n{j + 1}")
                      for j, l in enumerate(network.links))
        links += tuple(Link(f"{l.name}r", l.capacity_pps, l.delay_s, source=f"n{j + 1}", target=f"n{j}")
                       for j, l in enumerate(network.links))
        reverse = tuple(Flow(f"rev[{k}]", tuple(f"l{j}r" for j in range(7, 0, -1)))
                        for k in range(0 if args.one_way else n_long))
        flows = network.flows + reverse
        names = [f.name for f in network.flows]
        classes = {"long": [i for i, s in enumerate(names) if s.startswith("long")]}
        for j in range(1, 8):
            classes[f"cross{j}"] = [i for i, s in enumerate(names) if s.startswith(f"cross{j}[")]
        to_mbps = 8e-6 * network.packet_bytes
        key = "equal" if link4 is None else "link4_half"
        out[key] = {"seeds": {}}
        for seed in args.seeds:
            two_way = Network(links, started(flows, seed))
            began = time.perf_counter()
            run = simulate_exact(two_way, protocol_of(args), duration_s=args.duration,
                                 sample_s=args.sample, flow_series=True).isel(run=0)
            wall = time.perf_counter() - began
            late = run.sample_time.values > 0.2 * args.duration
            rate = run.delivered_series.values[late].sum(axis=0)[:n] / (args.sample * late.sum())
            decreases = run["decreases"].values[:n] / args.duration
            mi, ai = run["mi_acks"].values[:n], run["ai_acks"].values[:n]
            row = {c: {"vcp_mbps": float(rate[i].mean() * to_mbps),
                       "maxmin_mbps": float(rates_maxmin[i].mean() * to_mbps),
                       "md_per_s": float(decreases[i].mean()),
                       "mi_share": float(mi[i].sum() / max(mi[i].sum() + ai[i].sum(), 1))} for c, i in classes.items()}
            per_link = [{"utilization": float(run.served.sel(link=f"l{j}").values[late].sum()
                                              / (l.capacity_pps * args.sample * late.sum())),
                         **overload_episodes(run.vcp_code_series.sel(link=f"l{j}").values[late], args.sample)}
                        for j, l in zip(range(1, 8), network.links)]
            out[key]["seeds"][seed] = {"classes": row, "links": per_link, "wall_s": wall,
                                       "drops": float(run.dropped.sum()), "status": str(run.message.values)}
            print(f"{key}, seed {seed}: " + ", ".join(
                f"{c} {v['vcp_mbps']:.3f} (max-min {v['maxmin_mbps']:.3f}) Mb/s, {v['md_per_s']:.2f} MD/s, "
                f"MI in {100 * v['mi_share']:.0f} % of its MI and AI ACKs"
                for c, v in row.items()))
            print("   utilization " + " ".join(f"{100 * x['utilization']:.1f}" for x in per_link)
                  + " %; at low load " + " ".join(f"{100 * x['low_share']:.0f}" for x in per_link)
                  + " %, at overload " + " ".join(f"{100 * x['overload_share']:.0f}" for x in per_link)
                  + " % of the samples, for " + " ".join(f"{x['overload_episode_s']:.2f}" for x in per_link)
                  + f" s at a time; drops {out[key]['seeds'][seed]['drops']:.0f}; {wall:.0f} s wall; "
                  + out[key]["seeds"][seed]["status"])
        over = {c: float(np.mean([r["classes"][c]["vcp_mbps"] / r["classes"][c]["maxmin_mbps"]
                                  for r in out[key]["seeds"].values()])) for c in classes}
        out[key]["mean_over_maxmin"] = over
        print(f"{key}, over the seeds: rate / max-min " + ", ".join(f"{c} {v:.3f}" for c, v in over.items()))
    return out


def random_networks(args) -> dict:
    rows = []
    for seed in args.seeds:
        base = scenarios.random_network(4, 12, seed=seed, capacity_mbps=(10.0, 40.0))
        fair = maxmin(base)
        factor = args.per_rtt / float(np.min(fair.rates_pps * base.rtt_s))
        network = Network(tuple(Link(l.name, l.capacity_pps * factor, l.delay_s) for l in base.links),
                          started(base.flows, [seed, 1]))  # a stream of its own, not the network's
        fair = maxmin(network)
        began = time.perf_counter()
        run = simulate_exact(network, VCP(initial_window=4), duration_s=args.duration, sample_s=args.sample,
                             flow_series=True).isel(run=0)
        wall = time.perf_counter() - began
        late = run.sample_time.values > 0.2 * args.duration
        ratio = run.delivered_series.values[late].sum(axis=0) / (args.sample * late.sum()) / fair.rates_pps
        saturated = fair.utilization > 1 - 1e-9
        crossed = np.array([int(saturated[network.route_indices(i)].sum()) for i in range(network.n_flows)])
        rho = float(spearmanr(crossed, ratio).statistic) if np.ptp(crossed) else None
        md_per_s = run["decreases"].values / args.duration
        rows.append({"seed": seed, "ratio": ratio.tolist(), "saturated_crossed": crossed.tolist(), "spearman": rho,
                     "rtt_s": network.rtt_s.tolist(), "md_per_s": md_per_s.tolist(),
                     "wall_s": wall, "drops": float(run.dropped.sum()), "status": str(run.message.values)})
        by = {int(c): (float(ratio[crossed == c].mean()), float(1e3 * network.rtt_s[crossed == c].mean()),
                       float(md_per_s[crossed == c].mean())) for c in np.unique(crossed)}
        print(f"seed {seed}: rate / max-min (mean RTT ms, MDs per s) by saturated links crossed: "
              + ", ".join(f"{c}: {v:.2f} ({r:.0f}, {m:.2f})" for c, (v, r, m) in by.items())
              + f"; rank correlation {rho if rho is None else round(rho, 2)}; drops {rows[-1]['drops']:.0f}; {wall:.0f} s")
    return {"rows": rows, "pooled": pooled(rows)}


def pooled(rows: list[dict]) -> dict:
    """The random networks' flows together: mean rate / max-min by saturated links crossed, the
    rank correlation over all flows (and its p-value), and the networks in which the flows with
    one saturated link get more over max-min than those with several (of those that have both)."""
    ratio = np.concatenate([r["ratio"] for r in rows])
    crossed = np.concatenate([r["saturated_crossed"] for r in rows])
    test = spearmanr(crossed, ratio)
    both = [r for r in rows if min(r["saturated_crossed"]) == 1 and max(r["saturated_crossed"]) > 1]
    more = [r["seed"] for r in both
            if np.mean([x for x, c in zip(r["ratio"], r["saturated_crossed"]) if c == 1])
            > np.mean([x for x, c in zip(r["ratio"], r["saturated_crossed"]) if c > 1])]
    out = {"flows": int(ratio.size), "networks": len(rows),
           "mean_by_crossed": {int(c): float(ratio[crossed == c].mean()) for c in np.unique(crossed)},
           "flows_by_crossed": {int(c): int((crossed == c).sum()) for c in np.unique(crossed)},
           "spearman": float(test.statistic), "p_value": float(test.pvalue),
           "networks_with_both": len(both), "one_link_flows_get_more": more,
           "negative_correlation": sum(r["spearman"] is not None and r["spearman"] < 0 for r in rows)}
    print(f"pooled over {len(rows)} networks, {ratio.size} flows: rate / max-min by saturated links crossed "
          + ", ".join(f"{c}: {v:.2f} ({out['flows_by_crossed'][c]} flows)" for c, v in out["mean_by_crossed"].items())
          + f"; rank correlation {test.statistic:.2f} (p = {test.pvalue:.1e}); negative in "
          f"{out['negative_correlation']} of {len(rows)} networks; the flows with one saturated link get more "
          f"than those with several in {len(more)} of the {len(both)} networks that have both")
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scenario", choices=["fig3", "fig4", "fig5", "fig6", "fig7", "random", "ci"], required=True)
    parser.add_argument("--arrivals", type=float, nargs="+", default=[1, 10, 100, 1000],
                        help="short flows per second at the paper's scale, x --scale (fig6)")
    parser.add_argument("--pareto-shape", type=float, default=1.2, help="short flows' Pareto shape (fig6)")
    parser.add_argument("--capacities", type=float, nargs="+", default=[0.1, 1.0, 10.0, 50.0], help="Mb/s (fig3)")
    parser.add_argument("--rtts", type=float, nargs="+", default=[1, 10, 80, 200, 800, 1500], help="ms (fig4)")
    parser.add_argument("--flows", type=int, nargs="+", default=[1, 10, 50, 200], help="forward flows (fig5)")
    parser.add_argument("--scale", type=float, default=0.1, help="x the paper's capacities (fig4, fig5, fig7)")
    parser.add_argument("--n-long", type=int, default=None, help="long flows of the parking lot (fig7)")
    parser.add_argument("--n-cross", type=int, default=None, help="cross flows per link of the parking lot (fig7)")
    parser.add_argument("--one-way", action="store_true",
                        help="no reverse flows on the parking lot: only the forward flows' ACKs go back (fig7)")
    parser.add_argument("--n", type=int, default=None, help="flows each way (fig4; default 50 x scale)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3],
                        help="random networks (random); the flows' start times, one run per seed and case (fig7)")
    parser.add_argument("--link4-cross-rtt-ms", type=float, default=None,
                        help="give link 4's cross flows this RTT, ms, by an access delay (fig7: the RTT's part in "
                             "how link 4 is split; by default 40 ms, its two delays)")
    parser.add_argument("--per-rtt", type=float, default=10.0, help="smallest max-min rate, packets per RTT (random)")
    parser.add_argument("--gamma", type=float, default=VCP.gamma,
                        help="the routers' target utilization (fig3-fig7; Table 1's 0.98 by default)")
    parser.add_argument("--alpha", type=float, default=VCP.alpha,
                        help="the AI step, scaled by (rtt / t_rho)^2 (fig3-fig7; Table 1's 1.0 by default)")
    parser.add_argument("--min-rto", type=float, default=VCP.min_rto_s,
                        help="the senders' retransmission timer floor, s (fig3-fig7; 0.2 by default)")
    parser.add_argument("--rtt-samples", choices=RTT_SAMPLES, default=VCP.rtt_samples,
                        help="the senders' RTT samples: one per window (ns-2's TCP agent, the default) or one per ACK "
                             "(fig3-fig7)")
    parser.add_argument("--pacing", choices=PACING, default=VCP.pacing,
                        help="the senders' pacing: none, every window over the smoothed RTT, or windows of 2-64 "
                             "packets where that spacing exceeds t_rho / 2, as the authors' ns-2 sender (fig3-fig7)")
    parser.add_argument("--duration", type=float, default=60.0)
    parser.add_argument("--sample", type=float, default=0.1)
    parser.add_argument("--ns3", action="store_true")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    base_pps = mbps_to_pps(150.0 * args.scale)
    if args.scenario == "fig3":
        result = run_sweep(args, [(mbps_to_pps(c), 0.08, 50) for c in args.capacities])
    elif args.scenario == "fig4":
        n = args.n or max(1, round(50 * args.scale))
        result = run_sweep(args, [(base_pps, r / 1e3, n) for r in args.rtts])
    elif args.scenario == "fig5":
        result = run_sweep(args, [(base_pps, 0.08, n) for n in args.flows])
    elif args.scenario == "fig6":
        n = args.n or max(1, round(50 * args.scale))
        short = [PoissonArrivals(rate * args.scale, Pareto(args.pareto_shape, 30.0), duration_s=args.duration,
                                 seed=1000 + k).table() for k, rate in enumerate(args.arrivals)]
        result = run_sweep(args, [(base_pps, 0.08, n)] * len(args.arrivals), short,
                           [rate * args.scale for rate in args.arrivals])
    elif args.scenario == "ci":  # tests/packet/test_vcp_sweeps.py's batch: Figs. 3, 5, 4 and 6
        short = PoissonArrivals(10.0, Pareto(1.2, 30.0), duration_s=args.duration, seed=1003).table()
        result = run_sweep(args, [(mbps_to_pps(0.1), 0.08, 50), (mbps_to_pps(15.0), 0.08, 10),
                                  (mbps_to_pps(15.0), 0.01, 5), (mbps_to_pps(15.0), 0.08, 5)],
                           [None, None, None, short])
    elif args.scenario == "fig7":
        result = fig7(args)
    else:
        result = random_networks(args)
    result["args"] = vars(args)
    if args.out:
        write_json(args.out, result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
