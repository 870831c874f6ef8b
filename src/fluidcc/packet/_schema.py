"""The scenario file's schema: its keys, how each is read and checked, and the TOML text of a
scenario mapping. `fluidcc.packet.scenario` documents the format; `Scenario.from_dict` calls
`parse` here. Every error names the key's dotted path, the value and what is allowed."""

from __future__ import annotations

import json
import math
import numbers
import re
from collections.abc import Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from ..errors import ParameterError
from ..network import Network, toml_loads
from ..units import parse_rate, parse_time
from . import workloads as wl

WORKLOAD_KINDS = ("poisson", "long_lived", "trace")
SIZE_KINDS = ("pareto", "exponential", "fixed", "cdf")

_TOP_KEYS = ("description", "duration", "seed", "seeds", "step", "sample", "pool_size", "receiver_runs", "lanes",
             "network",
             "workload", "protocol")
_NETWORK_KEYS = ("links", "flows", "packet_bytes", "name", "description")
_WORKLOAD_KEYS = {"poisson": ("kind", "load", "sizes", "arrivals", "route", "seed"),
                  "long_lived": ("kind", "count", "start_spread", "route", "seed"),
                  "trace": ("kind", "file")}
_SIZE_KEYS = {"pareto": ("kind", "shape", "mean"), "exponential": ("kind", "mean"), "fixed": ("kind", "packets"),
              "cdf": ("kind", "file", "name", "directory")}


class _Missing:
    def __repr__(self) -> str:
        return "missing"


MISSING = _Missing()


def read_file(path: str | Path) -> tuple[dict, str]:
    """The mapping and the text of a scenario TOML file."""
    path = Path(path)
    if not path.is_file():
        raise ParameterError("scenario file", str(path), "an existing scenario .toml file")
    text = path.read_text()
    try:
        return toml_loads(text), text
    except ValueError as error:
        raise ParameterError("scenario file", str(path), f"valid TOML ({error})") from None


def parse(data: Mapping[str, Any], base: Path) -> dict[str, Any]:
    """The fields of a `Scenario` from a scenario mapping (files relative to `base`), with the
    workload as the keywords of its `WorkloadSpec`."""
    if isinstance(data, Mapping) and "slot" in data:
        raise ParameterError("slot", data["slot"], "no such key: scenarios run the exact engine "
                             "(fluidcc.packet.simulate_exact), whose results do not depend on its step; leave slot "
                             'out, or write step = "..." (at most the lookahead, its default)')
    _keys(data, "", _TOP_KEYS, "the scenario file")
    if "duration" not in data:
        raise ParameterError("duration", MISSING, 'the simulated time, e.g. duration = "30s" (required)')
    duration = _time("duration", data["duration"])
    seeds = _seeds(data)
    step = _time("step", data["step"]) if "step" in data else None
    sample = _time("sample", data["sample"]) if "sample" in data else None
    if sample is not None and sample > duration:
        raise ParameterError("sample", data["sample"], f"a time between samples > 0 s, at most the duration "
                             f"({duration:g} s)")
    if not isinstance(data.get("description", ""), str):
        raise ParameterError("description", data["description"], "a string (free text)")
    if "network" not in data:
        raise ParameterError("network", MISSING, 'a [network] table: file = "net.toml", or the network inline '
                             "([[network.links]], [[network.flows]]) (required)")
    network = _network(data["network"], base)
    packet_bytes = network.packet_bytes
    workload = _workload(data.get("workload", {"kind": "long_lived"}), network, packet_bytes, duration, base)
    if "protocol" not in data:
        raise ParameterError("protocol", MISSING, f'a [protocol] table with name = one of '
                             f'{", ".join(protocol_names())} (required)')
    protocol = _protocol(data["protocol"], packet_bytes)
    if step is not None:
        _check_step(network, protocol, step, data["step"])
    pool = _whole("pool_size", data["pool_size"], 2) if "pool_size" in data else None
    runs = _whole("receiver_runs", data["receiver_runs"], 1) if "receiver_runs" in data else None
    lanes = _whole("lanes", data["lanes"], 1) if "lanes" in data else None
    return {"network": network, "protocol": protocol, "workload": workload, "duration_s": duration, "seeds": seeds,
            "step_s": step, "sample_s": sample, "pool_size": pool, "receiver_runs": runs, "lanes": lanes}


def _check_step(network: Network, protocol, step_s: float, text) -> None:
    """A step longer than the network's lookahead is refused now, naming the hop that sets it
    (`fluidcc.packet.exact.check_step`), with the value as the file wrote it."""
    from .exact import Plan, check_step

    plan = Plan.build(network, np.arange(network.n_flows), getattr(protocol, "ack_bytes", 40.0))
    try:
        check_step(plan, step_s)
    except ParameterError as error:
        raise type(error)("step", text, error.allowed) from None


