"""Units at the edges: fluidcc is SI inside (seconds, packets, packets per second).

One packet is 1000 bytes unless a caller says otherwise (``packet_bytes``).
Strings with a unit suffix are accepted wherever a user types a quantity:

* rates: ``bps``, ``kbps``, ``Mbps``, ``Gbps`` (bits per second) and ``pps`` (packets per second);
* times: ``s``, ``ms``, ``us``;
* plain numbers are taken in the field's SI unit (packets per second, seconds).
"""

from __future__ import annotations

import re

from .errors import UnitError

DEFAULT_PACKET_BYTES = 1000

_RATE_FACTORS_BPS = {"bps": 1.0, "kbps": 1e3, "mbps": 1e6, "gbps": 1e9}
_TIME_FACTORS_S = {"s": 1.0, "ms": 1e-3, "us": 1e-6}
_NUMBER_UNIT = re.compile(r"^\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*([A-Za-z/]*)\s*$")


def mbps_to_pps(mbps: float, packet_bytes: int = DEFAULT_PACKET_BYTES) -> float:
    """Convert megabits per second to packets per second."""
    return mbps * 1e6 / (8.0 * packet_bytes)


def pps_to_mbps(pps: float, packet_bytes: int = DEFAULT_PACKET_BYTES) -> float:
    """Convert packets per second to megabits per second."""
    return pps * 8.0 * packet_bytes / 1e6


def ms_to_s(ms: float) -> float:
    """Convert milliseconds to seconds."""
    return ms * 1e-3


def bdp_packets(capacity_pps: float, rtt_s: float) -> float:
    """Bandwidth-delay product in packets: capacity (packets/s) times round-trip time (s)."""
    return capacity_pps * rtt_s


def _split(field: str, text: str) -> tuple[float, str]:
    match = _NUMBER_UNIT.match(text)
    if not match:
        raise UnitError(field, text, "a number optionally followed by a unit, e.g. 150Mbps or 80ms")
    return float(match.group(1)), match.group(2).lower()


def parse_rate(field: str, value: float | str, packet_bytes: int = DEFAULT_PACKET_BYTES) -> float:
    """Read a rate in packets per second from a number (pps) or a string such as ``"150Mbps"``."""
    if not isinstance(value, str):
        return float(value)
    number, unit = _split(field, value)
    if unit in ("", "pps", "pkt/s"):
        return number
    if unit in _RATE_FACTORS_BPS:
        return number * _RATE_FACTORS_BPS[unit] / (8.0 * packet_bytes)
    raise UnitError(field, value, "a rate unit among pps, bps, kbps, Mbps, Gbps")


def parse_time(field: str, value: float | str) -> float:
    """Read a time in seconds from a number (s) or a string such as ``"80ms"``."""
    if not isinstance(value, str):
        return float(value)
    number, unit = _split(field, value)
    if unit == "":
        return number
    if unit in _TIME_FACTORS_S:
        return number * _TIME_FACTORS_S[unit]
    raise UnitError(field, value, "a time unit among s, ms, us")


def parse_number(field: str, value: float | str) -> float:
    """Read a dimensionless number."""
    if not isinstance(value, str):
        return float(value)
    number, unit = _split(field, value)
    if unit:
        raise UnitError(field, value, "a plain number without a unit")
    return number
