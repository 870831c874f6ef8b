"""Packet studies: a scenario file run over seeds x a grid of its keys, chunk by chunk, stored in Zarr.

A study is a scenario (`fluidcc.packet.scenario`) and grid axes over any of its keys, named by
their dotted path in the file (``protocol.alpha``, ``workload.load``, ``duration``), plus the
seeds (``seeds=1:50``: seeds 1 to 50; the scenario's own seeds otherwise). Each grid point is the
scenario with those values set; a value the scenario refuses, or a key it does not have, is an
error naming the key and what is allowed, before anything runs. A chunk is one grid point and a
block of its seeds, run as one batch of the exact engine (`run_scenario`); its runs' headline
numbers (`fluidcc.packet.scenario.summarize`) go to ``OUT/study.zarr`` on the dims
``(axis..., seed)`` (and ``link`` for per-link numbers), with the same machinery as a fluid sweep
(`fluidcc.sweep._store`): resumable, refused when made by another study, chunks in process or as
Dask tasks, a chunk that raises recorded and retried by a rerun. A run whose status is not 0
(its packet pool or receivers' store was too small) is kept with its status, never dropped.
"""

from __future__ import annotations

import copy
import json
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np
import xarray as xr

from .._version import stamp
from ..errors import ParameterError
from ..packet.scenario import Scenario, run_scenario, summarize, toml_text
from ._store import (ChunkLayout, create_or_open, fill, open_result, run_pending, set_attrs, stored_errors,
                     write_chunk, write_netcdf)

PACKET_GRID_FORMAT = "KEY=V1,V2,... (a scenario key by its dotted path, e.g. protocol.alpha=0.1,0.2 or " \
                     "workload.load=0.5,0.9) or seeds=FIRST:LAST or seeds=S1,S2,..."

#: Runs per chunk at most (one batch of the exact engine).
DEFAULT_CHUNK_RUNS = 10

#: Per run: name, dtype, value when not computed, attributes.
_RUN_FIELDS = {
    "status": (np.int8, -1, {"long_name": "the run's status (0: ok; -1: not computed, its chunk failed)"}),
    "flows": (np.int32, -1, {"long_name": "flows of finite size"}),
    "finished": (np.int32, -1, {"long_name": "flows of finite size that finished"}),
    "long_lived": (np.int32, -1, {"long_name": "long-lived flows"}),
    "afct_s": (np.float64, np.nan, {"long_name": "mean flow completion time of the finished flows", "units": "s"}),
    "mean_slowdown": (np.float64, np.nan, {"long_name": "mean FCT over the M/G/1-PS reference (Poisson workloads)"}),
    "drop_rate": (np.float64, np.nan, {"long_name": "the flows' data packets dropped / sent"}),
    "mean_throughput_pps": (np.float64, np.nan, {"long_name": "long-lived flows' mean goodput", "units": "packets/s"}),
    "jain_fairness": (np.float64, np.nan, {"long_name": "Jain's index of the long-lived flows' goodputs"}),
}
_LINK_FIELDS = {
    "utilization": (np.float64, np.nan, {"long_name": "data served over what the link could send"}),
    "mean_queue_packets": (np.float64, np.nan, {"long_name": "packets waiting, time average", "units": "packets"}),
    "link_drop_rate": (np.float64, np.nan, {"long_name": "dropped / arrived at the link"}),
}


@dataclass(frozen=True)
class PacketAxis:
    """One swept scenario key (its dotted path) and its values as the file would write them."""

    key: str
    values: tuple

    def __len__(self) -> int:
        return len(self.values)


def parse_packet_grid(text: str) -> PacketAxis:
    """An axis from ``KEY=V1,V2,...``; each value is read as a TOML value (numbers, booleans,
    quoted strings), else kept as text (``10ms``). ``seeds=1:50`` is seeds 1 to 50."""
    if "=" not in text:
        raise ParameterError("grid", text, PACKET_GRID_FORMAT)
    key, _, body = text.partition("=")
    key = key.strip()
    if not key or not body.strip():
        raise ParameterError("grid", text, PACKET_GRID_FORMAT)
    if key in ("seed", "seeds"):
        return PacketAxis("seeds", _seeds(body))
    values = tuple(_value(item.strip()) for item in body.split(",") if item.strip())
    if not values:
        raise ParameterError(f"grid {key}", body, "at least one value")
    return PacketAxis(key, values)


