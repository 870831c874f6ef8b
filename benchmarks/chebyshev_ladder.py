"""How far the Chebyshev refinement is from the least work that reaches the tolerance.

On the points of `dde_throughput.py` (eq. (14) of the VCP paper, same draw and seed), this solves
every point once at each of a set of fixed resolutions (pieces x nodes per RTT), timing each pass
(the second of two calls: compilation excluded), and measures each point's error at each
resolution against a Chebyshev solution refined to --reference-rtol. From those it computes:

- the cost of refinement ladders, by a model of `fluidcc.dde._batching.climb`: every point is
  solved at the first two rungs, and a finite point climbs to the next rung while its error at the rung
  below the current one is above rtol (two successive rungs agree to rtol about when the coarser
  is within rtol, the finer being far more accurate). A rung costs its pass time per point. The
  model also gives each point's final error;
- an oracle bound: each point solved once, at the cheapest resolution whose error is within rtol.
  No refinement that decides from computed solutions can do less;
- the bound for a perfect predictor of that resolution after the first two rungs, the chosen
  resolution then checked against the next rung (two solutions, as in the ladder).

The costs are seconds for all the points on this machine, sums of measured pass times. Run from
the repository root:

    PYTHONPATH=src python benchmarks/chebyshev_ladder.py
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from fluidcc.dde import Status, solve
from fluidcc.dde import Chebyshev

from _dde_points import benchmark_points, largest_relative_error, reference_solution
from _harness import repeat, timed, write_json

RESOLUTIONS = ("1x8", "1x10", "1x12", "1x16", "1x20", "1x24", "1x32", "1x40", "1x48", "1x64", "1x96", "1x128",
               "2x16", "2x24", "2x32", "2x64", "2x128", "4x24", "4x32", "4x64", "4x128", "8x24", "8x32", "16x32",
               "32x32")

#: Alternatives to fluidcc's own ladder (Chebyshev(nodes=12).ladder() from 1 x 12), which is always measured first.
OTHER_LADDERS = {
    "32 nodes, then more pieces (fluidcc's ladder until 2026-11-24)": ("1x8", "1x16", "1x24", "1x32", "2x32", "4x32",
                                                                      "8x32", "16x32", "32x32"),
    "from 1 x 8": ("1x8", "1x12", "1x16", "1x24", "1x32", "1x48", "1x64", "1x96", "1x128", "2x128", "4x128"),
    "from 1 x 8, no 1 x 12": ("1x8", "1x16", "1x24", "1x32", "1x48", "1x64", "1x96", "1x128", "2x128", "4x128"),
    "from 1 x 10": ("1x10", "1x16", "1x24", "1x32", "1x48", "1x64", "1x96", "1x128", "2x128", "4x128"),
    "64 nodes, then more pieces": ("1x12", "1x16", "1x24", "1x32", "1x48", "1x64", "2x64", "4x64", "4x128"),
    "8 nodes more per rung up to 48": ("1x12", "1x16", "1x24", "1x32", "1x40", "1x48", "1x64", "1x96", "1x128",
                                       "2x128", "4x128"),
    "twice the nodes per rung": ("1x8", "1x16", "1x32", "1x64", "1x128", "2x128", "4x128"),
    "one more rung at 1 x 12": ("1x8", "1x12", "1x16", "1x24", "1x32", "2x32", "4x32", "8x32", "16x32", "32x32"),
    "1 x 10 first": ("1x10", "1x16", "1x24", "1x32", "2x32", "4x32", "8x32", "16x32", "32x32"),
    "24 nodes per piece": ("1x8", "1x16", "1x24", "2x24", "4x24", "8x24", "16x32", "32x32"),
    "2 x 24 between 1 x 32 and 2 x 32": ("1x8", "1x16", "1x24", "1x32", "2x24", "2x32", "4x32", "8x32", "16x32",
                                         "32x32"),
    "16 nodes per piece": ("1x8", "1x16", "2x16", "2x24", "4x24", "8x24", "8x32", "16x32", "32x32"),
}


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--points", type=int, default=10_000)
    parser.add_argument("--rtts", type=int, default=250)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rtol", type=float, default=1e-6)
    parser.add_argument("--skip-rtts", type=int, default=5, help="errors are measured from this RTT on")
    parser.add_argument("--reference-rtol", type=float, default=1e-10)
    parser.add_argument("--out", type=Path, default=None, help="write the figures as JSON here")
    return parser.parse_args(argv)


def label(resolution) -> str:
    return f"{resolution[0]}x{resolution[1]}"


def parse(name: str) -> tuple[int, int]:
    pieces, nodes = name.split("x")
    return int(pieces), int(nodes)


def errors_and_times(args):
    system, params, t_final, grid = benchmark_points(args.points, args.seed, args.rtts)
    reference, wall = timed(lambda: reference_solution(system, params, t_final, grid, args.reference_rtol))
    print(f"reference (rtol {args.reference_rtol:g}): {wall:.1f} s, {reference.summary()}", flush=True)
    finite = np.asarray(reference.status) == Status.OK
    seconds, error = {}, {}
    for name in RESOLUTIONS:
        pieces, nodes = parse(name)
        kwargs = dict(method="chebyshev", pieces_per_delay=pieces, nodes=nodes)
        with np.errstate(all="ignore"):
            run = repeat(lambda: solve(system, params, t_final, grid, **kwargs), 1, warmup=1)  # warm-up compiles
        sol, seconds[name] = run.result, run.best
        error[name] = np.where(finite, largest_relative_error(sol.ys[..., 0], reference.ys[..., 0], args.skip_rtts), 0.0)
        print(f"{name:>6}: {seconds[name]:6.2f} s, {int(np.sum(finite & (error[name] <= args.rtol)))} of "
              f"{int(finite.sum())} finite points within {args.rtol:g}", flush=True)
    return finite, seconds, error


def ladder_cost(ladder, finite, seconds, error, rtol, size):
    """Model of the climb: (seconds, points left above rtol, largest final error, points per rung)."""
    total = seconds[ladder[0]] + seconds[ladder[1]]  # every point, the failing ones too
    end = np.where(finite, 1, 0)
    pending = finite & (error[ladder[0]] > rtol)
    for index in range(2, len(ladder)):
        total += seconds[ladder[index]] * pending.sum() / size
        end[pending] = index
        pending = pending & (error[ladder[index - 1]] > rtol)
    final = np.choose(end, [error[name] for name in ladder])
    counts = {ladder[i]: int(np.sum(finite & (end == i))) for i in range(len(ladder))}
    return total, int(pending.sum()), float(final.max()), counts


def main(argv=None) -> dict:
    args = parse_args(argv)
    finite, seconds, error = errors_and_times(args)
    size = len(finite)
    fluidcc_ladder = tuple(label(r) for r in Chebyshev(nodes=12, max_pieces_per_delay=4).ladder())
    missing = [name for name in fluidcc_ladder if name not in seconds]
    if missing:
        raise SystemExit(f"RESOLUTIONS lacks {missing}, rungs of fluidcc's ladder")
    ladders = {"fluidcc's ladder (resolution_ladder from 1 x 12)": fluidcc_ladder, **OTHER_LADDERS}

    report = {"args": {k: str(v) for k, v in vars(args).items()}, "pass_seconds": seconds, "ladders": {}}
    print(f"\nladder costs (model of the climb, rtol {args.rtol:g}; seconds for all {size} points):")
    for name, ladder in ladders.items():
        total, left, worst, counts = ladder_cost(ladder, finite, seconds, error, args.rtol, size)
        report["ladders"][name] = {"rungs": ladder, "seconds": total, "left_above_rtol": left,
                                   "largest_final_error": worst, "points_ending_per_rung": counts}
        print(f"  {total:5.2f} s  left above rtol {left}, largest final error {worst:.2e}  {name}: "
              f"{' '.join(ladder)}")

    # oracle: each point once, at the cheapest resolution within rtol
    by_cost = sorted(seconds, key=seconds.get)
    cheapest = np.full(size, np.inf)
    for name in by_cost:
        cheapest = np.where(np.isinf(cheapest) & (error[name] <= args.rtol), seconds[name] / size, cheapest)
    cheapest = np.where(finite, cheapest, seconds[fluidcc_ladder[0]] / size)
    report["oracle_seconds"] = float(cheapest.sum())
    report["oracle_unresolved"] = int(np.isinf(cheapest).sum())

    # perfect predictor after the first two rungs, checked against the next rung
    first = seconds[fluidcc_ladder[0]] + seconds[fluidcc_ladder[1]]
    predicted = 0.0
    for i in np.nonzero(finite)[0]:
        needed = next((j for j, name in enumerate(fluidcc_ladder) if error[name][i] <= args.rtol), None)
        if needed is None or needed + 1 >= len(fluidcc_ladder):
            predicted = np.inf
            break
        if needed >= 2:
            predicted += seconds[fluidcc_ladder[needed]] / size
        if needed >= 1:
            predicted += seconds[fluidcc_ladder[needed + 1]] / size
    report["perfect_predictor_seconds"] = float(first + predicted)
    one_pass = seconds["1x16"]
    print(f"\noracle (each point once at its cheapest resolution within rtol): {report['oracle_seconds']:.2f} s "
          f"({report['oracle_seconds'] / one_pass:.1f} passes of 1 x 16, {report['oracle_unresolved']} unresolved)")
    print(f"perfect predictor after the first two rungs, checked against the next rung: "
          f"{report['perfect_predictor_seconds']:.2f} s")
    print(f"1 x 16 pass: {one_pass:.2f} s")
    write_json(args.out, report, nonfinite_as_text=False, announce=True)
    return report


if __name__ == "__main__":
    main()
