"""Sweeps and packet studies on a Dask LocalCluster (loopback only): the same bits as in process,
resumption after the client stops, a worker killed mid-sweep, and clear errors for a cluster that
cannot be used or a study key that does not exist."""

from __future__ import annotations

import json
import math
import os
import signal
import time
import tomllib

import numpy as np
import pytest
import xarray as xr
from click.testing import CliRunner

from fluidcc.cli import main
from fluidcc.errors import ClusterError, ParameterError, StoreError
from fluidcc.packet.scenario import Scenario, run_scenario, summarize
from fluidcc.sweep import PacketStudy, SweepSpec, cluster, parse_grid, run_packet_study, run_stability, run_sweep
from fluidcc.sweep import _execute

# at a fixed resolution (rtol None): one kernel per process, where the refinement's ladder is a
# kernel per rung in each worker (49 s -> 3 s in process); the refinement on a cluster is the
# stability map's, at the end of the first test
SPEC = SweepSpec(model="miaimd", axes=(parse_grid("miaimd", "kappa=0.2:1.9:4"), parse_grid("miaimd", "rtt=20ms:200ms:3:log")),
                 horizon_rtts=60, rtol=None)
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
    small = SweepSpec(model="miaimd", axes=plane, horizon_rtts=60)  # refined to the default rtol
    _same(run_stability(small, "both", client=client, chunk_points=2), run_stability(small, "both", chunk_points=2))


def _environment(names):
    return {name: os.environ.get(name) for name in names}


def test_local_workers_get_this_process_s_devices_and_threads_and_no_malloc_trim(client):
    import jax

    names = ("FLUIDCC_CPU_DEVICES", "OPENBLAS_NUM_THREADS", "MALLOC_TRIM_THRESHOLD_")
    for seen in client.run(_environment, names).values():
        assert seen["FLUIDCC_CPU_DEVICES"] == str(len(jax.local_devices()))
        assert seen["OPENBLAS_NUM_THREADS"] == os.environ.get("OPENBLAS_NUM_THREADS", str(os.cpu_count()))
        # Dask's nannies set it (65536) unless told otherwise; with it a worker ran at half speed
        assert seen["MALLOC_TRIM_THRESHOLD_"] is None


def test_a_client_stopped_after_some_chunks_resumes_without_computing_them_again(client, tmp_path, monkeypatch):
    # one point per chunk (12 chunks), so that the chunks already running when the client stops
    # (two workers) cannot be all of them; the reference is the in-process sweep of the same chunks
    fine = 1

    def stop_after_the_first_chunk(done, total):
        if done > 0:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_sweep(SPEC, tmp_path, chunk_points=fine, client=client, progress=stop_after_the_first_chunk)
    # a task already running when the client stopped may still finish and store its chunk (either
    # way is fine; the scheduler forgets a cancelled task while its worker runs it): wait until the
    # stored statuses have not changed for 3 s, so that they are what the resumed sweep finds
    def stored():
        return xr.open_zarr(tmp_path / "sweep.zarr", consolidated=False)["chunk_status"].values

    before, still, deadline = stored(), 0.0, time.monotonic() + 60.0
    while still < 3.0 and time.monotonic() < deadline:
        time.sleep(0.5)
        now = stored()
        still = still + 0.5 if np.array_equal(now, before) else 0.0
        before = now
    assert 1 <= int((before == 1).sum()) < len(before)

    submitted = []
    original = _execute.run_chunks

    def recording(task, pending, done, client=None):
        pending = list(pending)
        submitted.extend(pending)
        return original(task, pending, done, client)

    monkeypatch.setattr(_execute, "run_chunks", recording)
    resumed = run_sweep(SPEC, tmp_path, chunk_points=fine, client=client)
    finished_before = set(np.flatnonzero(before == 1).tolist())
    assert finished_before.isdisjoint(submitted) and set(submitted) | finished_before == set(range(len(before)))
    _same(resumed, run_sweep(SPEC, None, chunk_points=fine))
    assert json.loads(resumed.attrs["chunks_failed"]) == []


def test_a_worker_killed_mid_sweep_loses_nothing(in_process, tmp_path):
    spec = SweepSpec(model="miaimd", axes=(parse_grid("miaimd", "kappa=0.2:1.9:8"), parse_grid("miaimd", "rtt=20ms:200ms:3:log")),
                     horizon_rtts=60, rtol=None)
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


