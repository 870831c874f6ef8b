"""A packet protocol's settings are its dataclass fields: what a scenario file sets, what
`settings()` reports, and what `fluidcc models` lists all come from them (the protocols of
`fluidcc.packet.exact_protocols`).

The unit of a field is in its name, in the fluidcc way: ``tau_s`` is a time (the scenario key
``tau``, "10ms" or seconds), ``rate_pps`` a rate (the key ``rate``, "10Mbps" or packets/s; a
field with metadata ``per_flow=True`` also takes a list of one rate per flow and reports a list);
a field of type ``str`` is a choice, checked by the class; a field of type ``bool`` a switch (true
or false); any other field is a number, whose unit, if it has one, is its metadata ``unit``
(``field(default=2.0, metadata={"unit": "segments"})``). A default of None is chosen per run, per
link unless the metadata ``none`` says otherwise (``metadata={"none": "the packet size"}``).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

#: Field-name suffixes and the kind of quantity they mark (the scenario key drops the suffix).
SUFFIX_KINDS = {"_s": "time", "_pps": "rate"}
#: The unit of each kind of setting that has one.
KIND_UNITS = {"time": "s", "rate": "packets/s"}


@dataclasses.dataclass(frozen=True)
class SettingField:
    """One setting of a packet protocol: its scenario key, dataclass field, kind ("time", "rate",
    "choice", "switch" or "number"), default, unit ("" for none) and, for a default of None, what
    the run takes instead."""

    key: str
    field: str
    kind: str
    default: Any
    per_flow: bool = False
    unit: str = ""
    none: str = "per link"


def setting_fields(protocol_class: type) -> tuple[SettingField, ...]:
    """The settings of a packet protocol class (a dataclass), in field order."""
    if not dataclasses.is_dataclass(protocol_class):
        raise TypeError(f"{protocol_class!r} is not a dataclass: a packet protocol's settings are its fields")
    found = []
    for f in dataclasses.fields(protocol_class):
        key, kind = f.name, {str: "choice", "str": "choice", bool: "switch", "bool": "switch"}.get(f.type, "number")
        for suffix, suffix_kind in SUFFIX_KINDS.items():
            if f.name.endswith(suffix):
                key, kind = f.name[: -len(suffix)], suffix_kind
        default = f.default if f.default is not dataclasses.MISSING else None
        unit = KIND_UNITS.get(kind, f.metadata.get("unit", ""))
        found.append(SettingField(key, f.name, kind, default, bool(f.metadata.get("per_flow", False)), unit,
                                  f.metadata.get("none", "per link")))
    return tuple(found)


def scenario_keys(protocol_class: type) -> dict[str, Any]:
    """{scenario key: default} of a packet protocol class (None: no default, or chosen per run)."""
    return {s.key: s.default for s in setting_fields(protocol_class)}


def settings(protocol) -> dict:
    """A protocol object's settings by field name (per-flow fields as lists), for provenance."""
    values = {}
    for s in setting_fields(type(protocol)):
        value = getattr(protocol, s.field)
        values[s.field] = np.atleast_1d(value).tolist() if s.per_flow else value
    return values


class FieldSettings:
    """Mixin: `settings()` of a packet protocol dataclass, from its fields."""

    def settings(self) -> dict:
        return settings(self)
