"""Protocols of the exact engine (`fluidcc.packet.exact`), one small module each: senders that
handle each ACK and timer at its own instant, and routers that see each packet."""

from .open_loop import OpenLoop as OpenLoop
from .qcp import QCP as QCP
from .rcp import RCP as RCP
from .tcp import TCP as TCP
from .vcp import VCP as VCP
from .xcp import IXCP as IXCP
from .xcp import XCP as XCP


__all__ = ["IXCP", "OpenLoop", "QCP", "RCP", "TCP", "VCP", "XCP"]
