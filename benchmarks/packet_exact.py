"""The exact packet engine against ns-3: agreement and speed from one run.

**Dumbbell** (`--scenario dumbbell`, default).

The dumbbell of `benchmarks/ns3/dumbbell.cc`: long-lived TCP NewReno flows (classic recovery,
SACK off, initial window 2, minimum RTO 200 ms, limited transmit off, as the ns-3 program is run
here) through one 100 Mb/s bottleneck, RTPD 80 ms, drop-tail buffer of one BDP (1000 packets),
flows starting uniformly in [0, 1) s; each sender has a 10 Gb/s interface 2 us from the
bottleneck. fluidcc runs the exact engine (`fluidcc.packet.simulate_exact`) at its default step
(the lookahead: the ACKs' way back, 80 ms), one batch of the seeds; ns-3 runs each seed. Both
report utilization, mean queue (packets waiting, time average), drop rate, loss events (fast
recoveries plus timeouts) and timeouts per 1000 packets forwarded; ns-3 counts its events from
1 s on, fluidcc over the whole run. For each figure: the two means, their difference in %, and the
95 % confidence interval of the difference of the means (Welch, normal approximation).

**Short flows** (`--scenario shortflows --load 0.5`): `benchmarks/ns3/shortflows.cc` runs each seed
(Poisson arrivals of Pareto flows, shape 1.2, mean 25 packets, over `--duration` seconds, then
`--drain` more; 100 Mb/s, RTPD 100 ms, buffer one BDP, initial window 10, minimum RTO 1 s, limited
transmit on as ns-3's default) and writes its flow table; fluidcc replays that table flow for flow
(`read_trace`) in the exact engine. Compared: utilization and mean queue over the arrivals, drop
rate, loss events and timeouts per 1000 packets, the AFCT overall and per size bin (packets: [1, 8),
[8, 16), ..., [256, inf)), each bin judged only where it holds at least 1000 flows over the seeds.

**Two links** (`--scenario twolink --stagger 0.25`): `benchmarks/ns3/twolink.cc`, the iXCP paper's
Fig. 1 network with TCP (155 and 100 Mb/s, 20 ms each; one flow on the first link, 16 across both,
starting `--stagger` s apart; limited transmit off, initial window 2, minimum RTO 200 ms), runs each
seed; fluidcc replays its exact start times on ns-3's network: the ACKs (54 bytes on the wire) cross
the links' reverse directions and the receivers' access links are in the delays (`_twolink.ns3_replay`;
`--fixed-ack-delay`: the ACKs return over a fixed delay instead). Compared: each link's utilization, mean queue and drop
rate, loss events, timeouts (entries into loss recovery by timeout, as ns-3's CongState trace counts
them) and expiries of the retransmission timer (repeated ones included) per 1000 packets forwarded
by link 1, the short flow's throughput
and the long flows' mean throughput (received packets over the time since the flow's start).

Run:

    PYTHONPATH=src python benchmarks/packet_exact.py [--flows 50] [--duration 30] [--seeds 5] [--ns3]
    PYTHONPATH=src python benchmarks/packet_exact.py --scenario twolink --stagger 0.25 --duration 30 --seeds 2
    PYTHONPATH=src python benchmarks/packet_exact.py --scenario twolink ... --seed-list 1 --out part1.json
    PYTHONPATH=src python benchmarks/packet_exact.py --scenario twolink --merge part1.json part2.json ... --out all.json
    PYTHONPATH=src python benchmarks/packet_exact.py --scenario shortflows --load 0.5 --duration 20 \
        --drain 20 --seeds 5
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
from scipy import stats

from fluidcc.packet import simulate_exact
from fluidcc.packet.exact_protocols import TCP
from fluidcc.packet.workloads import read_trace

from _harness import machine_info, timed, write_json
from _packet_scenarios import (HERE, SHORT_BOTTLENECK_PPS, dumbbell_arguments, dumbbell_tables, network, ns3_runs,
                               shortflow_arguments, shortflow_network)
from _twolink import NS3_ACK_BYTES, add_handshake_option, add_mss_option, ns3_replay, ns3_twolink, seed_list

FIGURES = ("utilization", "mean_queue", "drop_rate", "loss_events_per_1000", "timeouts_per_1000")


def figures_of(run, duration: float) -> list[dict]:
    """Per run of the dataset, the figures compared."""
    out = []
    for k in range(run.sizes["run"]):
        v = run.isel(run=k).sel(link="bottleneck")
        forwarded = float(v.link_accepted)
        events = float(v.recoveries.sum() + v.timeouts.sum())
        out.append({"utilization": float(v.busy), "mean_queue": float(v.queue_mean),
                    "drop_rate": float(v.link_dropped) / float(v.link_arrived),
                    "loss_events_per_1000": 1000.0 * events / forwarded,
                    "timeouts_per_1000": 1000.0 * float(v.timeouts.sum()) / forwarded,
                    "forwarded": forwarded, "status": int(v.status)})
    return out


def ns3_run(n: int, seed: int, duration: float) -> dict:
    r = ns3_runs("dumbbell", [dumbbell_arguments(n, seed, duration)])[0][0]
    forwarded = float(r["packets_forwarded"])
    return {"utilization": r["utilization"], "mean_queue": r["mean_queue_packets"], "drop_rate": r["drop_rate"],
            "loss_events_per_1000": 1000.0 * (r["recoveries"] + r["timeouts"]) / forwarded,
            "timeouts_per_1000": 1000.0 * r["timeouts"] / forwarded, "forwarded": forwarded, "wall_s": r["wall_s"]}


def compare(ours: list[dict], theirs: list[dict], names=FIGURES, paired: bool = False) -> dict:
    """Means over the seeds, their difference and its 95 % confidence interval: unpaired (normal
    approximation) when each side draws its own runs; paired by seed (Student's t on the per-seed
    differences) when fluidcc replays ns-3's flows run for run, so the seeds' own spread cancels."""
    table = {}
    for name in names:
        a = np.array([o[name] for o in ours], dtype=float)
        b = np.array([t[name] for t in theirs], dtype=float)
        if paired and a.size == b.size > 1:
            d = a - b
            half = float(stats.t.ppf(0.975, d.size - 1) * d.std(ddof=1) / np.sqrt(d.size))
        elif min(a.size, b.size) > 1:
            half = 1.96 * np.sqrt(a.var(ddof=1) / a.size + b.var(ddof=1) / b.size)
        else:
            half = np.nan
        diff = a.mean() - b.mean()
        pct = 100.0 * diff / b.mean() if b.mean() != 0 else (0.0 if diff == 0 else np.inf)
        table[name] = {"fluidcc": a.mean(), "ns3": b.mean(), "difference_pct": pct,
                       "ci95_of_difference": [diff - half, diff + half],
                       "agrees": bool(abs(diff) <= 0.05 * abs(b.mean()) or abs(diff) <= half)}
    return table


SIZE_BINS = (1, 8, 16, 32, 64, 128, 256, np.inf)


def shortflow_figures(sizes, fcts, utilization, queue, dropped, arrived, forwarded, events, timeouts) -> dict:
    out = {"utilization": utilization, "mean_queue": queue, "drop_rate": dropped / max(arrived, 1.0),
           "loss_events_per_1000": 1000.0 * events / forwarded, "timeouts_per_1000": 1000.0 * timeouts / forwarded,
           "afct": float(np.nanmean(fcts)), "unfinished": int(np.sum(~np.isfinite(fcts)))}
    for low, high in zip(SIZE_BINS[:-1], SIZE_BINS[1:]):
        inside = (sizes >= low) & (sizes < high)
        out[f"afct_{low}_{high}"] = float(np.nanmean(fcts[inside])) if inside.any() else np.nan
        out[f"flows_{low}_{high}"] = int(inside.sum())
    return out


def run_shortflows(args, seeds) -> int:
    net = shortflow_network()
    theirs, tables = [], []
    out_dir = Path(args.out).with_suffix("")
    out_dir.mkdir(parents=True, exist_ok=True)
    for seed in seeds:
        csv = out_dir / f"shortflows_load{args.load:g}_seed{seed}.csv"
        r = ns3_runs("shortflows", [shortflow_arguments(args.load, seed, args.duration, args.drain, csv)])[0][0]
        table = read_trace(csv, net)
        tables.append(table)
        flows = np.genfromtxt(csv, delimiter=",", names=True)
        during = r["bottleneck"]["arrivals"]
        theirs.append({**shortflow_figures(flows["size_packets"], flows["fct_s"], during["utilization"],
                                           during["mean_queue_packets"], r["bottleneck"]["run"]["packets_dropped"],
                                           r["bottleneck"]["run"]["packets_arrived"],
                                           r["bottleneck"]["run"]["packets_forwarded"], r["recoveries"] + r["timeouts"],
                                           r["timeouts"]), "wall_s": r["wall_s"]})
    tcp = TCP(initial_window=10, min_rto_s=1.0, mss_bytes=args.mss, handshake_ack=args.handshake_ack)
    run, wall = timed(lambda: simulate_exact(net, tcp, tables, duration_s=args.duration + args.drain, seeds=seeds,
                                             sample_s=args.duration / 1000.0 * 1.0))
    ours = []
    for k, table in enumerate(tables):
        v = run.isel(run=k).sel(link="bottleneck")
        n = len(table)
        arrivals = v.sample_time.values <= args.duration + 1e-9
        served = float(v.served.values[arrivals].sum())
        queue = float(v.queue.values[arrivals].mean())
        ours.append(shortflow_figures(table.size_packets, v.fct.values[:n], served / (SHORT_BOTTLENECK_PPS * args.duration),
                                      queue, float(v.link_dropped), float(v.link_arrived), float(v.link_accepted),
                                      float(v.recoveries.values[:n].sum() + v.timeouts.values[:n].sum()),
                                      float(v.timeouts.values[:n].sum())))
    forwarded = float(run.link_accepted.sum())
    ns3_rate = sum(t.get("wall_s", np.nan) for t in theirs)
    result = {"machine": machine_info(extras=()), "scenario": "shortflows", "load": args.load, "mss_bytes": args.mss,
              "handshake_ack": args.handshake_ack,
              "duration_s": args.duration, "drain_s": args.drain, "seeds": seeds,
              "fluidcc": {"runs": ours, "wall_s": wall, "engine_wall_s": run.attrs["wall_s"],
                          "packets_per_s": forwarded / run.attrs["wall_s"],
                          "statuses": sorted({int(x) for x in run.status.values})},
              "ns3": {"runs": theirs, "wall_s": ns3_rate}}
    names = ["utilization", "mean_queue", "drop_rate", "loss_events_per_1000", "timeouts_per_1000", "afct"]
    bins = [f"afct_{low}_{high}" for low, high in zip(SIZE_BINS[:-1], SIZE_BINS[1:])]
    judged = [b for b in bins if sum(t[b.replace("afct", "flows")] for t in theirs) >= 1000]
    result["comparison"] = compare(ours, theirs, names + judged, paired=True)
    result["bins_not_judged"] = [b for b in bins if b not in judged]
    print(f"fluidcc exact engine: {len(seeds)} runs in {run.attrs['wall_s']:.1f} s (call {wall:.1f} s); "
          f"ns-3 {ns3_rate:.1f} s; statuses {result['fluidcc']['statuses']}")
    report(result["comparison"])
    print(f"  bins with fewer than 1000 flows (not judged): {', '.join(result['bins_not_judged'])}")
    write_json(args.out, result, announce=True)
    return 0


def run_twolink(args, seeds) -> int:
    theirs, tables, net = [], [], None
    for seed in seeds:
        r = ns3_twolink(args.stagger, args.duration, seed)
        network, table = ns3_replay(r, ack_links=not args.fixed_ack_delay)
        net = network if net is None else net
        tables.append(table)
        flows = r["flows"]
        row = {"wall_s": r["wall_s"], "loss_events_per_1000": r["loss_events_per_1000"],
               "timeouts_per_1000": r["timeouts_per_1000"],
               "rto_expiries_per_1000": 1000.0 * r["rto_expiries"] / r["links"][0]["run"]["data_packets_forwarded"],
               "short_mbps": flows[0]["throughput_mbps"],
               "long_mbps": float(np.nanmean([np.nan if f["throughput_mbps"] is None else f["throughput_mbps"]
                                              for f in flows[1:]]))}
        for l in r["links"]:
            row.update({f"{l['name']}_utilization": l["run"]["utilization"],
                        f"{l['name']}_mean_queue": l["run"]["mean_queue_packets"],
                        f"{l['name']}_drop_rate": l["run"]["drop_rate"]})
        # of the data the second link forwarded, the part its receivers did not read as new data
        # (copies of what they had; the second link is the long flows' last)
        second = r["links"][1]["run"]
        row["l2_copies"] = 1.0 - second["goodput_utilization"] / second["utilization"]
        theirs.append(row)
    tcp = TCP(limited_transmit=False, ack_bytes=40.0 if args.fixed_ack_delay else NS3_ACK_BYTES, mss_bytes=args.mss,
              handshake_ack=args.handshake_ack)
    run, wall = timed(lambda: simulate_exact(net, tcp, tables, duration_s=args.duration, seeds=seeds))
    ours = []
    for k, table in enumerate(tables):
        v = run.isel(run=k)
        started = table.start_s < args.duration
        mbps = np.where(started, v.received.values[: len(table)] / np.maximum(args.duration - table.start_s, 1e-9),
                        np.nan) * 8e-3  # 1000-byte packets
        forwarded = float(v.link_data_accepted.sel(link="l1"))
        row = {"loss_events_per_1000": 1000.0 * float(v.recoveries.sum() + v.timeouts.sum()) / forwarded,
               "timeouts_per_1000": 1000.0 * float(v.timeouts.sum()) / forwarded,
               "rto_expiries_per_1000": 1000.0 * float(v.rto_expiries.sum()) / forwarded,
               "short_mbps": float(mbps[0]), "long_mbps": float(np.nanmean(mbps[1:]))}
        for name in ("l1", "l2"):
            link = v.sel(link=name)
            row.update({f"{name}_utilization": float(link.busy), f"{name}_mean_queue": float(link.queue_mean),
                        f"{name}_drop_rate": float(link.link_dropped) / float(link.link_arrived)})
        read = float(v.received.values[1: len(table)].sum())  # the long flows' new data at their receivers
        row["l2_copies"] = 1.0 - read / float(v.link_data_accepted.sel(link="l2"))
        ours.append(row)
    names = [k for k in theirs[0] if k != "wall_s"]
    result = {"machine": machine_info(extras=()), "scenario": "twolink", "stagger_s": args.stagger,
              "duration_s": args.duration, "seeds": seeds, "ack_links": not args.fixed_ack_delay,
              "mss_bytes": args.mss, "handshake_ack": args.handshake_ack,
              "fluidcc": {"runs": ours, "wall_s": wall, "engine_wall_s": run.attrs["wall_s"],
                          "statuses": sorted({int(x) for x in run.status.values})},
              "ns3": {"runs": theirs, "wall_s": sum(t["wall_s"] for t in theirs)},
              "comparison": compare(ours, theirs, names, paired=True)}
    print(f"fluidcc exact engine: {len(seeds)} runs in {run.attrs['wall_s']:.1f} s; ns-3 {result['ns3']['wall_s']:.1f} s;"
          f" statuses {result['fluidcc']['statuses']}")
    report(result["comparison"])
    write_json(args.out, result, announce=True)
    return 0


def merge_twolink(paths: list[str], out: str) -> int:
    """One two-link comparison over the seeds of several parts (runs of `--seed-list`): the parts must
    share the scenario, stagger, duration and ACK path and have no seed twice."""
    keys = ("scenario", "stagger_s", "duration_s", "ack_links")
    parts = []
    for path in paths:
        try:
            part = json.loads(Path(path).read_text())
        except (OSError, ValueError) as error:
            raise SystemExit(f"--merge: {path} cannot be read as a result of this script ({error})")
        if not isinstance(part, dict) or part.get("scenario") != "twolink":
            raise SystemExit(f"--merge: {path} is not a twolink result; only twolink parts are merged")
        missing = [k for k in (*keys, "seeds", "fluidcc", "ns3") if k not in part]
        if missing:
            raise SystemExit(f"--merge: {path} lacks {', '.join(missing)}; parts are written by --seed-list")
        parts.append(part)
    for path, part in zip(paths, parts):
        # parts written before --mss have no MSS (theirs was 1000), before --no-handshake-ack no
        # handshake_ack (they sent none): such parts merge only with their like
        for key in (*keys, "mss_bytes", "handshake_ack"):
            if part.get(key) != parts[0].get(key):
                raise SystemExit(f"--merge: {path} has {key} = {part.get(key)!r}, {paths[0]} {parts[0].get(key)!r}; "
                                 "parts must share the scenario, stagger, duration, ACK path, MSS and handshake ACK")
    seeds = [s for part in parts for s in part["seeds"]]
    if len(set(seeds)) != len(seeds):
        raise SystemExit(f"--merge: seeds {sorted(seeds)} repeat; each seed must come from one part")
    order = np.argsort(seeds)
    ours = [r for part in parts for r in part["fluidcc"]["runs"]]
    theirs = [r for part in parts for r in part["ns3"]["runs"]]
    ours, theirs = [ours[k] for k in order], [theirs[k] for k in order]
    names = [k for k in theirs[0] if k != "wall_s"]
    result = {"machine": parts[0]["machine"], **{k: parts[0][k] for k in keys}, "mss_bytes": parts[0].get("mss_bytes"),
              "handshake_ack": parts[0].get("handshake_ack"), "seeds": sorted(seeds),
              "parts": [str(p) for p in paths],
              "fluidcc": {"runs": ours, "wall_s": sum(p["fluidcc"]["wall_s"] for p in parts),
                          "engine_wall_s": sum(p["fluidcc"]["engine_wall_s"] for p in parts),
                          "statuses": sorted({s for p in parts for s in p["fluidcc"]["statuses"]})},
              "ns3": {"runs": theirs, "wall_s": sum(t["wall_s"] for t in theirs)},
              "comparison": compare(ours, theirs, names, paired=True)}
    print(f"{len(parts)} parts, seeds {result['seeds']}; fluidcc engine {result['fluidcc']['engine_wall_s']:.1f} s "
          f"in all; ns-3 {result['ns3']['wall_s']:.1f} s; statuses {result['fluidcc']['statuses']}")
    report(result["comparison"])
    write_json(out, result, announce=True)
    return 0


def report(comparison: dict) -> None:
    for name, row in comparison.items():
        low, high = row["ci95_of_difference"]
        print(f"  {name:22s} fluidcc {row['fluidcc']:10.4g}  ns-3 {row['ns3']:10.4g}  "
              f"{row['difference_pct']:+6.1f} %  CI95 of difference [{low:.4g}, {high:.4g}]  "
              f"{'agrees' if row['agrees'] else 'DIFFERS'}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scenario", choices=("dumbbell", "shortflows", "twolink"), default="dumbbell")
    parser.add_argument("--stagger", type=float, default=0.25, help="twolink: seconds between the long flows' starts")
    parser.add_argument("--load", type=float, default=0.5, help="shortflows: offered load")
    parser.add_argument("--drain", type=float, default=20.0, help="shortflows: seconds after the arrivals")
    parser.add_argument("--flows", type=int, default=50)
    parser.add_argument("--duration", type=float, default=30.0, help="simulated seconds")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--ns3", action="store_true", help="run ns-3 too (needs Debian's libns3-dev)")
    parser.add_argument("--fixed-ack-delay", action="store_true",
                        help="twolink: ACKs return over a fixed delay, not across the links' reverses as in ns-3")
    parser.add_argument("--seed-list", default=None,
                        help="twolink: these seeds (comma-separated, e.g. 3,4) instead of 1..--seeds, so that "
                             "long runs can be split into parts and joined with --merge")
    parser.add_argument("--merge", nargs="+", default=None, metavar="JSON",
                        help="twolink: join the results of parts (each written by --seed-list) into one "
                             "comparison over all their seeds, written to --out; nothing is simulated")
    add_mss_option(parser, note="; the tables measured before this option used the packet size, 1000")
    add_handshake_option(parser)
    parser.add_argument("--out", default=str(HERE / "packet_exact.json"))
    args = parser.parse_args()
    if args.merge:
        return merge_twolink(args.merge, args.out)
    seeds = list(range(1, args.seeds + 1))
    if args.seed_list is not None:
        if args.scenario != "twolink":
            parser.error(f"--seed-list is for --scenario twolink, not {args.scenario}")
        seeds = seed_list(parser, args.seed_list)
    if args.scenario == "shortflows":
        return run_shortflows(args, seeds)
    if args.scenario == "twolink":
        return run_twolink(args, seeds)
    tables = dumbbell_tables(args.flows, seeds)
    tcp = TCP(limited_transmit=False, mss_bytes=args.mss, handshake_ack=args.handshake_ack)
    run, wall = timed(lambda: simulate_exact(network(args.flows), tcp, tables, duration_s=args.duration, seeds=seeds))
    ours = figures_of(run, args.duration)
    forwarded = sum(o["forwarded"] for o in ours)
    result = {"machine": machine_info(extras=()), "flows": args.flows, "duration_s": args.duration, "seeds": seeds,
              "mss_bytes": args.mss, "handshake_ack": args.handshake_ack,
              "fluidcc": {"runs": ours, "wall_s": wall, "engine_wall_s": run.attrs["wall_s"],
                          "step_s": run.attrs["step_s"], "packets_per_s": forwarded / run.attrs["wall_s"]}}
    print(f"fluidcc exact engine: {len(seeds)} runs, {forwarded:,.0f} packets forwarded in {run.attrs['wall_s']:.1f} s "
          f"(call {wall:.1f} s, compilation included): {forwarded / run.attrs['wall_s']:,.0f} packets/s; step "
          f"{run.attrs['step_s']:.6f} s; statuses {sorted({o['status'] for o in ours})}")
    if args.ns3:
        theirs = [ns3_run(args.flows, s, args.duration) for s in seeds]
        ns3_rate = sum(t["forwarded"] for t in theirs) / sum(t["wall_s"] for t in theirs)
        result["ns3"] = {"runs": theirs, "packets_per_s": ns3_rate}
        result["comparison"] = compare(ours, theirs)
        result["speed_ratio"] = (forwarded / run.attrs["wall_s"]) / ns3_rate
        print(f"ns-3: {ns3_rate:,.0f} packets/s; fluidcc / ns-3 = {result['speed_ratio']:.2f}")
        report(result["comparison"])
    else:
        for name in FIGURES:
            print(f"  {name:22s} fluidcc {np.mean([o[name] for o in ours]):10.4g}")
    write_json(args.out, result, announce=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
