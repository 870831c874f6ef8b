"""Packets forwarded per wall-clock second by the packet engine, against ns-3, on a TCP dumbbell.

The issue's dumbbell: long-lived TCP NewReno flows through one 100 Mb/s bottleneck (12 500
packets/s of 1000 bytes), RTPD 80 ms, drop-tail buffer of one BDP (1000 packets), 60 s simulated,
flows starting uniformly in [0, 1) s; as in the ns-3 program, each sender has a 10 Gb/s interface
(2 us from the bottleneck), so its bursts are not paced at the bottleneck's rate. (a) one run of
50 flows; (b) a batch of runs with different seeds and flow counts, in three groups of runs of
similar flow count (`simulate(..., groups=3)`: one vmap each, each group padded to its own widest
run). The first call of each shape compiles; the figures are the second call's (the first call's
are printed beside them). With `--ns3`, the same dumbbell runs in ns-3 (benchmarks/ns3/, built
here with build.sh; limited transmit off, as fluidcc's TCP) for the same number of seeds, and the
two are compared on utilization, mean queue, drop rate, Jain's index and packets dropped per loss
event (fast recoveries and timeouts: counted from 1 s on in ns-3, whose sockets exist once every
flow has started; over the whole run in fluidcc, whose first second holds 0-22 of about 1 300
events per run).

Run:

    PYTHONPATH=src python benchmarks/packet_throughput.py [--duration 60] [--batch 100] \
        [--groups 3] [--slot-packets 10] [--seeds 5] [--ns3]
"""

from __future__ import annotations

import argparse
import json
import subprocess
from pathlib import Path

import numpy as np

from fluidcc.network import Flow, Link, Network
from fluidcc.packet import simulate
from fluidcc.packet.metrics import jain_fairness
from fluidcc.packet.protocols import TCP
from fluidcc.packet.workloads import FlowTable
from fluidcc.units import mbps_to_pps

from _harness import repeat

HERE = Path(__file__).resolve().parent
CAPACITY = mbps_to_pps(100.0)
RTPD = 0.080
ACCESS = mbps_to_pps(10_000.0)
ACCESS_DELAY = 2e-6


def dumbbell(n: int) -> Network:
    """ns-3's dumbbell: every sender with a 10 Gb/s interface 2 us from the bottleneck (ns-3's two
    1 us access links), then the bottleneck (the rest of the 40 ms one way). As in ns-3, a window's
    burst reaches the bottleneck unpaced. (The same as a private 10 Gb/s access link before the
    bottleneck but for a slot of rounding, engine docs; half the hops.)"""
    bottleneck = Link("bottleneck", CAPACITY, RTPD / 2 - ACCESS_DELAY, buffer_packets=round(CAPACITY * RTPD))
    return Network((bottleneck,), tuple(Flow(f"f{i}", ("bottleneck",), access_delay_s=ACCESS_DELAY,
                                             interface_pps=ACCESS) for i in range(n)))


def flows(n: int, seed: int) -> FlowTable:
    start = np.random.default_rng(seed).uniform(0.0, 1.0, n)
    return FlowTable(start, np.full(n, np.inf), route=np.arange(n))


def measures(run, duration: float) -> dict:
    """Per run: utilization, mean queue, drop rate, Jain's index of the flows' goodput, packets
    dropped per loss event and loss events per 1000 packets forwarded."""
    out = []
    for k in range(run.sizes["run"]):
        v = run.isel(run=k).sel(link="bottleneck")
        real = np.isfinite(v["start"].values)
        accepted = float(v.link_accepted)
        dropped = float(v.link_dropped)
        events = float(v.recoveries.values[real].sum() + v.timeouts.values[real].sum())
        out.append({"utilization": accepted / (CAPACITY * duration), "mean_queue": float(v.queue_mean),
                    "drop_rate": dropped / (accepted + dropped),
                    "jain": float(jain_fairness(v.received.values[real].astype(float))),
                    "drops_per_loss_event": dropped / max(events, 1.0),
                    "loss_events_per_1000": 1000.0 * events / accepted})
    return {key: float(np.mean([o[key] for o in out])) for key in out[0]}


def run_fluidcc(n_flows: list[int], seeds: list[int], duration: float, slot: float, groups: int = 1):
    """Returns the run, the second call's wall time and the first's (compilation included)."""
    tables = [flows(n, s) for n, s in zip(n_flows, seeds)]
    network = dumbbell(max(n_flows))
    # the first call compiles
    runs = repeat(lambda: simulate(network, TCP(), tables, duration_s=duration, slot_s=slot, seeds=seeds,
                                   groups=groups), 2)
    return runs.result, runs.walls[1], runs.walls[0]