def test_a_summary_that_does_not_come_back_is_submitted_again(monkeypatch):
    """Dask's gather can wait forever for the result of a task whose worker died after it
    finished: `run_chunks` waits GATHER_TIMEOUT_S for each finished task's summary, submits the
    task again up to RESUBMITS times, then records the chunk's error, and the other chunks go on;
    a task that Dask is computing again (no longer finished) is waited for, not submitted again.
    With a stand-in client whose futures of chunk 1 lose their summary twice, those of chunk 2
    always, and chunk 3's first wait times out while it is computed again."""
    import dask.distributed

    lost_times = {0: 0, 1: 2, 2: math.inf, 3: 0}
    submitted, cancelled, timeouts, outcomes = [], [], [], []

    class Future:
        def __init__(self, fn, args, key):
            self.fn, self.args, self.key, self.status, self.waits = fn, args, key, "finished", 0

        def result(self, timeout=None):
            timeouts.append(timeout)
            chunk, attempt = (int(part) for part in self.key.split("-")[2::2])
            self.waits += 1
            if chunk == 3 and self.waits == 1:
                self.status = "pending"  # its worker died: Dask computes it again
                raise TimeoutError
            self.status = "finished"
            if attempt < lost_times[chunk]:
                raise TimeoutError
            return self.fn(*self.args)

        def cancel(self):
            cancelled.append(self.key)

    class Client:
        def submit(self, fn, *args, key, pure):
            assert not pure
            submitted.append(key)
            return Future(fn, args, key)

    class AsCompleted:  # finishing in the order submitted (or added again)
        def __init__(self, futures):
            self.queue = list(futures)

        def add(self, future):
            self.queue.append(future)

        def __iter__(self):
            while self.queue:
                yield self.queue.pop(0)

    monkeypatch.setattr(dask.distributed, "as_completed", AsCompleted)
    _execute.run_chunks(lambda k: {"chunk": k}, [0, 1, 2, 3], lambda k, s, e: outcomes.append((k, s, e)), Client())
    assert sorted(k for k, _, _ in outcomes) == [0, 1, 2, 3]  # each chunk done once
    by_chunk = {k: (s, e) for k, s, e in outcomes}
    for k in (0, 1, 3):
        assert by_chunk[k] == ({"chunk": k}, None), k
    assert by_chunk[2][0] is None and "did not come back" in by_chunk[2][1]
    count = lambda k: sum(key.split("-")[2] == str(k) for key in submitted)  # noqa: E731
    assert (count(0), count(1), count(2), count(3)) == (1, 3, _execute.RESUBMITS + 1, 1)
    lost = [key for key in submitted if key.split("-")[2] == "2" or (key.split("-")[2] == "1" and key[-1] in "01")]
    assert sorted(cancelled) == sorted(lost)  # every future whose summary was lost, and no other
    assert set(timeouts) == {_execute.GATHER_TIMEOUT_S}


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


# ------------------------------------------------------------------ packet studies

SCENARIO = """
duration = "1.5s"
seed = 1
pool_size = 4096  # no run fills it: one program (a default pool is grown for some runs, a second)
[network]
packet_bytes = 1000
[[network.links]]
name = "l"
capacity = 1000
delay = "20ms"
buffer = 40
[[network.flows]]
name = "f"
route = ["l"]
[workload]
kind = "long_lived"
count = 3
start_spread = "0.5s"
[protocol]
name = "tcp"
"""


@pytest.fixture(scope="module")
def scenario_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("study") / "small.toml"
    path.write_text(SCENARIO)
    return path


def test_a_packet_study_runs_the_same_on_a_cluster_resumes_and_keeps_every_run(client, scenario_file, tmp_path):
    study = PacketStudy.from_file(scenario_file, ["protocol.min_rto=200ms,1s", "seeds=1:4"])
    assert study.shape == (2, 4)
    here = run_packet_study(study, None, chunk_runs=2)
    # each run is the scenario with that key set, seed for seed
    mapping = {**tomllib.loads(SCENARIO), "seeds": [3, 4], "protocol": {"name": "tcp", "min_rto": "1s"}}
    del mapping["seed"]
    alone = run_scenario(Scenario.from_dict(mapping, scenario_file.parent))
    runs = summarize(alone)["runs"]
    np.testing.assert_array_equal(here["drop_rate"].sel({"protocol.min_rto": "1s"}).values[2:],
                                  [r["drop_rate"] for r in runs])
    assert here["status"].values.tolist() == [[0] * 4] * 2 and np.all(here["utilization"].values > 0.5)

    def stop_after_the_first_chunk(done, total):
        if done > 0:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_packet_study(study, tmp_path, chunk_runs=2, progress=stop_after_the_first_chunk)
    assert xr.open_zarr(tmp_path / "study.zarr", consolidated=False)["chunk_status"].values.tolist() == [1, 0, 0, 0]
    there = run_packet_study(study, tmp_path, chunk_runs=2, client=client)  # resumed, on the cluster
    _same(there, here)
    _same(xr.open_dataset(tmp_path / "study.nc", engine="scipy"), here)
    other = PacketStudy.from_file(scenario_file, ["protocol.min_rto=200ms,2s", "seeds=1:4"])
    with pytest.raises(StoreError, match=r"axes is .* here and .* in the store"):
        run_packet_study(other, tmp_path, chunk_runs=2)


def test_a_packet_study_names_a_bad_key_value_or_seed(scenario_file):
    with pytest.raises(ParameterError, match=r"protocol.alpha = 1 .*allowed: name, initial_window"):
        PacketStudy.from_file(scenario_file, ["protocol.alpha=1"])
    with pytest.raises(ParameterError, match=r"protocol.initial_window = "):
        PacketStudy.from_file(scenario_file, ["protocol.initial_window=2,0"])  # the second point is refused
    with pytest.raises(ParameterError, match="grid seeds"):
        PacketStudy.from_file(scenario_file, ["seeds=3:x"])
    with pytest.raises(ParameterError, match="at most once"):
        PacketStudy.from_file(scenario_file, ["protocol.min_rto=1s", "protocol.min_rto=2s"])
    with pytest.raises(ParameterError, match="KEY=V1,V2"):
        PacketStudy.from_file(scenario_file, ["protocol.min_rto"])
    result = CliRunner().invoke(main, ["packet", str(scenario_file), "--grid", "workload.nonsense=1"])
    assert result.exit_code == 2 and "workload.nonsense" in result.output and "allowed: kind, count" in result.output


def test_the_packet_command_runs_a_study_and_prints_its_means(scenario_file, tmp_path):
    result = CliRunner().invoke(main, ["packet", str(scenario_file), "--grid", "seeds=1:2", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "means over 2 seed(s)" in result.output and "2/2" in result.output
    data = xr.open_dataset(tmp_path / "study.nc", engine="scipy")
    assert data["seed"].values.tolist() == [1, 2] and data["status"].values.tolist() == [0, 0]
