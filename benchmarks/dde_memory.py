"""Memory of fluidcc's DDE engine as the batch grows to 10^6 points: the chunks keep it bounded.

The points are those of `dde_throughput.py` (eq. (14) of the VCP paper at random kappa, T, C, N,
alpha = 1, gamma = 0.98). Each configuration runs in a fresh Python process, which

1. builds the parameter batch and the save grid,
2. solves a warm-up batch as wide as one round of full chunks (every device gets a chunk of the
   full width), so the kernels the big run uses are compiled and their compile-time memory is in
   the baseline,
3. reads the process's peak resident memory so far (VmHWM, the baseline), solves the whole batch
   and reads the peak again.

The growth of the peak during the solve, less the memory the `Solution` must hold anyway (saves,
save times unless they are the caller's own array, error estimates, statuses, messages: reported
as "output"), is the engine's working memory. Bounded memory
means that working memory stays the same from 10^4 to 10^6 points while the output grows with
the batch.

Run from the repository root, e.g.

    PYTHONPATH=src python benchmarks/dde_memory.py --out dde_memory.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time

import numpy as np

CONFIGS = {
    # name: (method, keyword arguments of solve, RTTs integrated, saves: "final" or "per-rtt")
    "chebyshev 1x16": ("chebyshev", {"nodes": 16}, 250, "final"),
    "chebyshev rtol 1e-6": ("chebyshev", {"nodes": 8, "rtol": 1e-6}, 250, "final"),
    "rk4 M=32": ("rk4", {"steps_per_delay": 32}, 50, "final"),
    "chebyshev 1x16 saved every 10 RTTs": ("chebyshev", {"nodes": 16}, 250, "per-10-rtts"),
}


def _peak_bytes() -> int:
    """The process's peak resident memory so far (VmHWM), bytes."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmHWM in /proc/self/status (this benchmark needs Linux)")


def worker(name: str, size: int, seed: int) -> dict:
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import jax

    import dde_throughput as points_of
    from fluidcc.dde import solve
    from fluidcc.dde._solve import take
    from fluidcc.models import MIAIMDAggregate

    method, kwargs, rtts, saves = CONFIGS[name]
    points = points_of.draw_points(size, seed)
    params = points_of.params_of(points)
    t_final = rtts * points["rtt_s"]
    if saves == "final":
        grid = None
    else:
        grid = points["rtt_s"][:, None] * np.arange(0, rtts + 1, 10)[None, :]
    system = MIAIMDAggregate()

    warm = np.arange(min(size, 2 * 1024 * len(jax.local_devices())))
    solve(system, take(params, warm), t_final[warm], None if grid is None else grid[warm], method=method, **kwargs)
    baseline = _peak_bytes()
    started = time.perf_counter()
    solution = solve(system, params, t_final, grid, method=method, **kwargs)
    wall = time.perf_counter() - started
    peak = _peak_bytes()
    held = (solution.ys, solution.ts, solution.status, solution.messages, solution.steps_per_delay,
            solution.error_estimate, *solution.info.values())
    # the save times are the caller's own grid when given per point (no copy): not counted again
    output = sum(a.nbytes for a in held if isinstance(a, np.ndarray) and not (grid is not None
                                                                              and np.shares_memory(a, grid)))
    output += sum(len(m) for m in solution.messages if isinstance(m, str))  # object arrays hold pointers
    return {"config": name, "points": size, "wall_s": wall, "baseline_bytes": baseline, "peak_bytes": peak,
            "growth_bytes": peak - baseline, "output_bytes": output,
            "working_bytes": peak - baseline - output,
            "statuses": {str(k): int(v) for k, v in zip(*np.unique(np.asarray(solution.status), return_counts=True))}}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10000,100000,1000000", help="batch sizes, comma-separated")
    parser.add_argument("--configs", default=",".join(CONFIGS), help="configurations, comma-separated: "
                        + "; ".join(CONFIGS))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=None, help="write the results as JSON here")
    parser.add_argument("--worker", nargs=2, metavar=("CONFIG", "SIZE"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(args.worker[0], int(args.worker[1]), args.seed)))
        return

    names = [n.strip() for n in args.configs.split(",") if n.strip()]
    for name in names:
        if name not in CONFIGS:
            parser.error(f"--configs: unknown configuration {name!r}; allowed: {', '.join(CONFIGS)}")
    sizes = [int(s) for s in args.sizes.split(",")]
    results = []
    print(f"{platform.node()} {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs")
    print(f"{'configuration':<38} {'points':>9} {'wall s':>7} {'baseline MB':>11} {'growth MB':>9} "
          f"{'output MB':>9} {'working MB':>10}")
    for name in names:
        for size in sizes:
            done = subprocess.run([sys.executable, os.path.abspath(__file__), "--seed", str(args.seed),
                                   "--worker", name, str(size)], capture_output=True, text=True, check=True)
            row = json.loads(done.stdout.strip().splitlines()[-1])
            results.append(row)
            mb = 1 / 2**20
            print(f"{name:<38} {size:>9} {row['wall_s']:>7.1f} {row['baseline_bytes'] * mb:>11.0f} "
                  f"{row['growth_bytes'] * mb:>9.0f} {row['output_bytes'] * mb:>9.0f} "
                  f"{row['working_bytes'] * mb:>10.0f}", flush=True)
    if args.out:
        with open(args.out, "w") as handle:
            json.dump({"machine": {"node": platform.node(), "cpus": os.cpu_count()}, "results": results}, handle,
                      indent=1)


if __name__ == "__main__":
    main()