def run_ns3(n: int, seed: int, duration: float) -> dict:
    binary = HERE / "ns3" / "build" / "dumbbell"
    source = HERE / "ns3" / "dumbbell.cc"
    if not binary.exists() or binary.stat().st_mtime < source.stat().st_mtime:
        subprocess.run(["bash", str(HERE / "ns3" / "build.sh"), str(binary)], check=True)
    out = subprocess.run([str(binary), f"--flows={n}", f"--seed={seed}", f"--duration={duration:g}",
                          "--limitedTransmit=0"], check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=float, default=60.0, help="simulated seconds")
    parser.add_argument("--batch", type=int, default=100, help="runs in the batch of (b) (0: skip (b))")
    parser.add_argument("--groups", type=int, default=3,
                        help="groups of runs of similar flow count in (b), each padded to its own widest run")
    parser.add_argument("--slot-packets", type=float, default=10.0, help="bottleneck packet times per slot")
    parser.add_argument("--seeds", type=int, default=5, help="seeds for the comparison with ns-3")
    parser.add_argument("--ns3", action="store_true", help="run ns-3 too (needs Debian's libns3-dev)")
    args = parser.parse_args()
    slot = args.slot_packets / CAPACITY
    seeds = list(range(1, args.seeds + 1))
    run, _, _ = run_fluidcc([50] * len(seeds), seeds, args.duration, slot)
    one, wall_one, _ = run_fluidcc([50], [1], args.duration, slot)
    forwarded = float(one.link_accepted.sel(link="bottleneck").sum())
    print(f"(a) one run, 50 flows: {forwarded:.0f} packets forwarded in {wall_one:.2f} s = "
          f"{forwarded / wall_one:,.0f} packets/s ({args.duration:g} s simulated, slot {args.slot_packets:g} "
          f"packet times, calendar {one.attrs['calendar_slots']} slots, late batches {int(one.late.sum())})")
    forwarded_b = wall_b = None
    if args.batch > 0:
        counts = [int(n) for n in np.linspace(25, 75, args.batch).round()]
        batch, wall_b, first_b = run_fluidcc(counts, list(range(1, args.batch + 1)), args.duration, slot, args.groups)
        forwarded_b = float(batch.link_accepted.sel(link="bottleneck").sum())
        print(f"(b) batch of {args.batch} (25-75 flows) in {args.groups} group(s): {forwarded_b:.0f} packets forwarded "
              f"in {wall_b:.2f} s = {forwarded_b / wall_b:,.0f} packets/s (first call, compiling: {first_b:.2f} s = "
              f"{forwarded_b / first_b:,.0f} packets/s)")
    ours = measures(run, args.duration)
    print(f"fluidcc, 50 flows, mean over {len(seeds)} seeds: " + ", ".join(f"{k} {v:.6g}" for k, v in ours.items()))
    if args.ns3:
        results = [run_ns3(50, s, args.duration) for s in seeds]
        theirs = {"utilization": np.mean([r["utilization"] for r in results]),
                  "mean_queue": np.mean([r["mean_queue_packets"] for r in results]),
                  "drop_rate": np.mean([r["drop_rate"] for r in results]),
                  "jain": np.mean([r["jain"] for r in results]),
                  "drops_per_loss_event": np.mean([r["packets_dropped"] / max(r["recoveries"] + r["timeouts"], 1)
                                                   for r in results]),
                  "loss_events_per_1000": np.mean([1000.0 * (r["recoveries"] + r["timeouts"]) / r["data_packets_forwarded"]
                                                   for r in results])}
        ns3_rate = np.mean([r["packets_forwarded"] / r["wall_s"] for r in results])
        print(f"ns-3, 50 flows, mean over {len(seeds)} seeds: " + ", ".join(f"{k} {v:.6g}" for k, v in theirs.items())
              + f"; {ns3_rate:,.0f} packets/s (wall {np.mean([r['wall_s'] for r in results]):.1f} s per run)")
        batch_ratio = f"{forwarded_b / wall_b / ns3_rate:.1f}x" if wall_b else "not run"
        print(f"ratio (a) {forwarded / wall_one / ns3_rate:.1f}x, (b) {batch_ratio}; "
              + ", ".join(f"{k} {(ours[k] - theirs[k]) / theirs[k]:+.1%}" for k in ours))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
