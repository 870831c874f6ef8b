"""Packets forwarded per wall-clock second by the packet engine (open-loop sources for now).

The issue's dumbbell (one 100 Mb/s bottleneck, RTPD 80 ms, buffer one BDP, 60 s simulated) with
50 flows; until the TCP source exists the flows are open-loop Poisson sources offering 95 % of
the bottleneck in all (so the figure measures the engine: links, pool, accounting, not TCP).
(a) one run; (b) a batch of runs with different seeds as one vmap. The first call of each shape
compiles; the figure is the second call's.

Run:

    PYTHONPATH=src python benchmarks/packet_throughput.py [--duration 60] [--batch 16] [--slot-packets 1]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from fluidcc.network import Flow, Link, Network
from fluidcc.packet import simulate
from fluidcc.packet.protocols import OpenLoop
from fluidcc.units import mbps_to_pps


def dumbbell(n_flows: int = 50) -> Network:
    capacity = mbps_to_pps(100.0)
    rtpd = 0.080
    bottleneck = Link("bottleneck", capacity, rtpd / 2, buffer_packets=round(capacity * rtpd))
    return Network((bottleneck,), tuple(Flow(f"f{k}", ("bottleneck",)) for k in range(n_flows)))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=float, default=60.0, help="simulated seconds")
    parser.add_argument("--batch", type=int, default=16, help="runs in the batch of (b)")
    parser.add_argument("--slot-packets", type=float, default=1.0, help="packet times per slot")
    args = parser.parse_args()
    network = dumbbell()
    capacity = float(network.capacities_pps[0])
    slot = args.slot_packets / capacity
    source = OpenLoop("poisson", np.full(network.n_flows, 0.95 * capacity / network.n_flows))
    for label, seeds in (("(a) one run", [1]), (f"(b) batch of {args.batch}", list(range(1, args.batch + 1)))):
        simulate(network, source, duration_s=args.duration, slot_s=slot, seeds=seeds)
        begin = time.perf_counter()
        run = simulate(network, source, duration_s=args.duration, slot_s=slot, seeds=seeds)
        wall = time.perf_counter() - begin
        forwarded = float(run.link_accepted.values.sum())
        print(f"{label}: {forwarded:.0f} packets forwarded in {wall:.2f} s = {forwarded / wall:,.0f} packets/s "
              f"({len(seeds)} x {args.duration:g} s simulated, slot {args.slot_packets:g} packet times, calendar {run.attrs['calendar_slots']} slots, mean queue {float(run.queue_mean.mean()):.1f} packets)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
