"""Sweep specification and runner: grids, resumption after an interruption."""

from __future__ import annotations

import numpy as np
import pytest

from fluidcc.errors import ParameterError
from fluidcc.sweep import SweepSpec, parse_grid, run_sweep
from fluidcc.sweep import _runner
from fluidcc.stability import Behaviour


def test_grid_forms_and_units():
    assert parse_grid("miaimd", "kappa=0:1:5").values == (0.0, 0.25, 0.5, 0.75, 1.0)
    np.testing.assert_allclose(parse_grid("miaimd", "rtt=10ms:1s:3:log").values, [0.01, 0.1, 1.0])
    np.testing.assert_allclose(parse_grid("miaimd", "capacity=8Mbps,16Mbps").values, [1000.0, 2000.0])
    assert parse_grid("miaimd", "flows=1:10:4").values == (1.0, 4.0, 7.0, 10.0)


def test_grid_errors():
    with pytest.raises(ParameterError, match="count"):
        parse_grid("miaimd", "kappa=0:1:0")
    with pytest.raises(ParameterError, match="NAME=START"):
        parse_grid("miaimd", "kappa=0:1:3:cubic")


def test_interrupted_sweep_keeps_finished_chunks_and_resumes(tmp_path, monkeypatch):
    spec = SweepSpec(model="miaimd", axes=(parse_grid("miaimd", "kappa=0.1:0.4:4"),), horizon_rtts=60)
    calls = []
    original = _runner._solve_chunk

    def failing_after_first(*args, **kwargs):
        if calls:
            raise KeyboardInterrupt
        calls.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(_runner, "_solve_chunk", failing_after_first)
    with pytest.raises(KeyboardInterrupt):
        run_sweep(spec, tmp_path, chunk_points=2)
    partial = list(tmp_path.glob("partial-*/chunk_*.npz"))
    assert len(partial) == 1  # the finished chunk survived the interruption

    resumed = []

    def counting(*args, **kwargs):
        resumed.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(_runner, "_solve_chunk", counting)
    data = run_sweep(spec, tmp_path, chunk_points=2)
    assert len(resumed) == 1  # only the unfinished chunk was computed again
    fresh = run_sweep(spec, None, chunk_points=2)  # the same chunks, uninterrupted: bit for bit
    np.testing.assert_array_equal(data["final"].values, fresh["final"].values)
    assert (tmp_path / "sweep.nc").exists()


def test_points_in_their_start_up_transient_get_a_longer_horizon():
    # C = 150 Mb/s, N = 50, T = 0.8 s: the first RTT multiplies the window by about
    # exp(kappa (gamma C T / N - 1)) (e^73 for kappa = 0.25), and multiplicative decrease takes it
    # back at about kappa per RTT: ~290 RTTs, longer than the first horizon of 250 RTTs.
    # kappa = 0.25 satisfies Theorem 1 (converges); kappa = 1.8 is past the linear boundary (~1.6).
    axes = (parse_grid("miaimd", "kappa=0.25,1.8"), parse_grid("miaimd", "rtt=800ms"))
    options = dict(model="miaimd", axes=axes, horizon_rtts=250, rtol=1e-5, max_steps_per_delay=256)
    short = run_sweep(SweepSpec(max_horizon_rtts=250, **options))
    assert short["behaviour"].values[:, 0].tolist() == [Behaviour.TRANSIENT, Behaviour.TRANSIENT]
    extended = run_sweep(SweepSpec(**options))
    assert extended["behaviour"].values[:, 0].tolist() == [Behaviour.CONVERGED, Behaviour.OSCILLATING]
    assert extended["horizon_rtts"].values[:, 0].tolist() == [1000, 1000]
    with pytest.raises(ParameterError, match="max_horizon_rtts"):
        SweepSpec(model="miaimd", axes=axes, horizon_rtts=250, max_horizon_rtts=100)


def test_converging_points_get_a_longer_horizon_and_are_counted():
    # At T = 0.3 s, kappa = 1.5 and 1.55 (just inside MIAIMD's linear region) the approach ends in
    # the last fifth of 250 RTTs: a longer horizon shows them settle, as the points beside them do.
    axes = (parse_grid("miaimd", "kappa=1.5,1.55,1.6"), parse_grid("miaimd", "rtt=300ms"))
    short = run_sweep(SweepSpec(model="miaimd", axes=axes, horizon_rtts=250, max_horizon_rtts=250))
    assert short["behaviour"].values[:, 0].tolist() == [Behaviour.CONVERGING, Behaviour.CONVERGING,
                                                         Behaviour.OSCILLATING]
    assert short.attrs["points_integrated_longer"] == 0
    extended = run_sweep(SweepSpec(model="miaimd", axes=axes, horizon_rtts=250))
    assert extended["behaviour"].values[:, 0].tolist() == [Behaviour.CONVERGED, Behaviour.CONVERGED,
                                                            Behaviour.OSCILLATING]
    assert extended["horizon_rtts"].values[:, 0].tolist() == [1000, 1000, 250]
    assert extended.attrs["points_integrated_longer"] == 2


def test_chebyshev_solver_gives_the_rk4_verdicts():
    axes = (parse_grid("miaimd", "kappa=0.2:2.4:6"), parse_grid("miaimd", "rtt=20ms:400ms:4:log"))
    rk4 = run_sweep(SweepSpec(model="miaimd", axes=axes, horizon_rtts=120, solver="rk4"))
    cheb = run_sweep(SweepSpec(model="miaimd", axes=axes, horizon_rtts=120))  # auto: chebyshev for miaimd
    assert cheb.attrs["solver"] == "chebyshev" and rk4.attrs["solver"] == "rk4"
    np.testing.assert_array_equal(cheb["behaviour"].values, rk4["behaviour"].values)
    assert len(set(rk4["behaviour"].values.ravel().tolist())) > 1  # the grid holds more than one verdict
    np.testing.assert_allclose(cheb["final"].values, rk4["final"].values, rtol=1e-4)
    assert np.all(np.isnan(cheb["steps_per_delay"].values))


def test_auto_solver_falls_back_to_rk4_where_chebyshev_cannot_run():
    data = run_sweep(SweepSpec(model="rcp", axes=(parse_grid("rcp", "alpha=0.1:0.4:2"),), horizon_rtts=40))
    assert data.attrs["solver"] == "rk4" and np.all(np.isfinite(data["steps_per_delay"].values))


def test_chebyshev_solver_errors_name_the_option():
    # the library names its parameter (solver); the command line says --solver (tests/test_cli.py)
    with pytest.raises(ParameterError, match="solver = 'euler'"):
        SweepSpec(model="miaimd", axes=(parse_grid("miaimd", "kappa=0.1:0.4:2"),), solver="euler")
    with pytest.raises(ParameterError, match="solver.*rcp|solver.*linear"):
        run_sweep(SweepSpec(model="rcp", axes=(parse_grid("rcp", "alpha=0.1:0.4:2"),), solver="chebyshev"))
