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
            raise StoreError(str(path), "this one was made by another sweep: " + "; ".join(differences))
        return stored["chunk_status"].values.copy()
    if path.exists() and any(path.iterdir()):
        raise StoreError(str(path), "the folder holds files but no sweep store")
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
    """Write chunk k's variables (each `(values, dtype)`, values flat over the chunk's points)
    into its region, then mark it done. Idempotent."""
    region = layout.slices(k)
    shape = tuple(s.stop - s.start for s in region)
    data = xr.Dataset({name: (dims, np.asarray(values, dtype=dtype).reshape(shape))
                       for name, (values, dtype) in variables.items()})
    data.to_zarr(path, region=dict(zip(dims, region)), consolidated=False)
    mark(path, k, DONE)


def mark(path: Path, k: int, state: int) -> None:
    xr.Dataset({"chunk_status": (("chunk",), np.array([state], dtype=np.int8))}).to_zarr(
        path, region={"chunk": slice(k, k + 1)}, consolidated=False)


def record_errors(path: Path, errors: dict[int, str]) -> None:
    """Keep the chunks' errors in the store's attributes (written by the sweep's client only)."""
    import zarr

    group = zarr.open_group(str(path), mode="r+")
    group.attrs["chunk_errors"] = json.dumps({str(k): v for k, v in sorted(errors.items())})


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
