"""Linear against simulated stability maps on each model's plane: the agreement figures.

For every model, the default plane of `fluidcc stability` (at --points per axis) is mapped both
ways: characteristic roots of the linearization, and the nonlinear model integrated over
--horizon-rtts RTTs and classified (for RCP and QCP also their smooth form without the projection
of the queue at 0). Printed per model: the share of grid points whose linear verdict (stable)
equals the simulated one (converged or converging), over the points more than 2 % of the grid
away from the linear boundary — and, for projected models, also away from the points where the
projection changes the simulated verdict — together with the agreement of the linear map with the
smooth form and the share of points where the projection decides.

Run from the repository root, e.g.

    PYTHONPATH=src python benchmarks/stability_agreement.py --points 60 --out benchmarks/out/agreement
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from fluidcc.protocols import get_protocol
from fluidcc.plotting import stability_figure
from fluidcc.sweep import SweepSpec, analytic_boundary, parse_grid, run_stability

from _harness import timed, write_json


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default="xcp,rcp,qcp,miaimd")
    parser.add_argument("--points", type=int, default=60, help="grid points per axis")
    parser.add_argument("--horizon-rtts", type=float, default=250.0)
    parser.add_argument("--out", default="benchmarks/out/agreement")
    args = parser.parse_args()
    out = Path(args.out)
    summary = {}
    for model in args.models.split(","):
        texts = []
        for text in get_protocol(model).stability_plane:
            name, _, rest = text.partition("=")
            parts = rest.split(":")
            parts[2] = str(args.points)
            texts.append(f"{name}={':'.join(parts)}")
        spec = SweepSpec(model=model, axes=tuple(parse_grid(model, t) for t in texts),
                         horizon_rtts=args.horizon_rtts, rtol=1e-5, max_steps_per_delay=256)
        data, wall = timed(lambda: run_stability(spec, "both", out / model, command="benchmarks/stability_agreement.py"))
        stability_figure(data, out / model / "stability.png", curves=analytic_boundary(spec))
        keys = ("agreement_away_from_boundary", "points_away_from_boundary", "projection_changes_fraction",
                "agreement_smooth_away_from_boundary", "agreement_everywhere_away_from_boundary")
        row = {k: data.attrs[k] for k in keys if k in data.attrs}
        row["grid"] = " x ".join(texts)
        row["wall_s"] = round(wall, 1)
        summary[model] = row
        print(model, json.dumps(row), flush=True)
    write_json(out / "summary.json", summary, nonfinite_as_text=False)


if __name__ == "__main__":
    main()
