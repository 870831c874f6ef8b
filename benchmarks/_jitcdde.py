"""jitcdde, the peer of the DDE benchmarks, on MIAIMD's aggregate equation (eq. (14) of the VCP
paper; the points and gains of _dde_points.py). A helper module, not a benchmark."""

from __future__ import annotations

import os
import tempfile
import time
from collections import Counter

import numpy as np

from _dde_points import ALPHA, GAMMA, RANGES


def build_jitcdde(coordinates: str):
    """Eq. (14) with T, C, N, kappa as control parameters, compiled to C once.

    coordinates "natural" integrates w as the paper writes it; "log" integrates log w:
    d(log w)/dt = [kappa (gamma C T / w(t - T) - 1) + N alpha / w(t)] / T.
    """
    import symengine
    from jitcdde import jitcdde, t, y

    rtt, capacity, flows, kappa = symengine.symbols("T C N kappa")
    if coordinates == "natural":
        field = [(kappa * y(0) * (GAMMA * capacity * rtt / y(0, t - rtt) - 1) + flows * ALPHA) / rtt]
    else:
        field = [(kappa * (GAMMA * capacity * rtt * symengine.exp(-y(0, t - rtt)) - 1)
                  + flows * ALPHA * symengine.exp(-y(0))) / rtt]
    dde = jitcdde(field, control_pars=[rtt, capacity, flows, kappa], max_delay=RANGES["rtt_s"][1], verbose=False)
    # jitcdde compiles through setuptools in the working directory, which would read this
    # project's pyproject.toml: compile in an empty temporary directory instead.
    here = os.getcwd()
    with tempfile.TemporaryDirectory() as scratch:
        os.chdir(scratch)
        try:
            dde.compile_C()
        finally:
            os.chdir(here)
    return dde


def run_jitcdde_config(dde, coordinates, points, index, grid, tolerances, shift_ratio, timeout):
    """Integrate the points `index` with one jitcdde configuration: the windows, and the failures
    (recorded per point)."""
    windows = np.full((len(index), grid.shape[1]), np.nan)
    failures: Counter = Counter()
    if tolerances is None:
        dde.set_integration_parameters()
    else:
        dde.set_integration_parameters(rtol=tolerances[0], atol=tolerances[1])
    for row, i in enumerate(index):
        point_started = time.perf_counter()
        initial = points["n_flows"][i]
        try:
            dde.purge_past()
            dde.constant_past([np.log(initial) if coordinates == "log" else initial])
            dde.set_parameters(points["rtt_s"][i], points["capacity_pps"][i], points["n_flows"][i], points["kappa"][i])
            if shift_ratio is None:
                dde.adjust_diff()
            else:
                dde.adjust_diff(shift_ratio=shift_ratio)
            for column, when in enumerate(grid[i]):
                windows[row, column] = dde.integrate(when)[0]
                if time.perf_counter() - point_started > timeout:
                    raise TimeoutError(f"point took more than {timeout:g} s")
        except Exception as error:  # a failing point is data, like fluidcc's statuses
            # the save points before the failure keep their values; the rest stay NaN
            failures[type(error).__name__] += 1
    if coordinates == "log":
        with np.errstate(over="ignore"):
            windows = np.exp(windows)
    return windows, dict(failures)
