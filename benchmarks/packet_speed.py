"""The exact engine's speed against ns-3's, on the configurations whose agreement with ns-3
`packet_exact.py` measures (its default step, TCP as there), each ratio measured in one run.
One scenario file drives both simulators: fluidcc runs it (`fluidcc.packet.run_scenario`), and
ns-3's `shortflows` program runs the same file's flows, link and TCP settings
(`_packet_scenarios.ns3_scenario_runs`).

Parts (`--part`, all by default):

* **dumbbell**: one run of `examples/scenarios/tcp_dumbbell.toml` (50 long-lived flows,
  `--duration` 60 s, seed 1) in fluidcc and in ns-3: packets forwarded by the bottleneck per wall
  second. fluidcc's wall is its call's minus the compilation JAX reports (`CompileClock`; the
  compilation is given apart).
* **batch**: the same file with `--batch` seeds (1...) over `--batch-duration` s, in one fluidcc
  call (on a CPU one run per core at a time, `simulate_exact(batch="auto")`), against the same
  runs of ns-3 on `--processes` processes at once (default: as many as the machine has cores):
  packets forwarded per wall second of the whole batch, core for core.
* **shortflows**: `examples/scenarios/tcp_shortflows.toml` at load 0.5 and 0.9
  (`--short-duration` s of arrivals, then `--drain` s; one run each): wall seconds of each, and
  the utilization, drop rate and AFCT of both beside them (one seed: a check that the run is the
  same work, not a comparison; `packet_exact.py --scenario shortflows` gives that over seeds).
* **scaling**: one workload of short flows (load 0.5, fluidcc's own Poisson arrivals over 200 s)
  simulated over its first 50 s and over all 200 s: wall seconds (compilation excluded) per
  simulated second, which must not grow with the flows that have already finished; with each
  run's default lanes, then with one lane count for both (the larger default). Once with the
  Pareto sizes of the short flows (shape 1.2, mean 25: the load of a stretch of arrivals varies
  widely, so the 200 s hold more work per second than their first 50 s), once with exponential
  sizes of the same mean, whose load is steadier, and once with the Pareto workload's first 50 s
  of arrivals repeated four times (`--scaling-sizes`), where every 50 s offer the same flows and
  the 200-s run differs from the 50-s run only in the flows already finished: the engine's own
  cost per simulated second apart from the workload's. Each run's work per simulated second
  beside it, and the change in wall time per senders' iteration; each run called
  `--scaling-repeats` times (3; the calls of the 50-s and the 200-s run alternate), its wall time
  the median call's.

Run:

    PYTHONPATH=src python benchmarks/packet_speed.py [--part dumbbell batch shortflows scaling]
        [--duration 60] [--batch 100 --batch-duration 10] [--short-duration 100 --drain 20]
"""

from __future__ import annotations

import argparse
import dataclasses
import os

import numpy as np

from _harness import CompileClock, machine_info, timed, write_json
from _packet_scenarios import HERE, ns3_scenario_runs, shortflow_network

EXAMPLES = HERE.parent / "examples" / "scenarios"

PARTS = ("dumbbell", "batch", "shortflows", "scaling")


def fluidcc_call(call, clock: CompileClock) -> tuple[object, dict]:
    """call() timed: (its dataset, {wall_s, compile_s, run_s: wall minus compilation})."""
    with clock:
        run, wall = timed(call)
    return run, {"wall_s": wall, "compile_s": clock.seconds, "run_s": wall - clock.seconds}


def work_of(run) -> dict:
    """What the engine did in a call (its work_* counts, summed over the call's runs)."""
    return {name: int(run[name].values.sum()) for name in run.data_vars if name.startswith("work_")}


