"""A sweep's store of record: a Zarr store on the sweep's grid, written chunk by chunk.

The grid (C order) is cut into chunks that are each one rectangular block of the grid and one
contiguous range of its points (`ChunkLayout`); every variable of the store is chunked the same
way, so a chunk of work is one Zarr chunk of each variable and its write touches nothing else.
A chunk's results are written with xarray's region writes, then its entry in ``chunk_status``
is set: writing a chunk twice (Dask may run a task twice) writes the same bytes, and a chunk
counts as done only once its data are in. The store's ``store_key`` attribute holds everything
that decides its results; a store made by a different sweep is refused, naming the difference.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import xarray as xr

from ..errors import StoreError

#: chunk_status values: not run yet, done, raised (its error is in the store's attributes).
PENDING, DONE, FAILED = 0, 1, 2


@dataclass(frozen=True)
class ChunkLayout:
    """Chunks of a grid of `shape` with at most `chunk_points` points each, every chunk a block
    ``(1, ..., 1, c, n_{j+1}, ..., n_last)``: the trailing axes whole, axis j cut into runs of c,
    the leading axes one index at a time. Such a block is a contiguous range of the C-order
    points, so a chunk is both a slice of the flat grid and a region of the gridded store."""

    shape: tuple[int, ...]
    chunk_points: int

    @property
    def axis(self) -> int:
        """The axis that is cut (j)."""
        for j in range(len(self.shape)):
            if math.prod(self.shape[j + 1:]) <= self.chunk_points:
                return j
        return len(self.shape) - 1

    @property
    def block(self) -> tuple[int, ...]:
        j = self.axis
        rest = math.prod(self.shape[j + 1:])
        run = min(self.shape[j], max(1, self.chunk_points // rest))
        return (1,) * j + (run,) + tuple(self.shape[j + 1:])

    @property
    def runs_per_row(self) -> int:
        j = self.axis
        return -(-self.shape[j] // self.block[j])

    @property
    def n_chunks(self) -> int:
        return math.prod(self.shape[: self.axis]) * self.runs_per_row

    def slices(self, k: int) -> tuple[slice, ...]:
        """Chunk k's region of the grid, one slice per axis."""
        if not 0 <= k < self.n_chunks:
            raise IndexError(k)
        j = self.axis
        outer, run = divmod(k, self.runs_per_row)
        lead = np.unravel_index(outer, self.shape[:j]) if j else ()
        start = run * self.block[j]
        stop = min(self.shape[j], start + self.block[j])
        return tuple(slice(int(i), int(i) + 1) for i in lead) + (slice(start, stop),) + \
            tuple(slice(0, n) for n in self.shape[j + 1:])

    def flat(self, k: int) -> tuple[int, int]:
        """Chunk k as the range [lo, hi) of C-order points."""
        region = self.slices(k)
        lo = int(np.ravel_multi_index(tuple(s.start for s in region), self.shape))
        return lo, lo + math.prod(s.stop - s.start for s in region)


def create_or_open(path: Path, template: xr.Dataset, key: dict, n_chunks: int) -> np.ndarray:
    """Create the store at `path` from `template` (its variables are dask arrays chunked by the
    layout: only metadata and coordinates are written), or open the one there after checking that
    it was made for the same `key`. Returns chunk_status as it is in the store."""
    if (path / "zarr.json").exists() or (path / ".zgroup").exists():
        stored = xr.open_zarr(path, consolidated=False)
        theirs = json.loads(stored.attrs.get("store_key", "{}"))
        differences = _differences(key, theirs)
        if differences:
            raise StoreError(str(path), "this one was made by another: " + "; ".join(differences))
        return stored["chunk_status"].values.copy()
    if path.exists() and any(path.iterdir()):
        raise StoreError(str(path), "the folder holds files but no store")
    import dask.array as da

    status = xr.DataArray(da.zeros(n_chunks, dtype=np.int8, chunks=1), dims=("chunk",), attrs={
        "long_name": "state of each chunk of the sweep", "flag_values": [PENDING, DONE, FAILED],
        "flag_meanings": "pending done failed"})
    template = template.assign(chunk_status=status)
    template.attrs["store_key"] = json.dumps(key, sort_keys=True)
    template.attrs["chunk_errors"] = "{}"
    template.to_zarr(path, mode="w-", compute=False, consolidated=False)
    return np.zeros(n_chunks, dtype=np.int8)


def write_chunk(path: Path, layout: ChunkLayout, dims: tuple[str, ...], k: int, variables: dict) -> None:
    """Write chunk k's variables into its region, then mark it done. Idempotent. Each variable is
    ``(values, dtype)``, values flat over the chunk's points, or ``(values, dtype, extra_dims)``,
    values of shape (points, *extra) with trailing dims the store holds whole (a link axis)."""
    region = layout.slices(k)
    shape = tuple(s.stop - s.start for s in region)
    data, whole = {}, {}
    for name, spec in variables.items():
        values, dtype, extra = spec if len(spec) == 3 else (*spec, ())
        values = np.asarray(values, dtype=dtype)
        data[name] = (dims + tuple(extra), values.reshape(shape + values.shape[1:]))
        whole.update({d: slice(0, n) for d, n in zip(extra, values.shape[1:])})
    xr.Dataset(data).to_zarr(path, region={**dict(zip(dims, region)), **whole}, consolidated=False)
    mark(path, k, DONE)


