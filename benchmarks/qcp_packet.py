"""QCP at packet level (exact engine) against its fluid model: does it settle after flows join?

Two scenarios, each with the paper's literal rate update (gain 1: R jumps to eq. (4)'s value
every interval) and with the default gain 1/4 (`fluidcc.packet.exact_protocols.qcp`):

- `onelink`: four flows on 1000 packets/s, RTPD 100 ms, buffer one BDP; three join a long-lived
  one at once at 5 s (runs differ in the join instant, 5 s + k x 13.7 ms). Judged from 12 s to the
  end: the routers' count of the flows against 4, the offered rate against C / 4, utilization
  and drops. Both variants (eq. (12) "exact", eq. (14) "simplified").
- `twolink`: the iXCP paper's Fig. 1 network (155 and 100 Mb/s, 20 ms each; one flow on the first
  link, 16 across both), the 16 starting `--stagger` s apart (0: all at once). Per-flow rates over
  the second half of the run (each flow's in-order data at its receiver between the half and the end, from
  two runs of the deterministic engine, one stopped at the half), against the fluid model
  `fluidcc.models.QCPNetwork` on the same network (its rates at the end) and max-min; drops
  after the last start plus one second. `--scale` scales both capacities (0.1: 15.5 and 10 Mb/s).

    PYTHONPATH=src python benchmarks/qcp_packet.py --scenario onelink --runs 8
    PYTHONPATH=src python benchmarks/qcp_packet.py --scenario twolink --stagger 0.25 --duration 30
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from _harness import write_json
from _twolink import second_half_goodput, twolink_network

from fluidcc.network import Flow, Link, Network
from fluidcc.packet import simulate_exact
from fluidcc.packet.exact_protocols import QCP
from fluidcc.packet.workloads import FlowTable
from fluidcc.runs import simulate_network


def dominant_period(values: np.ndarray, spacing: float) -> float:
    """The period (s) of the strongest non-zero frequency of a series."""
    centred = values - values.mean()
    power = np.abs(np.fft.rfft(centred)) ** 2
    freq = np.fft.rfftfreq(len(values), spacing)
    k = 1 + int(np.argmax(power[1:]))
    return float(1.0 / freq[k])


def onelink(args) -> dict:
    network = Network((Link("l", 1000.0, 0.05),), (Flow("f", ("l",)),))
    tables = [FlowTable([0.0] + [5.0 + 0.0137 * k] * 3, np.full(4, np.inf)) for k in range(args.runs)]
    rows = []
    for variant in ("exact", "simplified"):
        for gain in (1.0, 0.25):
            began = time.perf_counter()
            run = simulate_exact(network, QCP(variant=variant, gain=gain), tables, duration_s=args.duration,
                                 sample_s=0.05, seeds=list(range(args.runs)))
            wall = time.perf_counter() - began
            late = run.sample_time.values > 12.0
            count = run.qcp_flow_estimate_series.values[:, late, 0]
            rate = run.qcp_rate_series.values[:, late, 0]
            served = run.served.values[:, late, 0].sum(axis=1) / (1000.0 * 0.05 * late.sum())
            row = {"variant": variant, "gain": gain, "runs": args.runs, "wall_s": wall,
                   "statuses": run.status.values.tolist(),
                   "count_mean": float(count.mean()), "count_worst_error": float(np.max(np.abs(count / 4.0 - 1.0))),
                   "rate_mean": float(rate.mean()), "rate_worst_error": float(np.max(np.abs(rate / 250.0 - 1.0))),
                   "rate_max_over_min": float(np.median(rate.max(axis=1) / rate.min(axis=1))),
                   "period_s": float(np.median([dominant_period(r, 0.05) for r in rate])),
                   "utilization": float(served.mean()),
                   "drops_after_12s": int(run.drops.values[:, late].sum()),
                   "drops_total": int(run.drops.values.sum()), "timeouts": int(run.timeouts.values.sum())}
            rows.append(row)
            print(f"{variant:10s} gain {gain:4.2f}: count {row['count_mean']:7.3f} (worst error "
                  f"{100 * row['count_worst_error']:.1f} %), rate {row['rate_mean']:7.1f} (worst "
                  f"{100 * row['rate_worst_error']:.1f} %, max/min {row['rate_max_over_min']:.1f}, period "
                  f"{row['period_s']:.2f} s), utilization {row['utilization']:.3f}, drops after 12 s "
                  f"{row['drops_after_12s']} (all {row['drops_total']}), timeouts {row['timeouts']}; {wall:.0f} s")
    fluid = simulate_network("qcp", Network((Link("l", 1000.0, 0.05),),
                                            (Flow("f0", ("l",)),
                                             *(Flow(f"f{k}", ("l",), start_s=5.0) for k in (1, 2, 3)))),
                             duration_s=args.duration)
    late = fluid.time.values > 12.0
    fluid_row = {"rate_mean": float(fluid.rate.values[late].mean()),
                 "rate_worst_error": float(np.max(np.abs(fluid.rate.values[late] / 250.0 - 1.0))),
                 "queue_max_after_12s": float(fluid.queue.values[late].max())}
    print(f"fluid model: rate {fluid_row['rate_mean']:.2f} (worst {100 * fluid_row['rate_worst_error']:.2f} %)")
    return {"packet": rows, "fluid": fluid_row}


def twolink(args) -> dict:
    network = twolink_network(args.scale, args.stagger)
    last_start = float(np.max(network.start_s))
    fluid = simulate_network("qcp", network, duration_s=args.duration)
    expected = fluid.rate.values[-1]
    maxmin = fluid.maxmin_rate.values[-1]
    rows = []
    for gain in args.gains:
        began = time.perf_counter()
        full, first, rate = second_half_goodput(network, QCP(gain=gain), args.duration, sample_s=0.5)
        wall = time.perf_counter() - began
        error = rate / expected - 1.0
        after = full.sample_time.values > last_start + 1.0
        drops = full.drops.values[after].sum(axis=0)
        arrived = full.accepted.values[after].sum(axis=0) + drops
        row = {"gain": gain, "wall_s": wall, "status": [str(full.message.values), str(first.message.values)],
               "short_rate": float(rate[0]), "long_rate_mean": float(rate[1:].mean()),
               "long_rate_min": float(rate[1:].min()), "long_rate_max": float(rate[1:].max()),
               "worst_error_vs_fluid": float(np.max(np.abs(error))),
               "drop_fraction_after_starts": (drops / np.maximum(arrived, 1)).tolist(),
               "queue_mean": full.queue_mean.values.tolist(), "busy": full.busy.values.tolist(),
               "timeouts": int(full.timeouts.values.sum()),
               # when the drops happen: per link, per second of the run
               "drops_per_second": [full.drops.values[(full.sample_time.values > k)
                                                      & (full.sample_time.values <= k + 1)].sum(axis=0).tolist()
                                    for k in range(int(args.duration))]}
        rows.append(row)
        print(f"gain {gain:4.2f} ({row['status'][0]}): short {row['short_rate']:8.1f} long {row['long_rate_mean']:7.1f} "
              f"[{row['long_rate_min']:.1f}, {row['long_rate_max']:.1f}] packets/s; worst error against the "
              f"fluid model {100 * row['worst_error_vs_fluid']:.1f} %; drops after the starts "
              f"{[f'{100 * d:.3f} %' for d in row['drop_fraction_after_starts']]}; mean queues "
              f"{np.round(row['queue_mean'], 1).tolist()}; busy {np.round(row['busy'], 3).tolist()}; {wall:.0f} s")
        print(f"  drops per second (l1, l2): {[[int(d) for d in pair] for pair in row['drops_per_second']]}")
    print(f"fluid model at {args.duration} s: short {expected[0]:.1f}, long {expected[1:].mean():.1f}; "
          f"max-min: {maxmin[0]:.1f}, {maxmin[1:].mean():.1f}")
    return {"packet": rows, "fluid_rate": expected.tolist(), "maxmin_rate": maxmin.tolist(),
            "capacities_pps": network.capacities_pps.tolist()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scenario", choices=("onelink", "twolink"), default="onelink")
    parser.add_argument("--runs", type=int, default=8, help="onelink: runs (join instants)")
    parser.add_argument("--duration", type=float, default=None, help="s (default: 20 onelink, 30 twolink)")
    parser.add_argument("--stagger", type=float, default=0.25, help="twolink: s between the long flows' starts")
    parser.add_argument("--scale", type=float, default=1.0, help="twolink: capacity scale")
    parser.add_argument("--gains", type=float, nargs="+", default=[1.0, 0.25], help="twolink: QCP router gains")
    parser.add_argument("--out", default=None, help="JSON file for the results")
    args = parser.parse_args()
    if args.duration is None:
        args.duration = 20.0 if args.scenario == "onelink" else 30.0
    write_json(args.out, {"args": vars(args), **(onelink(args) if args.scenario == "onelink" else twolink(args))})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