def dumbbell(args, clock, seeds: list[int], duration: float, processes: int) -> dict:
    from fluidcc.packet import Scenario, run_scenario

    scenario = Scenario.load(EXAMPLES / "tcp_dumbbell.toml")
    scenario = dataclasses.replace(scenario, duration_s=duration, seeds=tuple(seeds), sample_s=duration / 1000.0,
                                   workload=dataclasses.replace(scenario.workload, count=args.flows))
    run, timing = fluidcc_call(lambda: run_scenario(scenario), clock)
    forwarded = float(run.link_accepted.sum())
    theirs, ns3_wall = ns3_scenario_runs(scenario, processes)
    ns3_forwarded = float(sum(r["bottleneck"]["run"]["packets_forwarded"] for r in theirs))
    # one ns-3 process: its own timer of the simulation; several: the wall time of them all
    ns3_time = theirs[0]["wall_s"] if len(seeds) == 1 else ns3_wall
    out = {"seeds": seeds, "duration_s": duration, "flows": args.flows, "ns3_processes": processes,
           "fluidcc": {**timing, "forwarded": forwarded, "packets_per_s": forwarded / timing["run_s"],
                       "statuses": sorted({int(x) for x in run.status.values}), "batch": run.attrs["batch"],
                       "utilization": float(run.busy.mean()), "mean_queue": float(run.queue_mean.mean()),
                       **work_of(run)},
           "ns3": {"wall_s": ns3_time, "forwarded": ns3_forwarded, "packets_per_s": ns3_forwarded / ns3_time,
                   "utilization": float(np.mean([r["bottleneck"]["run"]["utilization"] for r in theirs])),
                   "mean_queue": float(np.mean([r["bottleneck"]["run"]["mean_queue_packets"] for r in theirs]))}}
    out["ratio"] = out["fluidcc"]["packets_per_s"] / out["ns3"]["packets_per_s"]
    print(f"dumbbell, {len(seeds)} run(s) of {duration:g} s: fluidcc {out['fluidcc']['packets_per_s']:,.0f} packets/s "
          f"({timing['run_s']:.1f} s + {timing['compile_s']:.1f} s compiling), ns-3 "
          f"{out['ns3']['packets_per_s']:,.0f} packets/s ({ns3_time:.1f} s, {processes} process(es)): "
          f"{out['ratio']:.2f}x", flush=True)
    return out


def shortflows(args, clock, load: float) -> dict:
    from fluidcc.packet import Scenario, run_scenario

    scenario = Scenario.load(EXAMPLES / "tcp_shortflows.toml")
    total = args.short_duration + args.drain
    scenario = dataclasses.replace(scenario, duration_s=total, sample_s=args.short_duration / 1000.0,
                                   workload=dataclasses.replace(scenario.workload, load=load,
                                                                arrivals_s=args.short_duration))
    net = scenario.network
    run, timing = fluidcc_call(lambda: run_scenario(scenario), clock)
    r = ns3_scenario_runs(scenario)[0][0]
    flows = r["flows_table"]
    v = run.isel(run=0).sel(link="bottleneck")
    arrivals = v.sample_time.values <= args.short_duration + 1e-9
    n_flows = run.sizes["flow"]
    out = {"load": load, "flows": n_flows, "duration_s": args.short_duration, "drain_s": args.drain,
           "fluidcc": {**timing, "status": int(v.status), "lanes": int(run.attrs["lanes"]),
                       "lanes_peak": int(v.lanes_peak), "attempts": int(run.attrs["attempts"]),
                       "utilization": float(v.served.values[arrivals].sum())
                       / (float(net.capacities_pps[0]) * args.short_duration),
                       "drop_rate": float(v.link_dropped) / float(v.link_arrived),
                       "afct_s": float(np.nanmean(v.fct.values)), "unfinished": int(np.isnan(v.fct.values).sum()),
                       **work_of(run)},
           "ns3": {"wall_s": r["wall_s"], "utilization": r["bottleneck"]["arrivals"]["utilization"],
                   "drop_rate": r["bottleneck"]["run"]["packets_dropped"]
                   / max(r["bottleneck"]["run"]["packets_arrived"], 1),
                   "afct_s": float(np.nanmean(flows["fct_s"])), "unfinished": int(np.sum(~np.isfinite(flows["fct_s"])))}}
    out["ratio"] = out["ns3"]["wall_s"] / timing["run_s"]
    print(f"short flows, load {load:g}, {n_flows} flows, {total:g} s: fluidcc {timing['run_s']:.1f} s "
          f"(+ {timing['compile_s']:.1f} s compiling; lanes {out['fluidcc']['lanes']}, peak "
          f"{out['fluidcc']['lanes_peak']}, {out['fluidcc']['attempts']} attempt(s)), ns-3 {r['wall_s']:.1f} s: "
          f"{out['ratio']:.1f}x; utilization {out['fluidcc']['utilization']:.4f} vs {out['ns3']['utilization']:.4f}, "
          f"drop rate {out['fluidcc']['drop_rate']:.4%} vs {out['ns3']['drop_rate']:.4%}, AFCT "
          f"{out['fluidcc']['afct_s']:.4f} vs {out['ns3']['afct_s']:.4f} s", flush=True)
    return out


