"""How accurate the Chebyshev refinement's solutions are for each tolerance, on every point of the
throughput benchmark: the loosest rtol that keeps every point within a target error.

The refinement keeps the finer of two successive resolutions that agree to rtol, so the error of
what it returns is usually far below rtol. For each seed (the random points of
benchmarks/dde_throughput.py: eq. (14) of the VCP paper, 250 RTTs, one save per RTT) this solves
every point with method="chebyshev" at rtol --reference-rtol (the reference here), then at each
--rtols value from one piece of --nodes nodes, and reports per rtol:

- the largest relative error of the window over the saves t >= --skip-rtts T, over the points
  that both runs report ok, its 99.9th percentile, and how many points are above --target;
- how many points changed status against the reference (a status, never a wrong number: a point
  near the float64 limit may overflow at a coarse rung);
- the wall time of a warm call (the best of --repeats, after one call that compiles).

The loosest rtol with no point above --target on every seed is the one dde_throughput.py runs as
--loose-rtol: the rule that chose jitcdde's strict tolerances there, applied to fluidcc.

    PYTHONPATH=src python benchmarks/chebyshev_tolerance.py --seeds 0,1
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from fluidcc.dde import Status, solve

from _dde_points import benchmark_points, largest_relative_error, reference_solution
from _harness import repeat, write_json


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--points", type=int, default=10_000)
    parser.add_argument("--rtts", type=int, default=250)
    parser.add_argument("--seeds", default="0,1", help="seeds of the random points, comma-separated")
    parser.add_argument("--rtols", default="1e-6,1e-5,3e-5,5e-5,1e-4", help="tolerances, comma-separated")
    parser.add_argument("--nodes", type=int, default=12, help="nodes per piece of the first rung")
    parser.add_argument("--reference-rtol", type=float, default=1e-10)
    parser.add_argument("--target", type=float, default=1e-6, help="the error every point must stay within")
    parser.add_argument("--skip-rtts", type=int, default=5, help="errors are measured from this RTT on")
    parser.add_argument("--repeats", type=int, default=3, help="warm calls timed per tolerance (the best is kept)")
    parser.add_argument("--out", type=Path, default=None, help="write the figures as JSON here")
    args = parser.parse_args(argv)
    try:
        args.seeds = [int(s) for s in args.seeds.split(",") if s.strip()]
        args.rtols = [float(r) for r in args.rtols.split(",") if r.strip()]
    except ValueError as error:
        parser.error(f"--seeds / --rtols: {error}")
    if not args.seeds or not args.rtols or min(args.rtols) <= 0:
        parser.error("--seeds and --rtols need at least one value each, tolerances > 0")
    if args.points < 1 or args.rtts < 1 or args.repeats < 1 or args.nodes < 4 or not 0 <= args.skip_rtts <= args.rtts:
        parser.error("--points, --rtts and --repeats must be >= 1, --nodes >= 4, 0 <= --skip-rtts <= --rtts")
    return args


def one_seed(args, seed: int) -> dict:
    system, params, t_final, grid = benchmark_points(args.points, seed, args.rtts)
    reference = reference_solution(system, params, t_final, grid, args.reference_rtol)
    ref_status = np.asarray(reference.status)
    report = {"reference": reference.summary(), "tolerances": {}}
    print(f"seed {seed}: reference at rtol {args.reference_rtol:g}: {reference.summary()}", flush=True)
    for rtol in args.rtols:
        with np.errstate(all="ignore"):  # the warm-up call compiles
            run = repeat(lambda: solve(system, params, t_final, grid, method="chebyshev", nodes=args.nodes, rtol=rtol),
                         args.repeats, warmup=1)
        sol, seconds = run.result, run.walls
        status = np.asarray(sol.status)
        both = (status == Status.OK) & (ref_status == Status.OK)
        error = largest_relative_error(sol.ys[..., 0], reference.ys[..., 0], args.skip_rtts)[both]
        row = {
            "points_compared": int(both.sum()),
            "max_error": float(error.max()),
            "p999_error": float(np.quantile(error, 0.999)),
            "points_above_target": int(np.sum(error > args.target)),
            "status_changed": int(np.sum(status != ref_status)),
            "seconds_best": min(seconds),
            "seconds": seconds,
        }
        report["tolerances"][f"{rtol:g}"] = row
        print(f"  rtol {rtol:g}: max error {row['max_error']:.3g} (rtol / {rtol / row['max_error']:.0f}), "
              f"p99.9 {row['p999_error']:.3g}, above {args.target:g}: {row['points_above_target']} of "
              f"{row['points_compared']}, status changed: {row['status_changed']}, "
              f"{min(seconds):.3f} s (best of {args.repeats}: {', '.join(f'{s:.3f}' for s in seconds)})", flush=True)
    return report


def main(argv=None) -> dict:
    args = parse_args(argv)
    report = {"target": args.target, "nodes": args.nodes, "reference_rtol": args.reference_rtol,
              "seeds": {str(seed): one_seed(args, seed) for seed in args.seeds}}
    within = [rtol for rtol in args.rtols
              if all(report["seeds"][str(s)]["tolerances"][f"{rtol:g}"]["points_above_target"] == 0 for s in args.seeds)]
    report["loosest_within_target"] = max(within) if within else None
    print(f"loosest rtol with every point of every seed within {args.target:g}: "
          f"{report['loosest_within_target'] if within else 'none'}")
    write_json(args.out, report, nonfinite_as_text=False, announce=True)
    return report


if __name__ == "__main__":
    main()
