"""Sweeps on a Dask LocalCluster (loopback only): the same bits as in process, resumption after
the client stops, a worker killed mid-sweep, and clear errors for a cluster that cannot be used."""

from __future__ import annotations

import json
import os
import signal
import time

import numpy as np
import pytest
import xarray as xr
from click.testing import CliRunner

from fluidcc.cli import main
from fluidcc.errors import ClusterError
from fluidcc.sweep import SweepSpec, cluster, parse_grid, run_stability, run_sweep
from fluidcc.sweep import _runner

SPEC = SweepSpec(model="miaimd", axes=(parse_grid("miaimd", "kappa=0.2:1.9:4"), parse_grid("miaimd", "rtt=20ms:200ms:3:log")),
                 horizon_rtts=60)
CHUNK = 3  # one row of the grid per chunk: 4 chunks


@pytest.fixture(scope="module")
def client():
    with cluster(workers=2) as local:
        yield local


@pytest.fixture(scope="module")
def in_process():
    return run_sweep(SPEC, None, chunk_points=CHUNK)


def _same(a: xr.Dataset, b: xr.Dataset):
    assert set(a.data_vars) == set(b.data_vars)
    for name in a.data_vars:
        np.testing.assert_array_equal(a[name].values, b[name].values, err_msg=name)


def test_a_local_cluster_gives_the_in_process_results_bit_for_bit(client, in_process, tmp_path):
    stored_here = run_sweep(SPEC, tmp_path / "here", chunk_points=CHUNK)
    stored_there = run_sweep(SPEC, tmp_path / "there", chunk_points=CHUNK, client=client)
    returned = run_sweep(SPEC, None, chunk_points=CHUNK, client=client)
    assert len(set(in_process["behaviour"].values.ravel().tolist())) > 1  # more than one verdict on the grid
    for data in (stored_here, stored_there, returned):
        _same(data, in_process)
    # the stores themselves, chunk states included
    _same(xr.open_zarr(tmp_path / "here" / "sweep.zarr", consolidated=False),
          xr.open_zarr(tmp_path / "there" / "sweep.zarr", consolidated=False))
    plane = (parse_grid("miaimd", "kappa=0.4,1.9"), parse_grid("miaimd", "rtt=50ms,100ms"))
    small = SweepSpec(model="miaimd", axes=plane, horizon_rtts=60)
    _same(run_stability(small, "both", client=client, chunk_points=2), run_stability(small, "both", chunk_points=2))


def test_a_client_stopped_after_some_chunks_resumes_without_computing_them_again(client, in_process, tmp_path,
                                                                                monkeypatch):
    def stop_after_the_first_chunk(done, total):
        if done > 0:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_sweep(SPEC, tmp_path, chunk_points=CHUNK, client=client, progress=stop_after_the_first_chunk)
    time.sleep(1.0)  # a task already running when the client stopped may still finish: either way is fine
    before = xr.open_zarr(tmp_path / "sweep.zarr", consolidated=False)["chunk_status"].values
    assert 1 <= int((before == 1).sum()) < len(before)

    submitted = []
    original = _runner.run_chunks

    def recording(task, pending, done, client=None):
        pending = list(pending)
        submitted.extend(pending)
        return original(task, pending, done, client)

    monkeypatch.setattr(_runner, "run_chunks", recording)
    resumed = run_sweep(SPEC, tmp_path, chunk_points=CHUNK, client=client)
    finished_before = set(np.flatnonzero(before == 1).tolist())
    assert finished_before.isdisjoint(submitted) and set(submitted) | finished_before == set(range(len(before)))
    _same(resumed, in_process)
    assert json.loads(resumed.attrs["chunks_failed"]) == []


def test_a_worker_killed_mid_sweep_loses_nothing(in_process, tmp_path):
    spec = SweepSpec(model="miaimd", axes=(parse_grid("miaimd", "kappa=0.2:1.9:8"), parse_grid("miaimd", "rtt=20ms:200ms:3:log")),
                     horizon_rtts=60)
    killed = []
    with cluster(workers=2) as local:
        pids = sorted(local.run(os.getpid).values())
        assert len(pids) == 2

        def kill_one_worker(done, total):
            if done > 0 and not killed:
                os.kill(pids[0], signal.SIGKILL)
                killed.append(pids[0])

        data = run_sweep(spec, tmp_path, chunk_points=CHUNK, client=local, progress=kill_one_worker)
    assert killed
    status = xr.open_zarr(tmp_path / "sweep.zarr", consolidated=False)["chunk_status"].values
    assert status.tolist() == [1] * 8 and json.loads(data.attrs["chunks_failed"]) == []
    _same(data, run_sweep(spec, None, chunk_points=CHUNK))


def test_a_cluster_that_cannot_be_used_is_a_clear_error():
    started = time.monotonic()
    with pytest.raises(ClusterError, match=r"scheduler = 'tcp://127.0.0.1:9'.*running Dask scheduler"):
        with cluster(scheduler="tcp://127.0.0.1:9", timeout_s=2.0):
            pass
    assert time.monotonic() - started < 30.0  # said within seconds, not after a long hang
    for workers in (0, -1, True):
        with pytest.raises(ClusterError, match="workers = .*whole number of worker processes >= 1"):
            with cluster(workers=workers):
                pass
    with pytest.raises(ClusterError, match="not both"):
        with cluster(workers=1, scheduler="tcp://127.0.0.1:9"):
            pass


def test_the_command_line_names_the_cluster_flags(tmp_path):
    runner = CliRunner()
    result = runner.invoke(main, ["sweep", "--grid", "kappa=0.1,0.2", "--workers", "0", "--out", str(tmp_path)])
    assert result.exit_code == 2 and "--workers = 0" in result.output
    result = runner.invoke(main, ["stability", "--workers", "1", "--scheduler", "tcp://127.0.0.1:9",
                                  "--out", str(tmp_path)])
    assert result.exit_code == 2 and "not both" in result.output
    result = runner.invoke(main, ["sweep", "--grid", "kappa=0.1,0.2", "--chunk-points", "0", "--out", str(tmp_path)])
    assert result.exit_code == 2 and "--chunk-points = 0" in result.output
