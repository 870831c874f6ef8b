"""TCP on the two-link network against ns-3, in time: when do the two simulators part?

Both simulators are deterministic for a seed, so a run of T seconds is the first T seconds of any
longer run of that seed. This script runs `benchmarks/ns3/build/twolink` (the iXCP paper's Fig. 1
network with TCP NewReno, limited transmit off) and fluidcc's exact engine on ns-3's own start times
for each duration in `--until` and each seed (on ns-3's network, ACKs across the links' reverses:
`_twolink.ns3_replay`), and prints per run: timeouts (entries into loss
recovery by timeout) and expiries of the retransmission timer, fast recoveries, drops and mean
queues per link, from both; how many flows' drops differ between the two; and what fluidcc's receivers discarded (out-of-order data beyond the
runs they keep; ns-3's keep everything).

`--drop-bins` also compares each link's drops per millisecond (ns-3's drop log against fluidcc's
per-sample drops): the first millisecond whose count differs, and the running difference at each
whole second. `--capacity-ppm=A,B` shifts fluidcc's capacities of link 1 and link 2 (and their
reverses) by A and B parts per million: the transmission times move by fractions of a nanosecond,
which measures how much a run's outcome hangs on sub-nanosecond timing (ns-3 serializes in whole
nanoseconds, fluidcc on the 2^-32 s grid: 0.034 and 0.089 ns less per data packet on the two links).

Run:

    PYTHONPATH=src python benchmarks/twolink_timeline.py --until 1,2,4,8 --seeds 3 [--stagger 0] \
        [--receiver-runs 16] [--fixed-ack-delay] [--seed-list 2,10] [--drop-bins] [--capacity-ppm=-4,-1]
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

import numpy as np

from fluidcc.network import Network
from fluidcc.packet import simulate_exact
from fluidcc.packet.exact_protocols import TCP

from _harness import machine_info, write_json
from _twolink import NS3_ACK_BYTES, add_handshake_option, add_mss_option, ns3_replay, ns3_twolink, seed_list

HERE = Path(__file__).resolve().parent


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--until", default="1,2,4,8", help="run lengths, s, comma-separated")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--seed-list", default=None, help="these seeds (comma-separated) instead of 1..--seeds")
    parser.add_argument("--stagger", type=float, default=0.0, help="seconds between the long flows' starts")
    parser.add_argument("--receiver-runs", type=int, default=None,
                        help="places for out-of-order runs, shared out among the lanes (default: the engine's, receiver_runs_for)")
    parser.add_argument("--fixed-ack-delay", action="store_true",
                        help="ACKs return over a fixed delay, not across the links' reverses as in ns-3")
    add_mss_option(parser)
    add_handshake_option(parser)
    parser.add_argument("--drop-bins", action="store_true",
                        help="compare each link's drops per millisecond: the first that differs")
    parser.add_argument("--capacity-ppm", default="0,0",
                        help="fluidcc only: shift link 1's and link 2's capacities (and their reverses) by "
                             "these parts per million, comma-separated (negative ones after '=': "
                             "--capacity-ppm=-4,-1)")
    parser.add_argument("--out", default=str(HERE / "twolink_timeline.json"))
    args = parser.parse_args()
    try:
        ppm = [float(x) for x in args.capacity_ppm.split(",")]
    except ValueError:
        ppm = []
    if len(ppm) != 2 or not all(abs(x) < 1e5 for x in ppm):
        parser.error(f"--capacity-ppm {args.capacity_ppm!r}: two numbers (link 1, link 2) in parts per million, "
                     "each of magnitude below 100 000")
    seeds = list(range(1, args.seeds + 1))
    if args.seed_list is not None:
        seeds = seed_list(parser, args.seed_list)
    rows, run_attrs = [], {}
    for until in (float(x) for x in args.until.split(",")):
        theirs = [ns3_twolink(args.stagger, until, seed, drop_log=args.drop_bins) for seed in seeds]
        network, _ = ns3_replay(theirs[0], ack_links=not args.fixed_ack_delay)
        if any(ppm):
            network = Network(tuple(dataclasses.replace(
                link, capacity_pps=link.capacity_pps * (1.0 + 1e-6 * ppm[0 if link.name.startswith("l1") else 1]))
                for link in network.links), network.flows)
        tables = [ns3_replay(r)[1] for r in theirs]
        tcp = TCP(limited_transmit=False, ack_bytes=40.0 if args.fixed_ack_delay else NS3_ACK_BYTES, mss_bytes=args.mss,
                  handshake_ack=args.handshake_ack)
        run = simulate_exact(network, tcp, tables, duration_s=until, seeds=seeds,
                             receiver_runs=args.receiver_runs, sample_s=0.001 if args.drop_bins else None)
        run_attrs = dict(run.attrs)
        for k, (seed, r) in enumerate(zip(seeds, theirs)):
            v = run.isel(run=k)
            n = len(r["flows"])
            theirs_drops = np.array([f["data_drops_l1"] + f["data_drops_l2"] for f in r["flows"]])
            ours_drops = v.dropped.values[:n].astype(int)
            per_flow = {name: ([int(f[name]) for f in r["flows"]], v[name].values[:n].astype(int).tolist())
                        for name in ("timeouts", "recoveries")}
            row = {"until_s": until, "seed": seed, "status": int(v.status),
                   "ns3": {"timeouts": r["timeouts"], "rto_expiries": r["rto_expiries"], "recoveries": r["recoveries"],
                           "drops": [int(l["run"]["packets_dropped"]) for l in r["links"]],
                           "mean_queue": [l["run"]["mean_queue_packets"] for l in r["links"]]},
                   "fluidcc": {"timeouts": int(v.timeouts.sum()), "rto_expiries": int(v.rto_expiries.sum()),
                               "recoveries": int(v.recoveries.sum()),
                               "drops": v.link_dropped.sel(link=["l1", "l2"]).values.astype(int).tolist(),
                               "mean_queue": v.queue_mean.sel(link=["l1", "l2"]).values.tolist(), "discarded": int(v.discarded.sum())},
                   "flows_whose_drops_differ": int(np.sum(ours_drops != theirs_drops)),
                   "drops_differing": int(np.sum(np.abs(ours_drops - theirs_drops))),
                   "per_flow": {name: {"ns3": a, "fluidcc": b} for name, (a, b) in per_flow.items()}}
            rows.append(row)
            a, b = row["ns3"], row["fluidcc"]
            print(f"until {until:g} s, seed {seed}: timeouts {a['timeouts']} / {b['timeouts']}, expiries "
                  f"{a['rto_expiries']} / {b['rto_expiries']}, recoveries {a['recoveries']} / {b['recoveries']}, "
                  f"drops {a['drops']} / {b['drops']}, mean queues {np.round(a['mean_queue'], 1).tolist()} / "
                  f"{np.round(b['mean_queue'], 1).tolist()} (ns-3 / fluidcc); flows whose drops differ "
                  f"{row['flows_whose_drops_differ']} (by {row['drops_differing']} packets in all); fluidcc's "
                  f"receivers discarded {b['discarded']}", flush=True)
            for name, (theirs_k, ours_k) in per_flow.items():
                differ = [f"{i}: {x}/{y}" for i, (x, y) in enumerate(zip(theirs_k, ours_k)) if x != y]
                print(f"    {name} per flow (flow 0 the short one), where they differ, ns-3/fluidcc: "
                      f"{', '.join(differ) or 'none'}", flush=True)
            if args.drop_bins:
                row["drop_bins"] = drop_bins(r, v)
    write_json(args.out, {"machine": machine_info(extras=()), "stagger_s": args.stagger, "seeds": seeds, "mss_bytes": args.mss,
                          "handshake_ack": args.handshake_ack,
                          "capacity_ppm": ppm,
                          "ack_links": not args.fixed_ack_delay,
                          "receiver_runs": run_attrs.get("receiver_runs"), "runs": rows},
               announce=True)
    return 0


def drop_bins(theirs: dict, v) -> dict:
    """Per link: drops per millisecond in both simulators (kept where either dropped), the first
    millisecond where they differ and the running difference (fluidcc − ns-3) at each whole second;
    the last two printed as well."""
    found = {}
    for l, link in enumerate(theirs["links"]):
        ours = v.drops.sel(link=link["name"]).values
        counts = np.zeros(len(ours))
        for time_ns, _ in link["drops"]:
            counts[min(int(time_ns // 1_000_000), len(ours) - 1)] += 1
        differ = np.nonzero(ours != counts)[0]
        first = int(differ[0]) if len(differ) else None
        running = np.cumsum(ours - counts)
        at_seconds = [int(running[k]) for k in range(999, len(running), 1000)]
        kept = np.nonzero((ours > 0) | (counts > 0))[0]
        found[link["name"]] = {"first_differing_ms": first, "running_difference_at_seconds": at_seconds,
                               "per_ms": {"ms": kept.tolist(), "fluidcc": ours[kept].astype(int).tolist(),
                                          "ns3": counts[kept].astype(int).tolist()}}
        print(f"    {link['name']} drops per ms: first differing millisecond "
              f"{'none' if first is None else f'{first} (fluidcc {ours[first]:.0f}, ns-3 {counts[first]:.0f})'}; "
              f"fluidcc − ns-3 at each second: {at_seconds}", flush=True)
    return found


if __name__ == "__main__":
    raise SystemExit(main())