def mark(path: Path, k: int, state: int) -> None:
    xr.Dataset({"chunk_status": (("chunk",), np.array([state], dtype=np.int8))}).to_zarr(
        path, region={"chunk": slice(k, k + 1)}, consolidated=False)


def record_errors(path: Path, errors: dict[int, str]) -> None:
    """Keep the chunks' errors in the store's attributes (written by the sweep's client only)."""
    set_attrs(path, {"chunk_errors": json.dumps({str(k): v for k, v in sorted(errors.items())})})


def set_attrs(path: Path, attrs: dict) -> None:
    """Update the store's attributes (by the client only: workers write chunks, never these)."""
    import zarr

    zarr.open_group(str(path), mode="r+").attrs.update(attrs)


def open_result(path: Path) -> xr.Dataset:
    """The store as a run's result, lazily: without its bookkeeping (``chunk_status``,
    ``store_key``) and without the store's chunking and fill values as encodings (they are for
    Zarr, not for other formats)."""
    dataset = xr.open_zarr(path, consolidated=False).drop_vars("chunk_status")
    dataset.attrs.pop("store_key", None)
    for name in dataset.variables:
        dataset[name].encoding = {}
    return dataset


def write_netcdf(dataset: xr.Dataset, target: Path) -> None:
    """Write `dataset` to `target` (NetCDF 3) through a temporary file, so that a reader never
    sees half a file."""
    partial = target.with_suffix(".tmp.nc")
    dataset.to_netcdf(partial, engine="scipy")
    partial.replace(target)


def fill(dataset: xr.Dataset, layout: ChunkLayout, chunks: dict[int, dict]) -> None:
    """Put chunks computed without a store into `dataset` (numpy-backed, on the layout's grid):
    each chunk's variables as `write_chunk` takes them."""
    for k, variables in chunks.items():
        region = layout.slices(k)
        shape = tuple(s.stop - s.start for s in region)
        for name, spec in variables.items():
            values = np.asarray(spec[0], dtype=spec[1])
            dataset[name].values[region] = values.reshape(shape + values.shape[1:])


def stored_errors(path: Path) -> dict[int, str]:
    """The errors of the chunks that raised, as the store keeps them."""
    return {int(k): v for k, v in json.loads(xr.open_zarr(path, consolidated=False).attrs.get("chunk_errors", "{}")).items()}


def run_pending(job, layout: ChunkLayout, store: Path | None, status: np.ndarray, errors: dict[int, str], client,
                progress) -> tuple[dict[int, dict], dict[str, str]]:
    """Run ``job(k)`` for every chunk whose status is not done, in process or on `client`
    (`fluidcc.sweep._execute.run_chunks`), keeping each error (in the store too) and counting
    progress(done, total) in points (those found done first). Returns the values of the chunks
    when there is no store (their summaries' ``values``) and the attributes ``chunks_failed``
    and ``chunk_errors``."""
    from ._execute import run_chunks

    def size(k):
        lo, hi = layout.flat(k)
        return hi - lo

    pending = [k for k in range(layout.n_chunks) if status[k] != DONE]
    total = math.prod(layout.shape)
    finished = [total - sum(size(k) for k in pending)]
    if progress is not None:
        progress(finished[0], total)
    in_memory: dict[int, dict] = {}

    def done(k, summary, error):
        if error is not None:
            errors[k] = error
            if store is not None:
                mark(store, k, FAILED)
                record_errors(store, errors)
        else:
            errors.pop(k, None)
            if store is None:
                in_memory[k] = summary["values"]
        finished[0] += size(k)
        if progress is not None:
            progress(finished[0], total)

    run_chunks(job, pending, done, client)
    if store is not None:
        record_errors(store, errors)
    failed = sorted(errors)
    return in_memory, {"chunks_failed": json.dumps(failed), "chunk_errors": json.dumps({str(k): errors[k] for k in failed})}


def _differences(ours: dict, theirs: dict, prefix: str = "") -> list[str]:
    out = []
    for name in sorted(set(ours) | set(theirs)):
        a, b = ours.get(name, "(absent)"), theirs.get(name, "(absent)")
        if isinstance(a, dict) and isinstance(b, dict):
            out += _differences(a, b, f"{prefix}{name}.")
        elif a != b:
            out.append(f"{prefix}{name} is {_short(a)} here and {_short(b)} in the store")
    return out


def _short(value) -> str:
    text = json.dumps(value)
    return text if len(text) <= 60 else text[:57] + "..."