def _keys(data, where: str, allowed: Sequence[str], what: str) -> None:
    """Raise naming the first unknown key of table `where` and the allowed keys."""
    if not isinstance(data, Mapping):
        raise ParameterError(where or "scenario", data, f"a table of keys ({what})")
    unknown = sorted(set(data) - set(allowed))
    if unknown:
        key = unknown[0]
        raise ParameterError(f"{where}.{key}" if where else key, data[key],
                             f"no such key in {what}; allowed: {', '.join(allowed)}")


def _tagged(data, where: str, tag: str, keys_by_choice: Mapping[str, Sequence[str]], not_a_table: str,
            what: str) -> str:
    """Check a table whose key `tag` picks its kind (one of `keys_by_choice`), and that it has no
    other keys than that kind's; return the kind. `what` names the table in messages, formatted
    with the kind."""
    if not isinstance(data, Mapping):
        raise ParameterError(where, data, not_a_table)
    choice = data.get(tag, MISSING)
    if choice not in keys_by_choice:
        raise ParameterError(f"{where}.{tag}", choice, "one of " + ", ".join(f'"{k}"' for k in keys_by_choice))
    _keys(data, where, keys_by_choice[choice], what.format(choice))
    return choice


def _time(field: str, value, *, zero: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, (numbers.Real, str)):
        raise ParameterError(field, value, 'a time: seconds, or a string with s, ms or us, e.g. "30s" or "80ms"')
    seconds = parse_time(field, value)  # UnitError names the field
    if not (math.isfinite(seconds) and (seconds >= 0 if zero else seconds > 0)):
        raise ParameterError(field, value, f"a finite time {'>=' if zero else '>'} 0 s")
    return float(seconds)


def _number(field: str, value, ok: Callable[[float], bool], allowed: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value) or not ok(value):
        raise ParameterError(field, value, allowed)
    return float(value)


