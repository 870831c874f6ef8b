"""Speed of a linear stability map: a 200 x 200 grid of a model's gain plane.

Each grid point is linearized at its equilibrium (automatic differentiation of the model's vector
field) and its rightmost characteristic roots are computed by Chebyshev collocation + Newton
(`fluidcc.stability.linear`, guarantee_from = 0: the verdict is guaranteed). The map is timed
--repeats times after one warm-up call (which compiles the jitted linearization); the figure is
the best and the median wall time. For MIAIMD (a scalar equation) the rightmost roots are checked
against the Lambert-W closed form on every point.

Run from the repository root, e.g.

    PYTHONPATH=src python benchmarks/linear_map.py --model miaimd
    PYTHONPATH=src python benchmarks/linear_map.py --model xcp
"""

from __future__ import annotations

import argparse

import numpy as np

from fluidcc.protocols import get_protocol, names, single_link_model
from fluidcc.stability.linear import lambert_w_roots
from fluidcc.stability.linearize import linear_roots
from fluidcc.sweep import SweepSpec, linear_map, parse_grid

from _harness import cpus, repeat


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="miaimd", choices=sorted(n for n in names('single_link') if get_protocol(n).stability_plane))
    parser.add_argument("--points", type=int, default=200, help="grid points per axis")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()

    texts = []
    for text in get_protocol(args.model).stability_plane:
        name, _, rest = text.partition("=")
        parts = rest.split(":")
        parts[2] = str(args.points)
        texts.append(f"{name}={':'.join(parts)}")
    spec = SweepSpec(model=args.model, axes=tuple(parse_grid(args.model, t) for t in texts))
    # the warm-up call compiles the linearization for this batch shape
    run = repeat(lambda: linear_map(spec), args.repeats, warmup=1)
    result, best, median = run.result, run.best, run.median
    print(f"{args.model}: grid {' x '.join(texts)} = {spec.size} points; {cpus()}")
    print(f"linear map wall time: best {best:.2f} s, median {median:.2f} s over {args.repeats} runs "
          f"-> {spec.size / best:,.0f} points/s (best), {spec.size / median:,.0f} points/s (median)")
    print(f"resolved {int(result['converged'].sum())}/{spec.size}; stable {int(result['stable'].sum())}; "
          f"Chebyshev nodes used: {dict(zip(*np.unique(result['nodes'], return_counts=True)))}")
    if args.model == "miaimd":
        entry = single_link_model(args.model)
        system, params = entry.aggregate(spec.values())
        lin, roots = linear_roots(system, params)
        exact = lambert_w_roots(lin.a0[:, 0, 0], lin.a_delayed[:, 0, 0, 0], lin.delays[:, 0], branches=[0])[:, 0]
        error = np.abs(roots.rightmost.real - exact.real) / (1 + np.abs(exact))
        print(f"rightmost root vs Lambert W (principal branch), full guarantee: max relative error {error.max():.2e}")


if __name__ == "__main__":
    main()
