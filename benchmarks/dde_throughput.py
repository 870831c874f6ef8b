"""Throughput and accuracy of fluidcc's DDE engine (RK4 and the exponential Chebyshev method of
steps) on the MIAIMD aggregate equation, against jitcdde and the SciPy reference, in one run on one
machine.

The model is eq. (14) of the VCP paper,

    w'(t) = (1/T) { kappa w(t) [gamma C T / w(t - T) - 1] + N alpha },   w = N on [-T, 0],

at random points: kappa in [0.05, 2], T in [0.01, 1] s, C in [1250, 125000] packets/s and
N in [10, 1000] flows (rounded to whole flows), each log-uniform; alpha = 1, gamma = 0.98. Every
point is saved once per RTT, t = 0, T, ..., R T (R = --rtts).

1. fluidcc, method="rk4", on every point: fixed-step at --steps-per-delay, then with rtol=--rtol
   refinement. A warm-up call on one chunk of points compiles the fixed-step kernels first; the
   compile time JAX reports (tracing, lowering and XLA compilation events) is given separately,
   and subtracted from the refinement run, whose kernels for the refined subsets compile as the
   run reaches them.
   Then method="chebyshev" on every point: at one piece of --nodes nodes per RTT, then with
   rtol=--rtol refinement from one piece of --rtol-nodes nodes (more nodes, then more pieces, up
   to --max-pieces-per-delay), after a warm-up of the refinement on one chunk; compile time
   during the runs is subtracted likewise. Then the same refinement at --loose-rtol, the loosest
   of fluidcc's tolerances measured (benchmarks/chebyshev_tolerance.py) that keeps every point
   within 1e-6 of a Chebyshev solution at rtol 1e-10: the rule that chose jitcdde's strict
   tolerances below, applied to fluidcc.
2. jitcdde on a random subsample, with T, C, N and kappa as control parameters (compiled to C
   once; the compilation is excluded from the timing). Per point: purge_past, constant_past,
   set_parameters, adjust_diff (step_on_discontinuities cannot be used: the delay T is a control
   parameter), then integrate to each save time. Five configurations: eq. (14) as written
   ("natural") and in log coordinates like fluidcc ("log"), each at jitcdde's default tolerances
   (the headline; adjust_diff at its default shift ratio too) and at --jitcdde-rtol/--jitcdde-atol
   with a narrower adjust_diff shift (--jitcdde-shift-ratio), for a like-for-like accuracy figure;
   then eq. (14) as written at --jitcdde-strict-rtol/--jitcdde-strict-atol ("natural/strict"),
   the loosest of jitcdde's tolerances measured here that keeps every point within 1e-6 of the
   reference: the like-for-like figure for the issue's target, both solvers within 1e-6.
3. fluidcc's SciPy reference (method="scipy": DOP853 by the method of steps, rtol 1e-11) on a
   random subsample that contains the jitcdde subsample. On every point whose reference is finite
   at all save points t >= --skip-rtts * T and whose fluidcc status is ok, the error is
   max |w / w_ref - 1| over those save points. A "wrong number" is a save point where a solver
   returned a finite window and the reference a non-finite one, or the other way round; fluidcc
   must report failures as a status, never as a wrong number.

Every timed run, fluidcc's and jitcdde's alike, is repeated --repeats times in a row: the first call
is reported as described above, and the best of the calls (fluidcc's first one without its
compilation) is the steady-state figure, every kernel then in memory. The repeats must return the
same numbers bit for bit (reported as repeats_identical).

Times are wall-clock seconds; trajectories/s counts points integrated over the full horizon. The
headline ratio is fluidcc fixed-step over jitcdde natural/default; the issue's target is fluidcc at
<= 1e-6 (the rtol runs) over jitcdde. fluidcc keeps a persistent JAX
compilation cache (see fluidcc._jax_setup); run with FLUIDCC_JAX_CACHE= (empty) to measure cold
compilation.
Run from the repository root, e.g.

    PYTHONPATH=src python benchmarks/dde_throughput.py --out benchmarks/dde_throughput.json
"""

from __future__ import annotations

import argparse
import datetime as _dt
import os
import sys
import time
import warnings
from collections import Counter

import numpy as np

from fluidcc.dde import Status, solve
from fluidcc.dde import DEFAULT_BATCH_CHUNK
from fluidcc.models import MIAIMDAggregate

