"""Speed of max-min fairness: one 1000-flow, 50-link network, and 10 000 capacity vectors on it.

The network is `fluidcc.scenarios.random_network(50, 1000, seed=SEED)`: capacities uniform in
10..1000 Mb/s, each flow over 1 to 6 distinct random links, weight 1, no demands. Timed:

* `maxmin(network)` in float64 (NumPy), the whole call (arrays, filling, bottlenecks, result):
  median and best of --repeats calls after one warm-up. Target: <= 50 ms.
* `maxmin(network, exact=True)` (Fractions) and a plain-Python water-filling (lists and loops, in
  this file) for context, with their largest difference from the float64 rates.
* `maxmin_batch(network, capacities)` on --batch capacity vectors (uniform 10..1000 Mb/s per link,
  seeded): the first call (which compiles the JAX kernel; the persistent compilation cache is
  turned off for this script so the compile is always counted) and the steady state, median of
  --repeats later calls. Target: steady state <= 2 s. Agreement: largest relative difference from
  `maxmin` on 50 of the vectors. Also timed, for context: the same batch with non-integer weights
  (the weight sums then run in float64 instead of float32).

The script exits with status 1 when a target is missed. Run from the repository root:

    PYTHONPATH=src python benchmarks/maxmin_speed.py
"""

from __future__ import annotations

import os

os.environ.setdefault("FLUIDCC_JAX_CACHE", "")  # count the compile in the first call

import argparse  # noqa: E402
import sys  # noqa: E402

import numpy as np  # noqa: E402

from fluidcc.maxmin import maxmin, maxmin_batch  # noqa: E402
from fluidcc.scenarios import random_network  # noqa: E402
from fluidcc.units import mbps_to_pps  # noqa: E402

from _harness import Table, cpus, repeat  # noqa: E402

FLOAT_TARGET_S = 0.050
BATCH_TARGET_S = 2.0


def plain_python_maxmin(capacities, routes, weights):
    """Weighted water-filling with lists and loops over flows: the obvious implementation."""
    n_links = len(capacities)
    rates = [0.0] * len(routes)
    frozen = [False] * len(routes)
    room = list(capacities)  # capacity minus the load of frozen flows
    level = 0.0
    while not all(frozen):
        weight_sum = [0.0] * n_links
        for i, route in enumerate(routes):
            if not frozen[i]:
                for l in route:
                    weight_sum[l] += weights[i]
        level = max(level, min(room[l] / weight_sum[l] for l in range(n_links) if weight_sum[l] > 0))
        saturated = {l for l in range(n_links) if weight_sum[l] > 0 and room[l] / weight_sum[l] <= level * (1 + 1e-12)}
        for i, route in enumerate(routes):
            if not frozen[i] and any(l in saturated for l in route):
                frozen[i] = True
                rates[i] = weights[i] * level
                for l in route:
                    room[l] -= rates[i]
    return rates


def relative_difference(a, b) -> float:
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return float(np.max(np.abs(a - b) / np.abs(b)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--links", type=int, default=50)
    parser.add_argument("--flows", type=int, default=1000)
    parser.add_argument("--batch", type=int, default=10_000, help="capacity vectors in the JAX batch")
    parser.add_argument("--repeats", type=int, default=5, help="timed repetitions of the batch (float mode: 5x)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    network = random_network(args.links, args.flows, seed=args.seed)
    routes = [network.route_indices(i) for i in range(network.n_flows)]
    print(f"network: {args.links} links, {args.flows} flows, {sum(map(len, routes))} (flow, link) pairs, seed "
          f"{args.seed}; {cpus()}, load average at start {os.getloadavg()[0]:.2f}")

    rows = []
    run = repeat(lambda: maxmin(network), 5 * args.repeats, warmup=1)
    reference = run.result
    rows.append(("maxmin, float64 (NumPy)", "1 network", run, FLOAT_TARGET_S, 0.0))
    run = repeat(lambda: maxmin(network, exact=True), 3)
    rows.append(("maxmin, exact (Fraction)", "1 network", run, None,
                 relative_difference([float(r) for r in run.result.rates_pps], reference.rates_pps)))
    run = repeat(lambda: plain_python_maxmin(network.capacities_pps.tolist(), routes, network.weights.tolist()), 3)
    rows.append(("plain Python loops (this file)", "1 network", run, None,
                 relative_difference(run.result, reference.rates_pps)))

    rng = np.random.default_rng(args.seed)
    capacities = mbps_to_pps(rng.uniform(10.0, 1000.0, size=(args.batch, args.links)))
    check = rng.choice(args.batch, size=min(50, args.batch), replace=False)
    for label, weights in (("weights 1 (float32 sums)", None),
                           ("weights uniform 0.5..2 (float64 sums)", rng.uniform(0.5, 2.0, size=args.flows))):
        first = repeat(lambda: maxmin_batch(network, capacities, weights=weights), 1)
        steady = repeat(lambda: maxmin_batch(network, capacities, weights=weights), args.repeats)
        error = max(relative_difference(steady.result[b], maxmin(network, capacities_pps=capacities[b],
                                                                 weights=weights).rates_pps) for b in check)
        target = BATCH_TARGET_S if weights is None else None
        rows.append((f"maxmin_batch (JAX), {label}: first call, with compile", f"{args.batch} vectors", first, None,
                     error))
        rows.append((f"maxmin_batch (JAX), {label}: steady state", f"{args.batch} vectors", steady, target, error))

    table = Table.markdown("computation", "size", "median s:", "best s:", "target", "max rel. diff from float64:")
    print()
    print(table.header())
    missed = []
    for name, size, run, target, error in rows:
        median = run.median
        verdict = ""
        if target is not None:
            verdict = f"<= {target:g} s: {'met' if median <= target else 'MISSED'}"
            if median > target:
                missed.append(name)
        print(table.row(name, size, f"{median:.4g}", f"{run.best:.4g}", verdict, f"{error:.1e}"))
    if missed:
        print(f"\ntarget missed: {', '.join(missed)}")
        sys.exit(1)


if __name__ == "__main__":
    main()
