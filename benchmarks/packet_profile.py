"""Where the exact engine's time goes: compilation, steps, the sorts of a stage's rounds, the
senders' iterations and the links' events.

Each configuration is simulated twice with `fluidcc.packet.simulate_exact` (the first call
compiles; `CompileClock` measures how long); the second call's wall time is the run's. The engine
counts its work per run (`work_*`: steps; rounds of the senders' stage and of the link stages, a
round being one chunk of a stage's events sorted; iterations of the senders' loop, each moving
every lane by one action; link iterations, one packet or router timer each). Over the
configurations the wall times are fitted by non-negative least squares as

    wall = sum_k cost_k * count_k   (k: steps, sender rounds, sender iterations, sender iterations
                                      times lanes, link rounds, link iterations; counts summed
                                      over the runs of a call)

and each configuration's time is split by those costs. One run per call (`--batch 1`, default)
or batches of seeds (`--batch 8`, vmapped: the costs are then per iteration of the batch's loops,
which run until the run with the most work is done, so the largest count of a batch is used).

The configurations: a network whose one flow starts after the end (steps and nothing else); the
dumbbell of `packet_exact.py` (100 Mb/s, RTPD 80 ms, buffer one BDP, 10 Gb/s interfaces) with 2,
20 and 50 long-lived TCP flows; the same with 20 flows at a tenth of the lookahead as the step;
short TCP flows (Poisson arrivals, Pareto sizes of mean 25 packets, shape 1.2, on that link with
RTPD 100 ms) at load 0.5 and 0.9, and at load 0.5 on 1024 lanes (what a lane costs).

Run:

    PYTHONPATH=src python benchmarks/packet_profile.py [--seconds 4] [--batch 1] [--out FILE]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
from scipy.optimize import nnls

from _harness import CompileClock, machine_info, timed, write_json
from _packet_scenarios import network, shortflow_network

HERE = Path(__file__).resolve().parent
UNITS = ("steps", "sender_rounds", "sender_iterations", "sender_lane_iterations", "link_rounds", "link_iterations")
#: The counts the engine reports (work_*); sender_lane_iterations is sender_iterations times lanes.
COUNTED = ("steps", "sender_rounds", "sender_iterations", "link_rounds", "link_iterations")


def configurations(seconds: float):
    from fluidcc.network import Flow, Network
    from fluidcc.packet.exact_protocols import TCP
    from fluidcc.packet.workloads import FlowTable, Pareto, PoissonArrivals

    def spread(n: int) -> FlowTable:
        """n long-lived flows starting i / n s apart."""
        return FlowTable(np.arange(n) / n, np.full(n, np.inf), route=np.arange(n))

    tcp = TCP(initial_window=2, mss_bytes=948)
    short = TCP(initial_window=10, min_rto_s=1.0, mss_bytes=948)
    late = Network(network(1).links, (Flow("late", ("bottleneck",), start_s=10 * seconds),))
    yield "idle", late, tcp, None, {}
    for n in (2, 20, 50):
        yield f"dumbbell {n} flows", network(n), tcp, spread(n), {}
    yield "dumbbell 20 flows, step lookahead/10", network(20), tcp, spread(20), {"step_s": 0.1 * 0.08 * (1 - 1e-6)}
    links = shortflow_network()
    arrivals = {load: PoissonArrivals.for_load(load, Pareto(1.2, 25.0), float(links.capacities_pps[0]),
                                               duration_s=seconds, seed=1).table() for load in (0.5, 0.9)}
    for load, table in arrivals.items():
        yield f"short flows load {load}", links, short, table, {}
    yield "short flows load 0.5, 1024 lanes", links, short, arrivals[0.5], {"lanes": 1024}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=4.0, help="simulated seconds per run")
    parser.add_argument("--batch", type=int, default=1, help="runs (seeds) per call")
    parser.add_argument("--batch-mode", choices=("vmap", "threads"), default="vmap",
                        help="how a call simulates its runs (simulate_exact's batch)")
    parser.add_argument("--out", default=str(HERE / "packet_profile.json"))
    args = parser.parse_args()
    from fluidcc.packet import simulate_exact

    rows = []
    clock = CompileClock()
    seeds = list(range(args.batch))
    for name, net, protocol, table, options in configurations(args.seconds):
        call = lambda: simulate_exact(net, protocol, table, duration_s=args.seconds, seeds=seeds,  # noqa: E731
                                      sample_s=args.seconds / 100, batch=args.batch_mode, **options)
        with clock:
            first, first_wall = timed(call)
        compile_s = clock.seconds
        run, wall = timed(call)
        assert (run.status == 0).all(), f"{name}: {run.message.values}"
        counts = {unit: int(run[f"work_{unit}"].values.max()) if args.batch > 1 else int(run[f"work_{unit}"].sum())
                  for unit in COUNTED}
        counts["sender_lane_iterations"] = counts["sender_iterations"] * int(run.attrs["lanes"])
        events = int(run.link_arrived.sum())
        rows.append({"name": name, "wall_s": wall, "first_call_s": first_wall, "compile_s": compile_s,
                     "link_arrivals": events, "lanes": int(run.attrs["lanes"]), **counts})
        print(f"{name:40s} wall {wall:7.2f} s, compile {compile_s:6.2f} s, " +
              ", ".join(f"{unit} {counts[unit]}" for unit in UNITS), flush=True)
    # batches: the loops run until the run with the most work ends; the largest count is the cost
    matrix = np.array([[row[unit] for unit in UNITS] for row in rows], dtype=float)
    walls = np.array([row["wall_s"] for row in rows])
    costs, residual = nnls(matrix, walls)
    fitted = matrix @ costs
    print("\ncost per unit (s): " + ", ".join(f"{unit} {c:.3g}" for unit, c in zip(UNITS, costs)))
    print(f"{'configuration':40s} {'wall':>8s} {'fitted':>8s} " + " ".join(f"{u[:14]:>14s}" for u in UNITS))
    for row, fit, counts in zip(rows, fitted, matrix):
        shares = counts * costs / max(fit, 1e-12)
        row["fitted_s"] = float(fit)
        row["shares"] = {unit: float(x) for unit, x in zip(UNITS, shares)}
        print(f"{row['name']:40s} {row['wall_s']:8.2f} {fit:8.2f} " + " ".join(f"{100 * x:13.0f}%" for x in shares))
    write_json(args.out, {"machine": machine_info(extras=()), "seconds": args.seconds, "batch": args.batch,
                          "batch_mode": args.batch_mode,
                          "costs_s": dict(zip(UNITS, costs.tolist())), "residual_s": float(residual),
                          "configurations": rows}, announce=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