def _seeds(body: str) -> tuple[int, ...]:
    try:
        if ":" in body:
            first, last = (int(part) for part in body.split(":"))
            seeds = tuple(range(first, last + 1))
        else:
            seeds = tuple(int(item) for item in body.split(",") if item.strip())
    except ValueError:
        raise ParameterError("grid seeds", body, "FIRST:LAST or S1,S2,... (whole numbers >= 0)") from None
    if not seeds or min(seeds) < 0 or len(set(seeds)) != len(seeds):
        raise ParameterError("grid seeds", body, "at least one seed, each a whole number >= 0, none twice")
    return seeds


def _value(item: str):
    try:
        return tomllib.loads(f"v = {item}")["v"]
    except tomllib.TOMLDecodeError:
        return item


@dataclass(frozen=True)
class PacketStudy:
    """A scenario (its mapping and the folder its relative files are read from), the grid axes
    over its keys, and the seeds."""

    scenario: dict
    base_dir: str
    axes: tuple[PacketAxis, ...]
    seeds: tuple[int, ...]

    @classmethod
    def from_file(cls, path: str | Path, grid: tuple[str, ...] | list[str] = ()) -> "PacketStudy":
        """The study of the scenario file at `path` over the ``--grid`` texts in `grid`; checks
        every grid point's scenario at once."""
        path = Path(path)
        base = Scenario.load(path)  # the file as it is: its own errors first
        data = tomllib.loads(path.read_text())
        axes = [parse_packet_grid(text) for text in grid]
        seeds = next((a.values for a in axes if a.key == "seeds"), tuple(base.seeds))
        axes = tuple(a for a in axes if a.key != "seeds")
        keys = [a.key for a in axes]
        if len(set(keys)) != len(keys):
            raise ParameterError("grid", keys, "each scenario key swept at most once")
        study = cls(scenario=data, base_dir=str(path.parent.resolve()), axes=axes, seeds=tuple(seeds))
        study.check()
        return study

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(len(a) for a in self.axes) + (len(self.seeds),)

    def mapping_at(self, index: tuple[int, ...]) -> dict:
        data = copy.deepcopy(self.scenario)
        data.pop("seed", None)
        data["seeds"] = list(self.seeds)
        for axis, i in zip(self.axes, index):
            *tables, last = axis.key.split(".")
            node = data
            for name in tables:
                if name not in node:
                    node[name] = {}
                if not isinstance(node[name], dict):
                    raise ParameterError(f"grid {axis.key}", axis.values[i], f"a key inside a table; {name} is a value")
                node = node[name]
            node[last] = axis.values[i]
        return data

    def scenario_at(self, index: tuple[int, ...], seeds: tuple[int, ...] | None = None) -> Scenario:
        data = self.mapping_at(index)
        if seeds is not None:
            data["seeds"] = list(seeds)
        return Scenario.from_dict(data, self.base_dir)

    def check(self) -> list[str]:
        """Build every grid point's scenario (bad values and unknown keys raise here, naming the
        key); the links must be the same at every point. Returns the link names."""
        links = None
        for index in np.ndindex(*self.shape[:-1]):
            scenario = self.scenario_at(index)
            names = list(scenario.network.link_names)
            if links is not None and names != links:
                raise ParameterError("grid", [a.key for a in self.axes], "keys that keep the network's links the same")
            links = names
        return links

    def key(self) -> dict:
        return {"scenario": toml_text(self.scenario), "base_dir": self.base_dir,
                "axes": [[a.key, list(a.values)] for a in self.axes], "seeds": list(self.seeds)}