def _whole(field: str, value, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise ParameterError(field, value, f"a whole number >= {minimum}")
    return int(value)


def _seeds(data) -> tuple[int, ...]:
    if "seed" in data and "seeds" in data:
        raise ParameterError("seeds", data["seeds"], "either seed = N or seeds = [N, ...], not both")
    if "seed" in data:
        return (_whole("seed", data["seed"], 0),)
    if "seeds" not in data:
        return (0,)
    seeds = data["seeds"]
    if not isinstance(seeds, list) or not seeds:
        raise ParameterError("seeds", seeds, "a non-empty list of whole numbers >= 0")
    return tuple(_whole(f"seeds[{k}]", s, 0) for k, s in enumerate(seeds))


@contextmanager
def prefixed(prefix: str):
    """Re-raise a ParameterError of a fluidcc constructor with its field under `prefix`."""
    try:
        yield
    except ParameterError as error:
        if str(error.field).startswith(prefix):  # named in full already
            raise
        joint = ": " if any(c in text for text in (prefix, str(error.field)) for c in " ,") else "."
        raise type(error)(f"{prefix}{joint}{error.field}", error.value, error.allowed) from None


def _network(data, base: Path) -> Network:
    if not isinstance(data, Mapping):
        raise ParameterError("network", data, 'a table: file = "net.toml", or the network inline')
    if "file" in data:
        others = sorted(set(data) - {"file"})
        if others:
            raise ParameterError(f"network.{others[0]}", data[others[0]],
                                 'either file = "net.toml" or the network inline, not both')
        if not isinstance(data["file"], str):
            raise ParameterError("network.file", data["file"], "a path to a .toml or .json network file")
        path = base / data["file"]
        if not path.is_file():
            raise ParameterError("network.file", data["file"], f"an existing .toml or .json network file, "
                                 f"relative to the scenario file (looked for {path})")
        with prefixed(f"network ({data['file']})"):
            return Network.load(path)
    _keys(data, "network", ("file",) + _NETWORK_KEYS, "[network] (file, or a network file's keys)")
    with prefixed("network"):
        return Network.from_dict(data)


def _route(data, network: Network) -> int:
    if "route" not in data:
        return 0
    name = data["route"]
    if not isinstance(name, str) or name not in network.flow_names:
        raise ParameterError("workload.route", name, f"the name of a flow of the network, whose route the "
                             f"workload follows: {', '.join(network.flow_names)}")
    return network.flow_index(name)


def _workload(data, network: Network, packet_bytes: int, duration: float, base: Path) -> dict[str, Any]:
    kind = _tagged(data, "workload", "kind", _WORKLOAD_KEYS,
                   "a table with kind = " + " or ".join(f'"{k}"' for k in WORKLOAD_KINDS), '[workload] with kind = "{}"')
    if kind == "trace":
        return _trace(data, network, base)
    seed = _whole("workload.seed", data["seed"], 0) if "seed" in data else None
    if kind == "long_lived":
        if "count" not in data:
            for key in ("route", "start_spread", "seed"):
                if key in data:
                    raise ParameterError(f"workload.{key}", data[key], "only with count = N (without a count, the "
                                         "flows are the network's own, with their routes and start times)")
            return {"kind": "long_lived"}
        count = _whole("workload.count", data["count"], 1)
        spread = _time("workload.start_spread", data["start_spread"], zero=True) if "start_spread" in data else 0.0
        if spread >= duration:
            raise ParameterError("workload.start_spread", data["start_spread"],
                                 f"a time >= 0 s shorter than the duration ({duration:g} s)")
        return {"kind": "long_lived", "route": _route(data, network), "count": count, "start_spread_s": spread,
                "seed": seed}
    if "load" not in data:
        raise ParameterError("workload.load", MISSING, "the offered load rho in (0, 1), e.g. load = 0.9 (required)")
    load = _number("workload.load", data["load"], lambda x: 0 < x < 1,
                   "an offered load in (0, 1): rho = lambda E[L] / C on the route's bottleneck; the flow "
                   "completion times are compared with processor sharing, which has no steady state at load >= 1")
    if "sizes" not in data:
        raise ParameterError("workload.sizes", MISSING, 'the flow sizes, e.g. sizes = { kind = "pareto", shape = 1.2, '
                             "mean = 25 } (required)")
    sizes = _sizes(data["sizes"], packet_bytes, base)
    arrivals = _time("workload.arrivals", data["arrivals"]) if "arrivals" in data else duration
    if arrivals > duration:
        raise ParameterError("workload.arrivals", data["arrivals"],
                             f"an arrival window > 0 s, at most the duration ({duration:g} s)")
    return {"kind": "poisson", "route": _route(data, network), "load": load, "sizes": sizes, "arrivals_s": arrivals,
            "seed": seed}


def _trace(data, network: Network, base: Path) -> dict[str, Any]:
    """A trace workload: the flow table of a CSV file (`workloads.read_trace`), read now so that
    its errors (file, line, column, value) come before any run."""
    if "file" not in data:
        raise ParameterError("workload.file", MISSING, 'the trace, a CSV flow table relative to the scenario file, '
                             'e.g. file = "flows.csv" (required for kind = "trace")')
    if not isinstance(data["file"], str) or not data["file"]:
        raise ParameterError("workload.file", data["file"], "a path to a CSV trace file")
    path = base / data["file"]  # an absolute file stays as it is
    if not path.is_file():
        raise ParameterError("workload.file", data["file"], f"an existing CSV trace file, relative to the scenario "
                             f"file or absolute (looked for {path})")
    with prefixed("workload"):
        table = wl.read_trace(path, network)
    # the route most of its flows follow (the first if tied) gives the scenario's reference numbers
    route = int(np.argmax(np.bincount(table.route, minlength=network.n_flows)))
    return {"kind": "trace", "route": route, "file": path, "trace": table}


def _sizes(data, packet_bytes: int, base: Path):
    where = "workload.sizes"
    kind = _tagged(data, where, "kind", _SIZE_KEYS, 'an inline table, e.g. { kind = "pareto", shape = 1.2, mean = 25 }',
                   'workload.sizes with kind = "{}"')
    for key in _SIZE_KEYS[kind]:
        if key not in data and key not in ("file", "name", "directory"):
            raise ParameterError(f"{where}.{key}", MISSING, f'required for kind = "{kind}" '
                                 f"(keys: {', '.join(_SIZE_KEYS[kind])})")
    if kind in ("pareto", "exponential", "fixed"):
        for key in _SIZE_KEYS[kind][1:]:
            if isinstance(data[key], bool) or not isinstance(data[key], numbers.Real):
                raise ParameterError(f"{where}.{key}", data[key], "a number")
        with prefixed(where):
            if kind == "pareto":
                try:
                    return wl.Pareto(data["shape"], data["mean"])
                except ParameterError as error:
                    if error.field == "mean_packets":  # the TOML key is `mean`
                        raise type(error)("mean", error.value, error.allowed) from None
                    raise
            if kind == "exponential":
                try:
                    return wl.Exponential(data["mean"])
                except ParameterError as error:
                    raise type(error)("mean", error.value, error.allowed) from None
            return wl.Fixed(data["packets"])
    if ("file" in data) == ("name" in data):
        raise ParameterError(where, {k: v for k, v in data.items() if k != "kind"},
                             'kind = "cdf" with either file = "sizes.cdf" or name = "websearch"/"hadoop" (one of them)')
    if "file" in data:
        if "directory" in data:
            raise ParameterError(f"{where}.directory", data["directory"], 'only with name = "websearch"/"hadoop"')
        if not isinstance(data["file"], str):
            raise ParameterError(f"{where}.file", data["file"], "a path to a .cdf file")
        path = base / data["file"]
        if not path.is_file():
            raise ParameterError(f"{where}.file", data["file"], f"an existing flow-size CDF file, relative to the "
                                 f"scenario file (looked for {path})")
        with prefixed(where):
            return wl.EmpiricalCDF.load(path, packet_bytes=packet_bytes)
    directory = data.get("directory")
    if directory is not None and not isinstance(directory, str):
        raise ParameterError(f"{where}.directory", directory, "a folder name")
    with prefixed(where):
        return wl.named(data["name"], None if directory is None else base / directory, packet_bytes=packet_bytes)


def _protocol(data, packet_bytes: int):
    """The packet protocol a [protocol] table names (from the catalogue: a protocol of the exact
    engine), set from its own fields (`fluidcc.packet.settings`)."""
    from ..protocols import get_protocol
    from .settings import setting_fields

    classes = {name: get_protocol(name).packet_class() for name in protocol_names()}
    fields_by_name = {name: setting_fields(cls) for name, cls in classes.items()}
    name = _tagged(data, "protocol", "name", {n: ("name", *(s.key for s in f)) for n, f in fields_by_name.items()},
                   "a table with name = " + " or ".join(f'"{p}"' for p in classes), '[protocol] with name = "{}"')
    settings: dict[str, Any] = {}
    for setting in fields_by_name[name]:
        if setting.key not in data:
            continue
        field, value = f"protocol.{setting.key}", data[setting.key]
        if setting.kind == "time":
            settings[setting.field] = _time(field, value)
        elif setting.kind == "rate":
            if isinstance(value, list) and not setting.per_flow:
                raise ParameterError(field, value, "one rate (packets/s, or a string with pps, bps, kbps, Mbps, Gbps)")
            settings[setting.field] = _rates(field, value, packet_bytes)
        elif setting.kind == "choice":
            settings[setting.field] = value
        elif setting.kind == "switch":
            if not isinstance(value, bool):
                raise ParameterError(field, value, "true or false")
            settings[setting.field] = value
        else:  # the class checks the range; inf is a number (e.g. TCP's receive_window = inf: no limit)
            if isinstance(value, bool) or not isinstance(value, numbers.Real) or math.isnan(value):
                raise ParameterError(field, value, "a number" + (f" ({setting.unit})" if setting.unit else ""))
            settings[setting.field] = float(value)
    with prefixed("protocol"):
        return classes[name](**settings)


def protocol_names() -> tuple[str, ...]:
    """The protocols a scenario may name: those of the catalogue with a packet-level class."""
    from ..protocols import names

    return names("packet")


def _rates(field: str, value, packet_bytes: int):
    """A rate, or a tuple of one rate per flow from a list, in packets/s."""
    def one(field, v):
        if isinstance(v, bool) or not isinstance(v, (numbers.Real, str)):
            raise ParameterError(field, v, 'a rate: packets/s, or a string with pps, bps, kbps, Mbps, Gbps')
        return parse_rate(field, v, packet_bytes)

    if isinstance(value, list):
        if not value:
            raise ParameterError(field, value, "a rate, or a non-empty list of one rate per flow")
        return tuple(one(f"{field}[{k}]", v) for k, v in enumerate(value))
    return one(field, value)



_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def toml_text(data: Mapping[str, Any]) -> str:
    """A TOML text of a scenario mapping (`Scenario.from_dict` keeps it as the scenario's text)."""

    def key(k) -> str:
        return k if _BARE_KEY.match(str(k)) else json.dumps(str(k))

    def value(v) -> str:
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, str):
            return json.dumps(v)
        if isinstance(v, numbers.Integral):
            return str(int(v))
        if isinstance(v, numbers.Real):
            v = float(v)
            return ("inf" if v > 0 else "-inf") if math.isinf(v) else ("nan" if math.isnan(v) else repr(v))
        if isinstance(v, Mapping):
            return "{ " + ", ".join(f"{key(k)} = {value(x)}" for k, x in v.items()) + " }"
        if isinstance(v, (list, tuple)):
            return "[" + ", ".join(value(x) for x in v) + "]"
        return json.dumps(str(v))

    def table(d: Mapping[str, Any], prefix: str) -> list[str]:
        lines, later = [], []
        for k, v in d.items():
            name = prefix + key(k)
            if isinstance(v, Mapping) and prefix == "":
                later += ["", f"[{name}]"] + table(v, name + ".")
            elif isinstance(v, list) and v and all(isinstance(x, Mapping) for x in v):
                for entry in v:
                    later += ["", f"[[{name}]]"] + [f"{key(a)} = {value(b)}" for a, b in entry.items()]
            else:
                lines.append(f"{key(k)} = {value(v)}")
        return lines + later

    return "\n".join(table(data, "")).strip() + "\n"
