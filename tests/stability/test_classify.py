"""Classification of trajectories against their equilibrium."""

import numpy as np

from fluidcc.dde import Status
from fluidcc.stability import Behaviour, Thresholds, classify, settled


def test_classes_on_synthetic_trajectories():
    t = np.linspace(0, 100, 1001)
    values = np.stack([
        1 + 0.5 * np.exp(-t) * np.cos(t),  # converged
        1 + 0.5 * np.exp(-t / 40) * np.cos(3 * t),  # still converging
        1 + 0.2 * np.sin(2 * np.pi * t / 5),  # sustained, period 5, amplitude 0.2
        np.full_like(t, np.nan),  # non-finite
        np.full_like(t, np.inf),  # overflow
        1 + 1e30 * np.exp(-t / 2),  # still decaying from a start-up excursion: 1e10 x* at t = 92
    ])
    status = np.array([Status.OK, Status.OK, Status.OK, Status.NONFINITE, Status.OVERFLOW, Status.OK])
    result = classify(t, values, np.ones(6), status)
    assert result.behaviour.tolist() == [Behaviour.CONVERGED, Behaviour.CONVERGING, Behaviour.OSCILLATING,
                                        Behaviour.DIVERGED, Behaviour.OVERFLOW, Behaviour.TRANSIENT]
    assert abs(result.amplitude[2] - 0.2) < 1e-3
    assert abs(result.period[2] - 5.0) < 1e-2
    assert np.isnan(result.period[0])


def test_thresholds_are_checked_and_exported():
    attrs = Thresholds().as_attrs()
    assert attrs["classify_converged_rtol"] == 1e-3
    try:
        Thresholds(final_fraction=0)
    except ValueError as error:
        assert "final_fraction = 0" in str(error)
    else:
        raise AssertionError("a zero final fraction was accepted")


def test_a_trajectory_stuck_away_from_equilibrium_is_neither_oscillating_nor_converging():
    t = np.linspace(0, 100, 1001)
    values = np.stack([
        np.full_like(t, 1e-9),  # a rate that collapsed to (almost) 0: no motion, far from x* = 1
        1 + 0.5 * np.exp(-t / 400),  # a slow monotone approach: still converging
    ])
    result = classify(t, values, np.ones(2))
    assert result.behaviour.tolist() == [Behaviour.TRANSIENT, Behaviour.CONVERGING]


def test_a_map_counts_converged_and_converging_as_settled():
    import xarray as xr

    codes = np.array([int(b) for b in Behaviour])
    expected = [b in (Behaviour.CONVERGED, Behaviour.CONVERGING) for b in Behaviour]
    assert settled(codes).tolist() == expected
    assert settled(xr.DataArray(codes.reshape(2, 3))).reshape(-1).tolist() == expected
