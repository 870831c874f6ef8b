"""TCP on the two-link network against ns-3, in time: when do the two simulators part?

Both simulators are deterministic for a seed, so a run of T seconds is the first T seconds of any
longer run of that seed. This script runs `benchmarks/ns3/build/twolink` (the iXCP paper's Fig. 1
network with TCP NewReno, limited transmit off) and fluidcc's exact engine on ns-3's own start times
for each duration in `--until` and each seed, and prints per run: timeouts (entries into loss
recovery by timeout) and expiries of the retransmission timer, fast recoveries, drops and mean
queues per link, from both; and what fluidcc's receivers discarded (out-of-order data beyond the
runs they keep; ns-3's keep everything).

Run:

    PYTHONPATH=src python benchmarks/twolink_timeline.py --until 1,2,4,8 --seeds 3 [--stagger 0] \
        [--receiver-runs 16]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from fluidcc.packet import simulate_exact
from fluidcc.packet.exact_protocols import TCP

from _harness import machine_info, write_json
from _twolink import ns3_replay, ns3_twolink

HERE = Path(__file__).resolve().parent


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--until", default="1,2,4,8", help="run lengths, s, comma-separated")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--stagger", type=float, default=0.0, help="seconds between the long flows' starts")
    parser.add_argument("--receiver-runs", type=int, default=None,
                        help="out-of-order runs each fluidcc receiver keeps (default: the engine's, receiver_runs_for)")
    parser.add_argument("--out", default=str(HERE / "twolink_timeline.json"))
    args = parser.parse_args()
    seeds = list(range(1, args.seeds + 1))
    rows, run_attrs = [], {}
    for until in (float(x) for x in args.until.split(",")):
        theirs = [ns3_twolink(args.stagger, until, seed) for seed in seeds]
        network, _ = ns3_replay(theirs[0])
        tables = [ns3_replay(r)[1] for r in theirs]
        run = simulate_exact(network, TCP(limited_transmit=False), tables, duration_s=until, seeds=seeds,
                             receiver_runs=args.receiver_runs)
        run_attrs = dict(run.attrs)
        for k, (seed, r) in enumerate(zip(seeds, theirs)):
            v = run.isel(run=k)
            row = {"until_s": until, "seed": seed, "status": int(v.status),
                   "ns3": {"timeouts": r["timeouts"], "rto_expiries": r["rto_expiries"], "recoveries": r["recoveries"],
                           "drops": [int(l["run"]["packets_dropped"]) for l in r["links"]],
                           "mean_queue": [l["run"]["mean_queue_packets"] for l in r["links"]]},
                   "fluidcc": {"timeouts": int(v.timeouts.sum()), "rto_expiries": int(v.rto_expiries.sum()),
                               "recoveries": int(v.recoveries.sum()),
                               "drops": v.link_dropped.values.astype(int).tolist(),
                               "mean_queue": v.queue_mean.values.tolist(), "discarded": int(v.discarded.sum())}}
            rows.append(row)
            a, b = row["ns3"], row["fluidcc"]
            print(f"until {until:g} s, seed {seed}: timeouts {a['timeouts']} / {b['timeouts']}, expiries "
                  f"{a['rto_expiries']} / {b['rto_expiries']}, recoveries {a['recoveries']} / {b['recoveries']}, "
                  f"drops {a['drops']} / {b['drops']}, mean queues {np.round(a['mean_queue'], 1).tolist()} / "
                  f"{np.round(b['mean_queue'], 1).tolist()} (ns-3 / fluidcc); fluidcc's receivers discarded "
                  f"{b['discarded']}", flush=True)
    write_json(args.out, {"machine": machine_info(extras=()), "stagger_s": args.stagger, "seeds": seeds,
                          "receiver_runs": run_attrs.get("receiver_runs"), "runs": rows},
               announce=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