def run_packet_study(study: PacketStudy, out_dir: str | Path | None = None, *, chunk_runs: int = DEFAULT_CHUNK_RUNS,
                     client=None, progress: Callable[[int, int], None] | None = None, command: str = "") -> xr.Dataset:
    """Run every grid point x seed of `study`; with `out_dir`, into ``OUT/study.zarr`` (resumed
    when it holds this study's chunks; refused when another study's) and ``OUT/study.nc``.
    progress(done, total) counts runs. Returns the dataset (dims: the axes' keys, ``seed``,
    ``link``); attributes ``chunks_failed`` and ``chunk_errors`` as `run_sweep`'s."""
    if isinstance(chunk_runs, bool) or not isinstance(chunk_runs, (int, np.integer)) or chunk_runs < 1:
        raise ParameterError("chunk_runs", chunk_runs, "a whole number of runs >= 1")
    links = study.check()
    layout = ChunkLayout(study.shape, min(int(chunk_runs), len(study.seeds)))
    template = _template(study, layout, links, command)
    store, status, errors = None, np.zeros(layout.n_chunks, dtype=np.int8), {}
    if out_dir is not None:
        store = Path(out_dir) / "study.zarr"
        store.parent.mkdir(parents=True, exist_ok=True)
        status = create_or_open(store, template, {**study.key(), "chunk_block": list(layout.block)}, layout.n_chunks)
        errors = stored_errors(store)
    job = _PacketJob(study, layout, tuple(links), str(store) if store is not None else None)
    in_memory, attrs = run_pending(job, layout, store, status, errors, client, progress)
    if store is not None:
        set_attrs(store, attrs)
        dataset = open_result(store).load()
        dataset.attrs.update(attrs)
        write_netcdf(dataset, Path(out_dir) / "study.nc")
        return dataset
    dataset = _template(study, layout, links, command, lazy=False)
    fill(dataset, layout, in_memory)
    dataset.attrs.update(attrs)
    return dataset


@dataclass(frozen=True)
class _PacketJob:
    """Chunk k of a study: one grid point, a block of its seeds, one batch (picklable)."""

    study: PacketStudy
    layout: ChunkLayout
    links: tuple[str, ...]
    store: str | None

    def __call__(self, k: int) -> dict:
        region = self.layout.slices(k)
        index = tuple(s.start for s in region[:-1])
        seeds = self.study.seeds[region[-1]]
        runs = summarize(run_scenario(self.study.scenario_at(index, seeds)))["runs"]
        values: dict[str, Any] = {}
        for name, (dtype, missing, _) in _RUN_FIELDS.items():
            column = [row.get(name) for row in runs]
            values[name] = (np.array([missing if v is None else v for v in column], dtype=dtype), dtype, ())
        for name, (dtype, missing, _) in _LINK_FIELDS.items():
            table = [[(row.get(name) or {}).get(link) for link in self.links] for row in runs]
            values[name] = (np.array([[missing if v is None else v for v in line] for line in table], dtype=dtype),
                            dtype, ("link",))
        if self.store is None:
            return {"chunk": k, "runs": len(runs), "values": values}
        dims = tuple(a.key for a in self.study.axes) + ("seed",)
        write_chunk(Path(self.store), self.layout, dims, k, values)
        return {"chunk": k, "runs": len(runs)}


def _template(study: PacketStudy, layout: ChunkLayout, links: list[str], command: str, lazy: bool = True) -> xr.Dataset:
    import dask.array as da

    dims = tuple(a.key for a in study.axes) + ("seed",)
    coords: dict[str, Any] = {a.key: (a.key, _coordinate(a.values)) for a in study.axes}
    coords["seed"] = ("seed", np.asarray(study.seeds, dtype=np.int64))
    coords["link"] = ("link", np.asarray(links, dtype=object))
    data = {}
    for fields, extra, extra_shape in ((_RUN_FIELDS, (), ()), (_LINK_FIELDS, ("link",), (len(links),))):
        for name, (dtype, missing, about) in fields.items():
            shape = study.shape + extra_shape
            filled = da.full(shape, missing, dtype=dtype, chunks=layout.block + extra_shape) if lazy else \
                np.full(shape, missing, dtype=dtype)
            variable = xr.Variable(dims + extra, filled, about)
            variable.encoding = {"chunks": layout.block + extra_shape, "fill_value": missing}
            data[name] = variable
    attrs = {"title": "fluidcc packet study", **stamp(), "command": command,
             "scenario_toml": toml_text(study.scenario), "scenario_folder": study.base_dir,
             "grid": json.dumps([[a.key, list(a.values)] for a in study.axes]),
             "runs_per_chunk": int(layout.block[-1])}
    return xr.Dataset(data, coords=coords, attrs=attrs)


def _coordinate(values: tuple) -> np.ndarray:
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        return np.asarray(values, dtype=float)
    return np.asarray([str(v) for v in values], dtype=object)
