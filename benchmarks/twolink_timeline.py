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
import json
import subprocess
from pathlib import Path

import numpy as np

from fluidcc.network import Flow, Link, Network
from fluidcc.packet import simulate_exact
from fluidcc.packet.exact_protocols import TCP
from fluidcc.packet.workloads import FlowTable
from fluidcc.units import mbps_to_pps

from _harness import machine_info, write_json

HERE = Path(__file__).resolve().parent
NIC_PPS = mbps_to_pps(10_000.0)  # the senders' 10 Gb/s access links
NIC_TO_ROUTER_S = 2e-6


def ns3_run(binary: Path, stagger: float, until: float, seed: int) -> dict:
    text = subprocess.run([str(binary), f"--stagger={stagger:g}", f"--duration={until:g}", f"--seed={seed}",
                           "--limitedTransmit=0"], check=True, capture_output=True, text=True).stdout
    return json.loads(text.strip().splitlines()[-1])


def replay(r: dict) -> tuple[Network, FlowTable]:
    """ns-3's network and its flows' start times, for the exact engine."""
    links = tuple(Link(l["name"], float(l["capacity_pps"]), float(l["delay_s"]),
                       buffer_packets=float(l["buffer_packets"])) for l in r["links"])
    network = Network(links, (Flow("short", ("l1",), access_delay_s=NIC_TO_ROUTER_S, interface_pps=NIC_PPS),
                              Flow("long", ("l1", "l2"), access_delay_s=NIC_TO_ROUTER_S, interface_pps=NIC_PPS)))
    flows = r["flows"]
    table = FlowTable(np.array([f["start_s"] for f in flows]), np.full(len(flows), np.inf),
                      route=np.array([0 if f["name"] == "short" else 1 for f in flows]))
    return network, table


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--until", default="1,2,4,8", help="run lengths, s, comma-separated")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--stagger", type=float, default=0.0, help="seconds between the long flows' starts")
    parser.add_argument("--receiver-runs", type=int, default=None,
                        help="out-of-order runs each fluidcc receiver keeps (default: the engine's, receiver_runs_for)")
    parser.add_argument("--out", default=str(HERE / "twolink_timeline.json"))
    args = parser.parse_args()
    binary = HERE / "ns3" / "build" / "twolink"
    if not binary.exists():
        subprocess.run(["bash", str(HERE / "ns3" / "build.sh")], check=True)
    seeds = list(range(1, args.seeds + 1))
    rows, run_attrs = [], {}
    for until in (float(x) for x in args.until.split(",")):
        theirs = [ns3_run(binary, args.stagger, until, seed) for seed in seeds]
        network, _ = replay(theirs[0])
        tables = [replay(r)[1] for r in theirs]
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
