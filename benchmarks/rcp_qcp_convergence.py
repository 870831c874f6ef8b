"""How often do RCP and QCP settle at max-min on random networks, for which gains, and how fast?

For each of --networks random networks (`fluidcc.scenarios.random_network`: 1-5 links, 1-12
long-lived flows, 10-1000 Mb/s, 1-50 ms per link), every gain setting below is integrated for 200
of the network's largest RTTs from the routers' default start (R = 0.05 C); all settings of one
protocol run as one batch. A run has *converged* when every flow is within 1 % of its max-min
rate over the last 10 % of the run. Reported per setting: the fraction converged, the median
and worst time (in largest RTTs) after which every flow stays within 1 %, and the wall time.

Run:

    PYTHONPATH=src python benchmarks/rcp_qcp_convergence.py --networks 30
"""

from __future__ import annotations

import argparse

import numpy as np

from fluidcc import scenarios
from fluidcc.dde import solve
from fluidcc.maxmin import maxmin
from fluidcc.models import qcp_network, rcp_network

from _harness import Table, timed

RTTS = 200
TOLERANCE = 0.01

#: (label, protocol, network_params keywords; "half_rtt": QCP's d = half the link's mean RTT)
SETTINGS = (
    ("RCP alpha=0.1 beta=1 (paper)", "rcp", {"alpha": 0.1, "beta": 1.0}),
    ("RCP alpha=0.5 beta=1", "rcp", {"alpha": 0.5, "beta": 1.0}),
    ("RCP alpha=1 beta=1", "rcp", {"alpha": 1.0, "beta": 1.0}),
    ("QCP alpha=1 beta=1 d=mean RTT (paper)", "qcp", {"alpha": 1.0, "beta": 1.0}),
    ("QCP alpha=1 beta=0.5 d=mean RTT", "qcp", {"alpha": 1.0, "beta": 0.5}),
    ("QCP alpha=1 beta=1 d=mean RTT/2", "qcp", {"alpha": 1.0, "beta": 1.0, "half_rtt": True}),
    ("QCP eq. (14) alpha=1 beta=1", "qcp14", {"alpha": 1.0, "beta": 1.0}),
)


def _batch(protocol: str, network, settings):
    """(model, params) running every setting of one protocol as one batch."""
    keys = ("alpha", "beta")
    values = {k: np.array([s.get(k) for s in settings], dtype=float) for k in keys}
    if protocol == "rcp":
        return rcp_network.RCPNetwork(network), rcp_network.network_params(network, **values)
    means = qcp_network.mean_link_rtts(network)
    intervals = np.stack([means / 2 if s.get("half_rtt") else means for s in settings])
    model = qcp_network.QCPNetwork(network, variant="simplified" if protocol == "qcp14" else "exact")
    return model, qcp_network.network_params(network, control_interval=intervals, **values)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--networks", type=int, default=30)
    parser.add_argument("--seed", type=int, default=2026)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    outcome = {label: [] for label, _, _ in SETTINGS}
    walls = {protocol: 0.0 for _, protocol, _ in SETTINGS}
    for k in range(args.networks):
        network = scenarios.random_network(int(rng.integers(1, 6)), int(rng.integers(1, 13)),
                                           seed=int(rng.integers(2**31)))
        fair = np.asarray(maxmin(network).rates_pps, dtype=float)
        longest = float(network.rtt_s.max())
        horizon = RTTS * longest
        times = np.linspace(0.0, horizon, 801)
        for protocol in dict.fromkeys(p for _, p, _ in SETTINGS):
            mine = [(label, s) for label, p, s in SETTINGS if p == protocol]
            model, params = _batch(protocol, network, [s for _, s in mine])
            solution, wall = timed(lambda: solve(model, params, horizon, times, steps_per_delay=32))
            walls[protocol] += wall
            for point, (label, _) in enumerate(mine):
                if solution.status[point] != 0:
                    outcome[label].append((False, np.inf))
                    continue
                rates = model.observe(times, solution.ys[point], params, point)["rate"]
                error = np.max(np.abs(rates / fair - 1.0), axis=1)
                last = times >= 0.9 * horizon
                converged = bool(np.all(error[last] <= TOLERANCE))
                bad = np.flatnonzero(error > TOLERANCE)
                settle = 0.0 if bad.size == 0 else (times[bad[-1] + 1] / longest if bad[-1] + 1 < len(times) else np.inf)
                outcome[label].append((converged, settle))
        print(f"network {k + 1}/{args.networks}: {network.n_links} links, {network.n_flows} flows", flush=True)
    print(f"\n{args.networks} random networks (seed {args.seed}), {RTTS} largest RTTs each; converged = every "
          f"flow within {TOLERANCE:.0%} of max-min over the last 10 %")
    table = Table("{:<42} {:>10} {:>21} {:>20}", "setting", "converged", "median settle (RTTs)", "worst settle (RTTs)")
    print(table.header())
    for label, _, _ in SETTINGS:
        results = outcome[label]
        ok = [s for c, s in results if c]
        median = f"{np.median(ok):.1f}" if ok else "-"
        worst = f"{np.max(ok):.1f}" if ok else "-"
        print(table.row(label, f"{len(ok):4d}/{len(results):<5d}", median, worst))
    print("wall time (s): " + ", ".join(f"{p} {w:.1f}" for p, w in walls.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
