"""Sweep specification and runner: grids, resumption after an interruption."""

from __future__ import annotations

import numpy as np
import pytest

from fluidcc.errors import ParameterError
from fluidcc.sweep import SweepSpec, parse_grid, run_sweep
from fluidcc.sweep import _runner


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
    fresh = run_sweep(spec, None, chunk_points=4)
    np.testing.assert_array_equal(data["final_window"].values, fresh["final_window"].values)
    assert (tmp_path / "sweep.nc").exists()
