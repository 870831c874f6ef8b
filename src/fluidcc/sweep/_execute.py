"""Where a batch's chunks run: in this process, or as Dask tasks on a cluster.

A chunk is the unit of work and of storage. `run_chunks` calls ``task(k)`` for each pending
chunk, in this process when `client` is None, else as Dask tasks (``client.submit``), and hands
each outcome to `done` as it arrives, in the order chunks finish. A task returns a small summary
(its results go to the store from where it ran), or raises: the error is kept and the others go
on. Dask may run a task more than once (a worker lost mid-task), so tasks must be idempotent.
A finished task whose summary does not come back within `GATHER_TIMEOUT_S` (Dask's gather can
wait forever for a result held by a worker that died, dask/distributed issues 3196 and 7331) is
submitted again, up to `RESUBMITS` times, then recorded as the chunk's error; a task that Dask
computes again because the worker holding its result died (no longer finished) is waited for.

`cluster` opens the client a front end asks for: ``workers=N`` starts a LocalCluster of N worker
processes on this machine, ``scheduler=ADDRESS`` connects to a running scheduler (``dask
scheduler`` / ``dask worker``, or dask-jobqueue on SLURM or PBS), neither runs in process.
Needs ``pip install 'fluidcc[distributed]'`` (dask.distributed).
"""

from __future__ import annotations

import contextlib
import os
import time
import traceback
from typing import Any, Callable, Iterable, Iterator

from ..errors import ClusterError

#: Seconds to wait for a scheduler to answer before saying it does not.
CONNECT_TIMEOUT_S = 5.0
#: Seconds to wait for a finished task's summary (small: it is gathered in milliseconds when its
#: worker is alive) before submitting the task again.
GATHER_TIMEOUT_S = 60.0
#: How many times a task whose summary did not come back is submitted again.
RESUBMITS = 3


@contextlib.contextmanager
def cluster(workers: int | None = None, scheduler: str | None = None, *,
            timeout_s: float = CONNECT_TIMEOUT_S, jax_cache: str | None = None) -> Iterator[Any]:
    """A `dask.distributed.Client` for `workers` local worker processes or the scheduler at
    `scheduler`, closed on exit; None (run in process) when neither is given.

    Each local worker gets as many JAX CPU devices as this process has and its BLAS thread counts
    (`blas_threads`), so that a chunk gives the same bits there as in process: XLA's CPU kernels
    round differently with another device count (a refinement's error estimate moves by up to
    tens of percent, its float32 first rung; results by about 1e-13), and numpy's BLAS with
    another thread count. Workers started by hand on a cluster
    should be given the same environment for results bit for bit equal to a local run. `jax_cache`: a JAX compilation cache folder the workers
    share (on a cluster, a path every worker sees), so each kernel compiles once.
    """
    if workers is not None and scheduler is not None:
        raise ClusterError("workers", workers, "either --workers (a local cluster) or --scheduler (a running one), "
                                               "not both")
    if workers is None and scheduler is None:
        yield None
        return
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError:  # pragma: no cover - the test extra installs it
        raise ClusterError("workers" if workers is not None else "scheduler", workers or scheduler,
                           "dask.distributed installed: pip install 'fluidcc[distributed]'") from None
    if workers is not None:
        if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
            raise ClusterError("workers", workers, "a whole number of worker processes >= 1 "
                                                   "(leave it out to run in this process)")
        import dask

        import jax

        env = {"FLUIDCC_CPU_DEVICES": str(len(jax.local_devices()))}
        if jax_cache is not None:
            env["FLUIDCC_JAX_CACHE"] = jax_cache
        # set before the worker processes start (BLAS reads them when numpy loads). Without Dask's
        # MALLOC_TRIM_THRESHOLD_: setting it fixes glibc's mmap threshold, so every large XLA
        # buffer is mapped afresh and faulted in page by page; a worker then ran a MIAIMD chunk
        # at about half the in-process rate, and trimming lowered no worker's peak memory.
        before_spawn = {**dask.config.get("distributed.nanny.pre-spawn-environ", {}), **blas_threads(), **env}
        before_spawn.pop("MALLOC_TRIM_THRESHOLD_", None)
        with dask.config.set({"distributed.nanny.pre-spawn-environ": before_spawn}):
            with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                              dashboard_address=":0") as local, Client(local) as client:
                yield client
        return
    try:
        client = Client(scheduler, timeout=timeout_s)
    except (OSError, TimeoutError) as error:
        raise ClusterError("scheduler", scheduler, f"the address of a running Dask scheduler (none answered "
                                                   f"within {timeout_s:g} s: {error})") from None
    try:
        if jax_cache is not None:
            client.run(_use_jax_cache, jax_cache)
        yield client
    finally:
        client.close()


def blas_threads() -> dict[str, str]:
    """The BLAS thread counts of this process, for workers to use the same: numpy's BLAS
    (OpenBLAS) sums in another order with another thread count, which moves a sweep's results in
    the last bits (about 1e-13 relative on MIAIMD), and Dask's nannies set them to 1. Unset here
    means OpenBLAS's default, one thread per core."""
    cores = str(os.cpu_count() or 1)
    return {name: os.environ.get(name, cores) for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}


def _use_jax_cache(path: str) -> None:
    import jax

    jax.config.update("jax_compilation_cache_dir", path)


def run_chunks(task: Callable[[int], dict], pending: Iterable[int], done: Callable[[int, dict | None, str | None], None],
               client=None) -> None:
    """Run ``task(k)`` for every k of `pending`; ``done(k, summary, error)`` as each finishes
    (error: the traceback's text when the task raised, else None). KeyboardInterrupt stops at
    once; what finished is kept by the tasks themselves."""
    pending = list(pending)
    if client is None:
        for k in pending:
            try:
                summary = task(k)
            except Exception:  # a chunk that raises is data: recorded, and the sweep goes on
                done(k, None, traceback.format_exc(limit=8))
            else:
                done(k, summary, None)
        return
    from dask.distributed import as_completed

    tag = _token(task)
    submits = dict.fromkeys(pending, 0)

    def submit(k):
        return client.submit(_guarded, task, k, key=f"fluidcc-chunk-{k}-{tag}-{submits[k]}", pure=False)

    futures = {submit(k): k for k in pending}
    finished = as_completed(list(futures))
    try:
        for future in finished:
            k = futures[future]
            try:
                summary, error = future.result(timeout=GATHER_TIMEOUT_S)
            except TimeoutError:
                if future.status != "finished":  # lost with its worker and being computed again: wait
                    finished.add(future)
                    continue
                # finished, but its summary did not come back (module docstring)
                future.cancel()
                if submits[k] < RESUBMITS:
                    futures.pop(future)
                    submits[k] += 1
                    again = submit(k)
                    futures[again] = k
                    finished.add(again)
                    continue
                summary, error = None, (f"the summary of chunk {k} did not come back within {GATHER_TIMEOUT_S:g} s "
                                        f"of its finishing, {RESUBMITS + 1} times")
            except Exception as lost:  # e.g. KilledWorker: the chunk's workers died each time it ran
                summary, error = None, f"{type(lost).__name__}: {lost}"
            futures.pop(future)
            done(k, summary, error)
    finally:
        for future in futures:
            future.cancel()


def _guarded(task, k):
    """Run on a worker: a task's exception comes back as text, so that one chunk's failure does
    not stop the others (a lost worker is Dask's to retry, not this)."""
    try:
        return task(k), None
    except Exception:
        return None, traceback.format_exc(limit=8)


def _token(task) -> str:
    return f"{id(task):x}{time.monotonic_ns():x}"