from _dde_points import ALPHA, GAMMA, RANGES, draw_points, largest_relative_error, params_of, save_grid, scipy_reference, subsamples
from _jitcdde import build_jitcdde, run_jitcdde_config
from _harness import CompileClock, Table, cell, machine_info, repeat, timed, write_json

ERROR_THRESHOLD = 1e-6


# ------------------------------------------------------------------------------------------------
# command line


#: the Chebyshev runs, in the order they run and are reported (cheb_loose only with --loose-rtol)
CHEBYSHEV_RUNS = ("cheb_fixed", "cheb_rtol", "cheb_loose")


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Speed and accuracy of fluidcc's RK4 DDE engine vs jitcdde and the SciPy "
        "reference on the MIAIMD aggregate equation (VCP paper eq. 14).",
    )
    parser.add_argument("--points", type=int, default=10000, help="random parameter points integrated by fluidcc")
    parser.add_argument("--rtts", type=int, default=250, help="horizon in RTTs; one save per RTT (t = 0, T, ..., rtts*T seconds)")
    parser.add_argument("--jitcdde-points", type=int, default=200, help="points of the random subsample integrated by jitcdde")
    parser.add_argument("--reference-points", type=int, default=200, help="points of the random subsample integrated by the SciPy reference (contains the jitcdde subsample)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random points and subsamples")
    parser.add_argument("--steps-per-delay", type=int, default=32, help="fluidcc RK4 steps per RTT (even)")
    parser.add_argument("--rtol", type=float, default=1e-6, help="fluidcc refinement tolerance (relative error of the window)")
    parser.add_argument("--max-steps-per-delay", type=int, default=4096, help="finest fluidcc resolution the refinement may use")
    parser.add_argument("--nodes", type=int, default=16, help="Chebyshev nodes per piece of the chebyshev method's first resolution")
    parser.add_argument("--rtol-nodes", type=int, default=12, help="Chebyshev nodes per piece of the first resolution of the chebyshev rtol run (its ladder: 16, 24, 32, 48, 64, 96, 128 nodes, then more pieces)")
    parser.add_argument("--loose-rtol", type=float, default=5e-5, help="tolerance of a second chebyshev refinement run, the loosest measured (benchmarks/chebyshev_tolerance.py: 1e-6, 1e-5, 3e-5, 5e-5, 1e-4) that keeps every point within 1e-6, the rule of --jitcdde-strict-rtol; 0 skips it")
    parser.add_argument("--max-pieces-per-delay", type=int, default=256, help="finest chebyshev resolution (pieces per RTT) the refinement may use")
    parser.add_argument("--batch-chunk", type=int, default=DEFAULT_BATCH_CHUNK, help="fluidcc points integrated together")
    parser.add_argument("--skip-rtts", type=int, default=5, help="errors are measured on save points t >= skip_rtts * T")
    parser.add_argument("--jitcdde-rtol", type=float, default=1e-8, help="jitcdde rtol of the like-for-like accuracy runs")
    parser.add_argument("--jitcdde-atol", type=float, default=1e-12, help="jitcdde atol of the like-for-like accuracy runs (packets, or log packets in log coordinates)")
    parser.add_argument("--jitcdde-shift-ratio", type=float, default=1e-8, help="adjust_diff shift ratio of the like-for-like runs (the jump width is this times 1 s)")
    parser.add_argument("--jitcdde-strict-rtol", type=float, default=3e-10, help="jitcdde rtol of the strict run (eq. 14 as written), the loosest measured (1e-8, 1e-9, 5e-10, 3e-10, 1e-10) that keeps every point within 1e-6")
    parser.add_argument("--jitcdde-strict-atol", type=float, default=1e-14, help="jitcdde atol of the strict run")
    parser.add_argument("--no-jitcdde-strict", action="store_true", help="skip the strict jitcdde run")
    parser.add_argument("--jitcdde-point-timeout", type=float, default=60.0, help="seconds after which a jitcdde point is abandoned and counted as a failure")
    parser.add_argument("--reference-workers", type=int, default=os.cpu_count() or 1, help="processes running the SciPy reference (it runs alone, after the timed solvers)")
    parser.add_argument("--no-jitcdde-tight", action="store_true", help="skip the like-for-like jitcdde runs at tight tolerances")
    parser.add_argument("--repeats", type=int, default=3, help="times each timed run (fluidcc and jitcdde alike) is repeated in a row; the best of them is the steady-state figure")
    parser.add_argument("--out", default=None, help="path of the JSON file with every figure (optional)")
    args = parser.parse_args(argv)
    for name in ("points", "rtts", "steps_per_delay", "batch_chunk", "max_pieces_per_delay", "repeats"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be >= 1, got {getattr(args, name)}")
    for name in ("jitcdde_points", "reference_points", "skip_rtts"):
        if getattr(args, name) < 0:
            parser.error(f"--{name.replace('_', '-')} must be >= 0, got {getattr(args, name)}")
    for name in ("nodes", "rtol_nodes"):
        if getattr(args, name) < 4:
            parser.error(f"--{name.replace('_', '-')} must be >= 4, got {getattr(args, name)}")
    if not (np.isfinite(args.loose_rtol) and args.loose_rtol >= 0):
        parser.error(f"--loose-rtol must be a tolerance > 0, or 0 to skip the run, got {args.loose_rtol}")
    if args.skip_rtts > args.rtts:
        parser.error(f"--skip-rtts ({args.skip_rtts}) must not exceed --rtts ({args.rtts})")
    return args


def log(message: str) -> None:
    stamp = _dt.datetime.now().strftime("%H:%M:%S")
    print(f"[{stamp}] {message}", file=sys.stderr, flush=True)


# ------------------------------------------------------------------------------------------------
# fluidcc


def timed_solve(clock: CompileClock, params, t_final, grid, method="rk4", **kwargs):
    with clock, np.errstate(over="ignore"):
        sol, wall = timed(lambda: solve(MIAIMDAggregate(), params, t_final, grid, method=method, **kwargs))
    return sol, wall, clock.seconds, clock.backend_compiles


def repeated_solve(clock: CompileClock, repeats: int, params, t_final, grid, method="rk4", **kwargs):
    """timed_solve, then repeats - 1 more identical calls (every kernel then in memory). Returns the
    first call's solution, wall and compile figures, the later calls' walls and whether every
    call returned the same saves, bit for bit."""
    sol, wall, seconds, count = timed_solve(clock, params, t_final, grid, method=method, **kwargs)
    again = repeat(lambda: timed_solve(clock, params, t_final, grid, method=method, **kwargs)[0].ys,
                   repeats - 1, same_as=sol.ys)
    return sol, wall, seconds, count, again.walls, again.identical


def status_counts(status: np.ndarray) -> dict[str, int]:
    counts = Counter(int(s) for s in np.asarray(status))
    return {Status(code).name.lower(): int(counts[code]) for code in sorted(counts)}


def timing(size: int, wall: float, compile_s: float, compiles: int, solution, warm=(), identical=True) -> dict:
    """A timed fluidcc run's figures: the first call's wall time with and without the compilation
    during it; the repeated calls' walls; the best of all (the first without its compilation)."""
    best = min([wall - compile_s, *warm])
    return {
        "wall_s": wall,
        "compile_s_during_run": compile_s,
        "kernels_compiled_during_run": compiles,
        "wall_s_excluding_compile": wall - compile_s,
        "trajectories_per_s": size / (wall - compile_s),
        "trajectories_per_s_including_compile": size / wall,
        "repeated_walls_s": list(warm),
        "repeats_identical": identical,
        "best_wall_s": best,
        "trajectories_per_s_best": size / best,
        "status": status_counts(solution.status),
    }


def run_fluidcc(args, points, grid, t_final) -> tuple[dict, dict]:
    size = len(t_final)
    chunk = min(args.batch_chunk, size)
    clock = CompileClock()
    params = params_of(points)
    report: dict = {"batch_chunk": chunk, "points": size}

    # Warm-up: one chunk, at the fixed resolution and at half of it (the coarse pass of the
    # refinement), so the fixed-step run below reuses compiled kernels.
    warm = np.arange(chunk)
    warm_params = params_of(points, warm)
    compile_s, compile_wall, compiles = 0.0, 0.0, 0
    for steps in sorted({args.steps_per_delay, max(2, args.steps_per_delay // 2)}):
        _, wall, seconds, count = timed_solve(
            clock, warm_params, t_final[warm], grid[warm], steps_per_delay=steps, batch_chunk=chunk
        )
        compile_s, compile_wall, compiles = compile_s + seconds, compile_wall + wall, compiles + count
    report["warmup"] = {"points": chunk, "wall_s": compile_wall, "compile_s": compile_s, "kernels_compiled": compiles}
    log(f"fluidcc warm-up: {compile_wall:.1f} s wall, {compile_s:.1f} s compiling ({compiles} XLA compiles)")

    fixed, wall, seconds, count, warm_walls, same = repeated_solve(
        clock, args.repeats, params, t_final, grid, steps_per_delay=args.steps_per_delay, batch_chunk=chunk
    )
    # chunks whose save layout differs from the warm-up chunk's compile their own kernel
    report["fixed"] = {"steps_per_delay": args.steps_per_delay,
                       **timing(size, wall, seconds, count, fixed, warm_walls, same)}
    log(f"fluidcc fixed-step: {wall:.1f} s wall of which {seconds:.1f} s compiling ({count} XLA compiles), "
        f"{size / (wall - seconds):.0f} trajectories/s excluding compilation, best of {args.repeats} "
        f"{report['fixed']['trajectories_per_s_best']:.0f} ({fixed.summary()})")

    refined, wall, seconds, count, warm_walls, same = repeated_solve(
        clock, args.repeats, params, t_final, grid, steps_per_delay=args.steps_per_delay, rtol=args.rtol,
        max_steps_per_delay=args.max_steps_per_delay, batch_chunk=chunk,
    )
    levels, counts = np.unique(refined.steps_per_delay, return_counts=True)
    report["rtol"] = {
        "rtol": args.rtol,
        "max_steps_per_delay": args.max_steps_per_delay,
        **timing(size, wall, seconds, count, refined, warm_walls, same),
        "steps_per_delay_used": {int(l): int(c) for l, c in zip(levels, counts)},
    }
    log(f"fluidcc rtol={args.rtol:g}: {wall:.1f} s wall of which {seconds:.1f} s compiling ({count} XLA "
        f"compiles), {size / (wall - seconds):.0f} trajectories/s excluding compilation, best of {args.repeats} "
        f"{report['rtol']['trajectories_per_s_best']:.0f} ({refined.summary()})")
    windows = {"fixed": fixed.ys[..., 0], "rtol": refined.ys[..., 0]}
    statuses = {"fixed": np.asarray(fixed.status), "rtol": np.asarray(refined.status)}

    # The exponential Chebyshev method of steps: one fixed resolution, then refined to rtol. The
    # warm-up runs the refinement on one chunk, which compiles the kernels of the first levels;
    # kernels of finer levels compile during the timed run and are subtracted like above.
    _, wall, seconds, count = timed_solve(clock, warm_params, t_final[warm], grid[warm], method="chebyshev",
                                          nodes=args.nodes, batch_chunk=chunk)
    _, wall_r, seconds_r, count_r = timed_solve(clock, warm_params, t_final[warm], grid[warm], method="chebyshev",
                                                nodes=args.rtol_nodes, rtol=args.rtol, batch_chunk=chunk)
    report["chebyshev_warmup"] = {"points": chunk, "wall_s": wall + wall_r, "compile_s": seconds + seconds_r,
                                  "kernels_compiled": count + count_r}
    runs = [("cheb_fixed", None, args.nodes), ("cheb_rtol", args.rtol, args.rtol_nodes)]
    if args.loose_rtol:
        runs.append(("cheb_loose", args.loose_rtol, args.rtol_nodes))
    for key, rtol, nodes in runs:
        sol, wall, seconds, count, warm_walls, same = repeated_solve(
            clock, args.repeats, params, t_final, grid, method="chebyshev", nodes=nodes, rtol=rtol,
            max_pieces_per_delay=args.max_pieces_per_delay, batch_chunk=chunk)
        used = [f"{m}x{n}" for m, n in zip(sol.info["pieces_per_delay"], sol.info["nodes"])]
        report[key] = {
            "nodes": nodes,
            "rtol": rtol,
            **timing(size, wall, seconds, count, sol, warm_walls, same),
            "pieces_x_nodes_used": dict(sorted(Counter(used).items())),
        }
        log(f"fluidcc chebyshev rtol={rtol}: {wall:.1f} s wall of which {seconds:.1f} s compiling ({count} XLA "
            f"compiles), {size / (wall - seconds):.0f} trajectories/s excluding compilation, best of "
            f"{args.repeats} {report[key]['trajectories_per_s_best']:.0f} ({sol.summary()})")
        windows[key] = sol.ys[..., 0]
        statuses[key] = np.asarray(sol.status)
    return report, {"windows": windows, "status": statuses}


# ------------------------------------------------------------------------------------------------
# jitcdde


def run_jitcdde(args, points, index, grid) -> tuple[dict, dict]:
    if len(index) == 0:
        return {"skipped": "--jitcdde-points 0"}, {}
    try:
        import jitcdde as _jitcdde_module
    except ImportError as error:
        return {"skipped": f"jitcdde not importable: {error}"}, {}
    report: dict = {"version": getattr(_jitcdde_module, "__version__", "unknown"), "points": len(index)}
    windows = {}
    configs = [("natural", "default"), ("log", "default")]
    if not args.no_jitcdde_tight:
        configs += [("natural", "tight"), ("log", "tight")]
    if not args.no_jitcdde_strict:
        configs += [("natural", "strict")]
    compiled = {}
    for coordinates in ("natural", "log"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compiled[coordinates], report[f"compile_s_{coordinates}"] = timed(lambda: build_jitcdde(coordinates))
    for coordinates, tolerance in configs:
        name = f"{coordinates}/{tolerance}"
        tight = tolerance != "default"  # jitcdde's defaults: rtol 1e-5, atol 1e-10
        tolerances = {"default": (1e-5, 1e-10), "tight": (args.jitcdde_rtol, args.jitcdde_atol),
                      "strict": (args.jitcdde_strict_rtol, args.jitcdde_strict_atol)}[tolerance]

        def run():
            return run_jitcdde_config(compiled[coordinates], coordinates, points, index, grid,
                                      tolerances if tight else None, args.jitcdde_shift_ratio if tight else None,
                                      args.jitcdde_point_timeout)

        with warnings.catch_warnings():
            # jitcdde warns when a save time lies inside its last step (it then interpolates) and
            # about the discontinuity handling chosen here on purpose.
            warnings.simplefilter("ignore")
            (w, failures), wall = timed(run)
            again = repeat(lambda: run()[0], args.repeats - 1, same_as=w)
        repeated, identical = again.walls, again.identical
        best = min([wall, *repeated])
        windows[name] = w
        report[name] = {
            "coordinates": coordinates,
            "rtol": tolerances[0],
            "atol": tolerances[1],
            "adjust_diff_shift_ratio": args.jitcdde_shift_ratio if tight else 1e-4,
            "wall_s": wall,
            "trajectories_per_s": len(index) / wall,
            "repeated_walls_s": repeated,
            "repeats_identical": identical,
            "best_wall_s": best,
            "trajectories_per_s_best": len(index) / best,
            "exceptions": failures,
            "points_with_nonfinite_windows": int(np.sum(~np.all(np.isfinite(w), axis=1))),
        }
        log(f"jitcdde {name}: {wall:.1f} s, {len(index) / wall:.0f} trajectories/s, best of {args.repeats} "
            f"{report[name]['trajectories_per_s_best']:.0f}, exceptions {failures or 0}")
    return report, windows


# ------------------------------------------------------------------------------------------------
# reference and accuracy


def run_reference(args, points, index, grid, t_final) -> tuple[dict, np.ndarray, np.ndarray]:
    """The SciPy reference on the points `index`, one point at a time, spread over worker processes
    (it is not a competitor: only its answers are used, its speed is given for information)."""
    workers = max(1, min(args.reference_workers, len(index)))
    (windows, status, messages), wall = timed(lambda: scipy_reference(points, index, grid, t_final, workers))
    report = {
        "points": len(index),
        "worker_processes": workers,
        "wall_s": wall,
        "trajectories_per_s": len(index) / wall,
        "status": status_counts(status),
    }
    failed = [m for m, s in zip(messages, status) if s == Status.SOLVER_FAILED]
    if failed:
        report["first_solver_failure"] = failed[0][:500]
    log(f"reference: {wall:.1f} s with {workers} process(es), {len(index) / wall:.2f} trajectories/s "
        f"({', '.join(f'{k}: {v}' for k, v in report['status'].items())})")
    return report, windows, status


def error_stats(windows, ref, usable, first) -> dict:
    """max |w / w_ref - 1| per usable point over save points >= first, summarised."""
    if not np.any(usable):
        return {"points": 0}
    errors = largest_relative_error(windows[usable], ref[usable], first)  # a non-finite value is an error
    return {
        "points": int(usable.sum()),
        "max": float(errors.max()),
        "p99": float(np.percentile(errors, 99)),
        "median": float(np.median(errors)),
        "above_1e-6": int(np.sum(errors > ERROR_THRESHOLD)),
        "per_point": errors,
    }


def finiteness_mismatches(windows, ref, compared, solver_ok=None) -> dict:
    """Points (among `compared`) with a save point where exactly one of solver and reference is
    finite. With the solver's per-point `solver_ok`, the mismatches on points it reported ok are
    wrong numbers; on points it flagged (overflow, ...) they are failures reported as a status."""
    solver_finite = np.isfinite(windows)
    ref_finite = np.isfinite(ref)
    finite_not = compared & np.any(solver_finite & ~ref_finite, axis=1)
    nonfinite_not = compared & np.any(~solver_finite & ref_finite, axis=1)
    counts = {
        "finite_where_reference_not": int(np.sum(finite_not)),
        "nonfinite_where_reference_finite": int(np.sum(nonfinite_not)),
    }
    if solver_ok is None:
        counts["wrong_numbers"] = int(np.sum(finite_not | nonfinite_not))
    else:
        counts["wrong_numbers"] = int(np.sum((finite_not | nonfinite_not) & solver_ok))
        counts["mismatches_flagged_by_status"] = int(np.sum((finite_not | nonfinite_not) & ~solver_ok))
    return counts


def accuracy(args, fluidcc_out, jitcdde_windows, ref_index, jit_index, ref_windows, ref_status) -> dict:
    first = args.skip_rtts
    ref_usable = np.all(np.isfinite(ref_windows[:, first:]), axis=1)
    ref_ran = ref_status != Status.SOLVER_FAILED  # the reference itself failing says nothing of a solver
    report: dict = {
        "save_points_from": f"t >= {first} T",
        "reference_finite_points": int(ref_usable.sum()),
        "reference_solver_failures": int(np.sum(~ref_ran)),
    }
    for run in fluidcc_out["windows"]:
        windows = fluidcc_out["windows"][run][ref_index]
        status = fluidcc_out["status"][run][ref_index]
        usable = ref_usable & (status == Status.OK)
        stats = error_stats(windows, ref_windows, usable, first)
        stats.update(finiteness_mismatches(windows, ref_windows, ref_ran, status == Status.OK))
        stats["status_ok_but_nonfinite"] = int(np.sum((status == Status.OK) & ~np.all(np.isfinite(windows), axis=1)))
        pairs = Counter(
            f"{Status(int(a)).name.lower()}/{Status(int(b)).name.lower()}" for a, b in zip(status, ref_status)
        )
        stats["status_fluidcc_vs_reference"] = dict(sorted(pairs.items()))
        report[f"fluidcc_{run}"] = stats
    # jitcdde: its points are a subset of the reference ones (when not more numerous)
    position = {int(i): k for k, i in enumerate(ref_index)}
    rows = np.array([position.get(int(i), -1) for i in jit_index], dtype=int)
    inside = rows >= 0
    for name, windows in jitcdde_windows.items():
        w = windows[inside]
        ref_w, usable_ref, ran = ref_windows[rows[inside]], ref_usable[rows[inside]], ref_ran[rows[inside]]
        ok = np.all(np.isfinite(w[:, first:]), axis=1)
        stats = error_stats(w, ref_w, usable_ref & ok, first)
        stats["points_not_finite_where_reference_finite"] = int(np.sum(usable_ref & ~ok))
        stats.update(finiteness_mismatches(w, ref_w, ran))
        report[f"jitcdde_{name}"] = stats
    # fluidcc on exactly the jitcdde points, for a like-for-like comparison on the same subset
    for run in fluidcc_out["windows"]:
        windows = fluidcc_out["windows"][run][jit_index[inside]]
        status = fluidcc_out["status"][run][jit_index[inside]]
        ref_w, usable_ref = ref_windows[rows[inside]], ref_usable[rows[inside]]
        report[f"fluidcc_{run}_on_jitcdde_points"] = error_stats(windows, ref_w, usable_ref & (status == Status.OK), first)
    return report


# ------------------------------------------------------------------------------------------------
# output


def print_table(results: dict) -> None:
    fl, jit, ref, acc = results["fluidcc"], results["jitcdde"], results["reference"], results["accuracy"]
    machine = results["machine"]
    print(f"\nMIAIMD eq. (14), {fl['points']} points x {results['config']['rtts']} RTTs, seed {results['config']['seed']}; "
          f"{machine['cpu_count']} CPUs ({machine.get('cpu_model', machine['processor'])}), jax {machine['jax']} "
          f"{len(machine['jax_devices'])} device(s); load average {machine['load_average_1_5_15_min_at_start'][0]:.2f} "
          f"at start, {machine['load_average_1_5_15_min_at_end'][0]:.2f} at end")
    print(f"fluidcc compilation (JAX persistent cache: {machine['jax_compilation_cache_dir'] or 'off'}): warm-up on "
          f"{fl['warmup']['points']} points {fl['warmup']['compile_s']:.1f} s of {fl['warmup']['wall_s']:.1f} s wall; "
          f"during the fixed-step run {fl['fixed']['compile_s_during_run']:.1f} s "
          f"({fl['fixed']['kernels_compiled_during_run']} kernels), during the rtol run "
          f"{fl['rtol']['compile_s_during_run']:.1f} s ({fl['rtol']['kernels_compiled_during_run']} kernels); "
          f"excluded from the fluidcc wall times below")
    table = Table("{:<26}{:>7}{:>9}{:>10}{:>10}  {:>9}{:>9}{:>9}{:>10}{:>7}  {}", "solver", "points", "wall s",
                  "traj/s", "best/s", "err max", "err p99", "err med", ">1e-6", "wrong#", "status", rule="-")
    print(table.header())

    def row(name, points, wall, rate, stats, status, best=None):
        stats = stats or {}
        n = stats.get("points")
        print(table.row(name, points, cell(wall, ".1f"), cell(rate, ".0f"), cell(best, ".0f"), cell(stats.get("max")),
                        cell(stats.get("p99")), cell(stats.get("median")), f"{stats['above_1e-6']}/{n}" if n else "-",
                        cell(stats.get("wrong_numbers"), "d"), status))

    row(f"fluidcc rk4 M={fl['fixed']['steps_per_delay']}", fl["points"], fl["fixed"]["wall_s_excluding_compile"],
        fl["fixed"]["trajectories_per_s"], acc.get("fluidcc_fixed"), fl["fixed"]["status"],
        fl["fixed"]["trajectories_per_s_best"])
    row(f"fluidcc rk4 rtol={fl['rtol']['rtol']:g}", fl["points"], fl["rtol"]["wall_s_excluding_compile"],
        fl["rtol"]["trajectories_per_s"], acc.get("fluidcc_rtol"), fl["rtol"]["status"],
        fl["rtol"]["trajectories_per_s_best"])
    for key in CHEBYSHEV_RUNS:
        if key in fl:
            label = (f"chebyshev 1x{fl[key]['nodes']}" if fl[key]["rtol"] is None else
                     f"chebyshev rtol={fl[key]['rtol']:g} from 1x{fl[key]['nodes']}")
            row(f"fluidcc {label}", fl["points"], fl[key]["wall_s_excluding_compile"], fl[key]["trajectories_per_s"],
                acc.get(f"fluidcc_{key}"), fl[key]["status"], fl[key]["trajectories_per_s_best"])
    for name, value in jit.items():
        if isinstance(value, dict) and "wall_s" in value:
            row(f"jitcdde {name}", jit["points"], value["wall_s"], value["trajectories_per_s"],
                acc.get(f"jitcdde_{name}"),
                f"exceptions {value['exceptions'] or 0}, non-finite points {value['points_with_nonfinite_windows']}",
                value["trajectories_per_s_best"])
    if "wall_s" in ref:
        row(f"scipy reference x{ref['worker_processes']} proc", ref["points"], ref["wall_s"], ref["trajectories_per_s"], None, ref["status"])
    print(f"errors: max |w/w_ref - 1| over t >= {results['config']['skip_rtts']} T on points with a finite reference "
          f"and fluidcc status ok (jitcdde: finite output); wrong# = points with a save time where exactly one of "
          f"solver and reference is finite, among points fluidcc reported ok (jitcdde: among all points)")
    for key in ("fixed", "rtol", *CHEBYSHEV_RUNS):
        stats = acc.get(f"fluidcc_{key}", {})
        if stats.get("mismatches_flagged_by_status"):
            print(f"fluidcc {key}: {stats['mismatches_flagged_by_status']} point(s) flagged by a status differ from the "
                  f"reference in where the window is finite (statuses fluidcc/reference: {stats['status_fluidcc_vs_reference']})")
    for key in ("fixed", "rtol", *CHEBYSHEV_RUNS):
        sub = acc.get(f"fluidcc_{key}_on_jitcdde_points")
        if sub and sub.get("points"):
            print(f"fluidcc {key} on the jitcdde points only: max {cell(sub['max'])}, p99 {cell(sub['p99'])}, "
                  f"median {cell(sub['median'])}, >1e-6: {sub['above_1e-6']}/{sub['points']}")
    repeated = {f"fluidcc {k}": v for k, v in fl.items() if isinstance(v, dict) and "repeats_identical" in v}
    repeated.update({f"jitcdde {k}": v for k, v in jit.items() if isinstance(v, dict) and "repeats_identical" in v})
    differing = [name for name, v in repeated.items() if not v["repeats_identical"]]
    print(f"repeats ({results['config']['repeats']} per run) returned the same numbers bit for bit: "
          + ("all" if not differing else f"all but {', '.join(differing)}"))
    for name, ratio in results["speedup"].items():
        headline = "  (headline)" if name == "fluidcc fixed / jitcdde natural/default" else ""
        print(f"speed-up {name}: {ratio:.2f}x{headline}")


# ------------------------------------------------------------------------------------------------


def main(argv=None) -> dict:
    args = parse_args(argv)
    started = time.perf_counter()
    load_at_start = list(os.getloadavg())
    points = draw_points(args.points, args.seed)
    grid = save_grid(points["rtt_s"], args.rtts)
    t_final = args.rtts * points["rtt_s"]
    ref_index, jit_index = subsamples(args.points, args.reference_points, args.jitcdde_points, args.seed)
    if len(jit_index) and not np.all(np.isin(jit_index, ref_index)):
        log("warning: more jitcdde points than reference points; jitcdde accuracy uses the common points only")

    fluidcc_report, fluidcc_out = run_fluidcc(args, points, grid, t_final)
    jitcdde_report, jitcdde_windows = run_jitcdde(args, points, jit_index, grid)
    if len(ref_index):
        reference_report, ref_windows, ref_status = run_reference(args, points, ref_index, grid, t_final)
        accuracy_report = accuracy(args, fluidcc_out, jitcdde_windows, ref_index, jit_index, ref_windows, ref_status)
    else:
        reference_report, accuracy_report = {"skipped": "--reference-points 0"}, {}

    speedup = {}
    for name in ("natural/default", "log/default", "natural/tight", "log/tight", "natural/strict"):
        if name in jitcdde_report:
            rate = jitcdde_report[name]["trajectories_per_s"]
            speedup[f"fluidcc fixed / jitcdde {name}"] = fluidcc_report["fixed"]["trajectories_per_s"] / rate
            speedup[f"fluidcc rtol / jitcdde {name}"] = fluidcc_report["rtol"]["trajectories_per_s"] / rate
            for key in CHEBYSHEV_RUNS:
                if key not in fluidcc_report:
                    continue
                speedup[f"fluidcc {key} / jitcdde {name}"] = fluidcc_report[key]["trajectories_per_s"] / rate
            best = jitcdde_report[name]["trajectories_per_s_best"]
            for key in ("fixed", "rtol", *CHEBYSHEV_RUNS):
                if key not in fluidcc_report:
                    continue
                speedup[f"best of {args.repeats}: fluidcc {key} / jitcdde {name}"] = (
                    fluidcc_report[key]["trajectories_per_s_best"] / best)

    machine = machine_info()
    machine["load_average_1_5_15_min_at_end"] = list(os.getloadavg())
    machine["load_average_1_5_15_min_at_start"] = load_at_start
    results = {
        "benchmark": "dde_throughput",
        "model": "MIAIMD aggregate, VCP paper eq. (14); history w = N on [-T, 0]",
        "date_utc": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "command": " ".join([os.path.basename(sys.executable)] + sys.argv),
        "config": {**vars(args), "ranges_log_uniform": RANGES, "alpha": ALPHA, "gamma": GAMMA},
        "machine": machine,
        "fluidcc": fluidcc_report,
        "jitcdde": jitcdde_report,
        "reference": reference_report,
        "accuracy": accuracy_report,
        "speedup": speedup,
        "subsamples": {"reference": ref_index, "jitcdde": jit_index},
        "total_wall_s": time.perf_counter() - started,
    }
    print_table(results)
    print(f"total wall time {results['total_wall_s']:.0f} s")
    write_json(args.out, results, announce=True)
    return results


if __name__ == "__main__":
    main()
