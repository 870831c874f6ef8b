"""RCP at packet level (exact engine) on the iXCP paper's two-link network, against its fluid model.

The network of `qcp_packet.py --scenario twolink` (155 and 100 Mb/s, 20 ms each; one flow on the
first link, 16 across both, the 16 starting `--stagger` s apart, 0: all 17 at once). Reported:

- per-flow goodput over the second half of the run (in-order data at the receivers, from two runs
  of the deterministic engine, one stopped at the half) against the fluid model
  `fluidcc.models.RCPNetwork` on the same network (its rates at the end) and against max-min;
- each link's load against eq. (2)'s fixed point y = C - beta q / (alpha d0), with the measured
  mean queue q and the router's d0 (a packet queue is never empty, so y sits below C);
- drops after the last start plus one second, and over the whole run;
- the transient: each router's rate R_l(t) and queue q_l(t) at fixed instants beside the fluid
  model's, the fluid model started as the packet routers are (R_l = C_l: `initial_rate_fraction`
  1), and the drops per interval.

    PYTHONPATH=src python benchmarks/rcp_packet.py --stagger 0.25 --duration 30
    PYTHONPATH=src python benchmarks/rcp_packet.py --stagger 0 --duration 20
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from _harness import write_json
from _twolink import second_half_goodput, twolink_network

from fluidcc.packet.exact_protocols import RCP
from fluidcc.runs import simulate_network

INSTANTS = (0.05, 0.1, 0.2, 0.3, 0.5, 1.0, 2.0, 3.0, 5.0, 10.0, 15.0, 20.0, 30.0)


def at(times: np.ndarray, values: np.ndarray, t: float) -> np.ndarray:
    """The sample at or just before t (the samples hold the value after their last update)."""
    return values[max(int(np.searchsorted(times, t, side="right")) - 1, 0)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--stagger", type=float, default=0.25, help="s between the long flows' starts (0: at once)")
    parser.add_argument("--duration", type=float, default=30.0, help="s")
    parser.add_argument("--scale", type=float, default=1.0, help="capacity scale")
    parser.add_argument("--out", default=None, help="JSON file for the results")
    args = parser.parse_args()

    network = twolink_network(args.scale, args.stagger)
    half = args.duration / 2
    protocol = RCP()

    began = time.perf_counter()
    full, first, goodput = second_half_goodput(network, protocol, args.duration, sample_s=0.01)
    wall = time.perf_counter() - began
    fluid = simulate_network("rcp", network, duration_s=args.duration)
    matched = simulate_network("rcp", network, {"initial_rate_fraction": 1.0}, duration_s=args.duration)
    expected = fluid.rate.values[-1]
    maxmin = fluid.maxmin_rate.values[-1]

    error = goodput / expected - 1.0
    t = full.sample_time.values
    second = t > half
    seconds = 0.01 * second.sum()
    load = full.accepted.values[second].sum(axis=0) / seconds  # data and ACKs: no ACK crosses these links
    queue = full.queue.values[second].mean(axis=0)
    d0 = full.rcp_d0.values
    capacity = network.capacities_pps
    fixed_point = capacity - protocol.beta * queue / (protocol.alpha * d0)
    after = t > float(np.max(network.start_s)) + 1.0
    drops_after = full.drops.values[after].sum(axis=0)
    arrived_after = full.accepted.values[after].sum(axis=0) + drops_after
    statuses = [str(full.message.values), str(first.message.values)]
    print(f"status: {statuses}; {wall:.0f} s for both runs")
    print(f"goodput, second half: short {goodput[0]:.1f}, long {goodput[1:].mean():.1f} "
          f"[{goodput[1:].min():.1f}, {goodput[1:].max():.1f}] packets/s; fluid model {expected[0]:.1f}, "
          f"{expected[1:].mean():.1f}; max-min {maxmin[0]:.1f}, {maxmin[1:].mean():.1f}; worst error against "
          f"the fluid model {100 * np.max(np.abs(error)):.1f} %")
    print(f"links, second half: load {np.round(load, 1).tolist()}, eq. (2)'s fixed point "
          f"{np.round(fixed_point, 1).tolist()} (mean queue {np.round(queue, 2).tolist()}, d0 "
          f"{np.round(d0, 4).tolist()} s)")
    print(f"drops after the starts + 1 s: {drops_after.tolist()} of {arrived_after.tolist()}; in all "
          f"{full.link_dropped.values.tolist()} of {full.link_arrived.values.tolist()}; "
          f"timeouts {int(full.timeouts.values.sum())}")

    rate = full.rcp_rate_series.values
    drops = full.drops.values
    transient = []
    print("\n t (s) | R_l packet (l1, l2) | R_l fluid, started at C | R_l fluid, default start | queue packet | "
          "queue fluid (C start) | drops in (prev, t]")
    previous = 0.0
    for instant in (s for s in INSTANTS if s <= args.duration):
        window = (t > previous) & (t <= instant)
        row = {"t": instant, "rate_packet": at(t, rate, instant).tolist(),
               "rate_fluid_matched": at(matched.time.values, matched.offered_rate.values, instant).tolist(),
               "rate_fluid_default": at(fluid.time.values, fluid.offered_rate.values, instant).tolist(),
               "queue_packet": at(t, full.queue.values, instant).tolist(),
               "queue_fluid_matched": at(matched.time.values, matched.queue.values, instant).tolist(),
               "drops": drops[window].sum(axis=0).tolist()}
        transient.append(row)
        print(f"{instant:6.2f} | {row['rate_packet'][0]:8.0f} {row['rate_packet'][1]:8.0f} | "
              f"{row['rate_fluid_matched'][0]:8.0f} {row['rate_fluid_matched'][1]:8.0f} | "
              f"{row['rate_fluid_default'][0]:8.0f} {row['rate_fluid_default'][1]:8.0f} | "
              f"{row['queue_packet'][0]:7.1f} {row['queue_packet'][1]:7.1f} | "
              f"{row['queue_fluid_matched'][0]:8.1f} {row['queue_fluid_matched'][1]:8.1f} | "
              f"{row['drops'][0]:.0f} {row['drops'][1]:.0f}")
        previous = instant
    result = {"args": vars(args), "wall_s": wall, "status": statuses, "goodput": goodput.tolist(),
              "fluid_rate": expected.tolist(), "maxmin_rate": maxmin.tolist(),
              "worst_error_vs_fluid": float(np.max(np.abs(error))), "load": load.tolist(),
              "fixed_point": fixed_point.tolist(), "queue_mean_second_half": queue.tolist(), "d0": d0.tolist(),
              "drops_after_starts": drops_after.tolist(), "arrived_after_starts": arrived_after.tolist(),
              "drops_all": full.link_dropped.values.tolist(), "arrived_all": full.link_arrived.values.tolist(),
              "fluid_queue_max_matched": matched.queue.values.max(axis=0).tolist(), "transient": transient}
    write_json(args.out, result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