def scaling(args, clock, sizes_kind: str) -> dict:
    from fluidcc.packet import simulate_exact
    from fluidcc.packet.exact import lanes_for
    from fluidcc.packet.exact_protocols import TCP
    from fluidcc.packet.workloads import Exponential, FlowTable, Pareto, PoissonArrivals

    net = shortflow_network()
    sizes = Exponential(25.0) if sizes_kind == "exponential" else Pareto(1.2, 25.0)
    if sizes_kind == "pareto-repeated":
        # the first 50 s of arrivals four times over: every 50 s of the 200 s offer the same flows,
        # so only the flows already finished differ (the long flows of one stretch run on into the
        # next, as in any run)
        first = PoissonArrivals.for_load(0.5, sizes, float(net.capacities_pps[0]), duration_s=50.0,
                                         seed=1).table()
        whole = FlowTable(np.concatenate([first.start_s + 50.0 * k for k in range(4)]),
                          np.tile(first.size_packets, 4), route=np.tile(first.route, 4))
    else:
        whole = PoissonArrivals.for_load(0.5, sizes, float(net.capacities_pps[0]), duration_s=200.0,
                                         seed=1).table()
    tcp = TCP(initial_window=10, min_rto_s=1.0, mss_bytes=948)
    # the lanes of each run's own default, then the larger of the two for both (the default guess
    # grows with the busiest window of the table, which a longer table is more likely to hold)
    tables = {}
    for duration in (50.0, 200.0):
        first = whole.start_s < duration
        tables[duration] = FlowTable(whole.start_s[first], whole.size_packets[first], route=whole.route[first])
    fixed = max(lanes_for(t.start_s[None], float(np.max(net.rtt_s)), len(t)) for t in tables.values())
    out = {}
    for label, lanes in (("default lanes", None), (f"{fixed} lanes for both", fixed)):
        rows = []
        # the calls of the two runs alternate, so that a drift of the machine's speed over the
        # minute they take reaches both alike
        calls = {duration: [] for duration in tables}
        for _ in range(args.scaling_repeats):
            for duration, table in tables.items():
                calls[duration].append(fluidcc_call(lambda: simulate_exact(
                    net, tcp, table, duration_s=duration, lanes=lanes, sample_s=duration / 1000.0), clock))
        for duration, table in tables.items():
            run, timing = calls[duration][0][0], dict(calls[duration][0][1])
            # the median call's run (compilation apart): the 50-s run takes well under a second,
            # where one reading moves by as much as the change to measure
            timing["run_s"] = float(np.median([t["run_s"] for _, t in calls[duration]]))
            timing["run_s_each"] = [t["run_s"] for _, t in calls[duration]]
            rows.append({"duration_s": duration, "flows": len(table), **timing, "status": int(run.status[0]),
                         "lanes": int(run.attrs["lanes"]), "lanes_peak": int(run.lanes_peak[0]),
                         "attempts": int(run.attrs["attempts"]), "finished": int(np.isfinite(run.fct.values).sum()),
                         "wall_per_simulated_s": timing["run_s"] / duration, **work_of(run)})
            print(f"scaling, {sizes_kind} sizes, {label}: {duration:g} s, {len(table)} flows ({rows[-1]['finished']} finished): "
                  f"{rows[-1]['wall_per_simulated_s']:.4f} wall s per simulated s (lanes {rows[-1]['lanes']}, "
                  f"peak {rows[-1]['lanes_peak']}, {rows[-1]['attempts']} attempt(s)); per simulated s, sender iterations "
                  f"{rows[-1]['work_sender_iterations'] / duration:.0f}, link iterations "
                  f"{rows[-1]['work_link_iterations'] / duration:.0f}", flush=True)
        change = rows[1]["wall_per_simulated_s"] / rows[0]["wall_per_simulated_s"] - 1.0
        # the workload's own change: its senders' iterations per simulated second (most of the cost)
        work = {unit: (rows[1][f"work_{unit}"] / 200.0) / (rows[0][f"work_{unit}"] / 50.0) - 1.0
                for unit in ("sender_iterations", "link_iterations")}
        per_work = (1.0 + change) / (1.0 + work["sender_iterations"]) - 1.0
        print(f"scaling, {sizes_kind} sizes, {label}: 200 s against 50 s: {100 * change:+.1f} % wall per simulated second; "
              f"the work per simulated second {100 * work['sender_iterations']:+.1f} % (senders' iterations), "
              f"{100 * work['link_iterations']:+.1f} % (link iterations); wall per senders' iteration "
              f"{100 * per_work:+.1f} %", flush=True)
        out[label] = {"runs": rows, "change_pct": 100.0 * change,
                      "work_change_pct": {unit: 100.0 * x for unit, x in work.items()},
                      "wall_per_sender_iteration_change_pct": 100.0 * per_work}
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--part", nargs="+", choices=PARTS, default=list(PARTS))
    parser.add_argument("--flows", type=int, default=50, help="dumbbell senders")
    parser.add_argument("--duration", type=float, default=60.0, help="dumbbell: simulated seconds of the one run")
    parser.add_argument("--batch", type=int, default=100, help="dumbbell runs in the batch")
    parser.add_argument("--batch-duration", type=float, default=10.0, help="simulated seconds of each batch run")
    parser.add_argument("--processes", type=int, default=os.cpu_count() or 1,
                        help="ns-3 processes at once beside the batch (default: the machine's cores)")
    parser.add_argument("--short-duration", type=float, default=100.0, help="short flows: seconds of arrivals")
    parser.add_argument("--drain", type=float, default=20.0, help="short flows: seconds after the arrivals")
    parser.add_argument("--scaling-repeats", type=int, default=3,
                        help="scaling: calls of each run, the median's wall time taken")
    parser.add_argument("--scaling-sizes", nargs="+", choices=("pareto", "exponential", "pareto-repeated"),
                        default=["pareto", "exponential", "pareto-repeated"],
                        help="scaling: the flow sizes of the workload (pareto-repeated: Pareto, the first 50 s "
                             "of arrivals four times over)")
    parser.add_argument("--out", default=str(HERE / "packet_speed.json"))
    args = parser.parse_args()
    clock = CompileClock()
    result = {"machine": machine_info(extras=()), "step": "the lookahead (default)"}
    if "dumbbell" in args.part:
        result["dumbbell"] = dumbbell(args, clock, [1], args.duration, 1)
    if "batch" in args.part:
        result["batch"] = dumbbell(args, clock, list(range(1, args.batch + 1)), args.batch_duration, args.processes)
    if "shortflows" in args.part:
        result["shortflows"] = [shortflows(args, clock, load) for load in (0.5, 0.9)]
    if "scaling" in args.part:
        result["scaling"] = {kind: scaling(args, clock, kind) for kind in args.scaling_sizes}
    write_json(args.out, result, announce=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
