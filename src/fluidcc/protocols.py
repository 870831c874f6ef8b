"""The protocol catalogue: one entry per protocol, read by every front end.

Each `Protocol` names what fluidcc has of a protocol in each layer: its single-link fluid model
with the parameters a user sets (`fluidcc.models.SingleLinkModel`), its fluid model on a network
(`fluidcc.models.NetworkModel`), its packet-level source and router class, the paper and
equations it implements and the default plane of its stability map. The command line (`fluidcc
models`, `simulate`, `sweep`, `stability`, `packet`), the single runs and sweeps
(`fluidcc.runs`, `fluidcc.sweep`) and the packet scenario parser (`fluidcc.packet.scenario`)
read it; none keeps a list of protocols of its own.

Adding a protocol is one module per layer it lives in (a fluid model in `fluidcc.models`, a packet
sender and router for the exact engine in `fluidcc.packet.exact_protocols`) plus one
`register(Protocol(...))` here (or in the caller's own module, for a protocol kept outside
fluidcc). The packet class is named by its import path ("package.module:Class"), resolved when it
is used, since the packet layer sits below this one; scenario files and `fluidcc packet` run it on
the exact engine (`fluidcc.packet.simulate_exact`).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

from .errors import ParameterError
from .models import NetworkModel, SingleLinkModel, miaimd, miaimd_network, qcp, qcp_network, rcp, rcp_network, xcp
from .models import xcp_network


@dataclass(frozen=True)
class Protocol:
    """One protocol, as every layer of fluidcc knows it.

    name: the name users type (`fluidcc simulate NAME`, ``[protocol] name`` in a scenario file).
    description: one line. paper: the paper and equations the models implement.
    single_link: its single-link fluid model (`fluidcc.models.SingleLinkModel`), or None.
    network: its per-flow fluid model on a `Network` (`fluidcc.models.NetworkModel`), or None.
    packet: its packet-level sender/router class for the exact engine (`fluidcc.packet.exact.ExactProtocol`,
        a dataclass whose fields are its settings: `fluidcc.packet.settings`), as "module:Class" or
        the class itself, or None.
    stability_plane: the default ``--grid`` texts of `fluidcc stability NAME` (needs a single-link
        model), or None.
    """

    name: str
    description: str
    paper: str
    single_link: SingleLinkModel | None = None
    network: NetworkModel | None = None
    packet: str | type | None = None
    stability_plane: tuple[str, ...] | None = None

    def __post_init__(self):
        if not self.name or not self.name.replace("_", "").isalnum() or self.name != self.name.lower():
            raise ParameterError("name", self.name, "a lower-case name of letters, digits and _")
        if self.single_link is None and self.network is None and self.packet is None:
            raise ParameterError(f"protocol {self.name}", "no model", "at least one of single_link, network, packet")
        if self.stability_plane is not None and self.single_link is None:
            raise ParameterError(f"protocol {self.name}: stability_plane", self.stability_plane,
                                 "a stability plane only for a protocol with a single-link model")

    def packet_class(self) -> type:
        """The packet-level source/router class (imported on first use)."""
        if self.packet is None:
            raise ParameterError("protocol", self.name, "a protocol with a packet-level model: "
                                 + ", ".join(names("packet")))
        if isinstance(self.packet, str):
            module, _, attribute = self.packet.partition(":")
            return getattr(importlib.import_module(module), attribute)
        return self.packet

    def layers(self) -> tuple[str, ...]:
        """The layers the protocol lives in, among "single_link", "network", "packet"."""
        return tuple(layer for layer in LAYERS if getattr(self, layer) is not None)


#: The layers a protocol may have, as `names(layer)` takes them.
LAYERS = ("single_link", "network", "packet")

PROTOCOLS: dict[str, Protocol] = {}


def register(protocol: Protocol, *, replace: bool = False) -> Protocol:
    """Add a protocol to the catalogue (an error if its name is taken, unless `replace`)."""
    if not isinstance(protocol, Protocol):
        raise ParameterError("protocol", type(protocol).__name__, "a fluidcc.protocols.Protocol")
    if protocol.name in PROTOCOLS and not replace:
        raise ParameterError("protocol", protocol.name, "a name not yet in the catalogue: "
                             + ", ".join(PROTOCOLS))
    PROTOCOLS[protocol.name] = protocol
    return protocol


def unregister(name: str) -> None:
    """Remove a protocol from the catalogue (for protocols registered at run time, e.g. in tests)."""
    get_protocol(name)
    del PROTOCOLS[name]


def names(layer: str | None = None) -> tuple[str, ...]:
    """The protocols' names, in catalogue order; with `layer`, those that live in it."""
    if layer is not None and layer not in LAYERS:
        raise ParameterError("layer", layer, f"one of {', '.join(LAYERS)}")
    return tuple(name for name, p in PROTOCOLS.items() if layer is None or getattr(p, layer) is not None)


_LAYER_WORDS = {None: "a protocol", "single_link": "a protocol with a single-link fluid model",
                "network": "a protocol with a fluid model on a network",
                "packet": "a protocol with a packet-level model"}


def get_protocol(name: str, layer: str | None = None, *, field: str = "protocol") -> Protocol:
    """The catalogue entry of `name`; with `layer`, it must live in that layer.

    Raises ParameterError naming `field`, the value and the names allowed."""
    allowed = names(layer)
    if name not in allowed:
        hint = ""
        if name in PROTOCOLS:
            have = ", ".join(PROTOCOLS[name].layers()).replace("_", "-")
            hint = f" ({name} has: {have})"
        raise ParameterError(field, name, f"{_LAYER_WORDS[layer]}: {', '.join(allowed)}{hint}")
    return PROTOCOLS[name]


def markdown_table() -> str:
    """The catalogue as a Markdown table (the README's protocol table is this text)."""
    rows = ["| protocol | description | paper | single link | network | packet |", "| --- | --- | --- | --- | --- | --- |"]
    for p in PROTOCOLS.values():
        packet = p.packet if isinstance(p.packet, str) else getattr(p.packet, "__qualname__", None)
        cells = [f"`{p.name}`", p.description, p.paper, "yes" if p.single_link else "-",
                 "yes" if p.network else "-", f"`{packet.split(':')[-1]}`" if packet else "-"]
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows)


def single_link_model(name: str, *, field: str = "model") -> SingleLinkModel:
    """The single-link fluid model of protocol `name` (an error naming `field` if it has none)."""
    return get_protocol(name, "single_link", field=field).single_link


def network_model(name: str, *, field: str = "model") -> NetworkModel:
    """The fluid model on a network of protocol `name` (an error naming `field` if it has none)."""
    return get_protocol(name, "network", field=field).network


#: `fluidcc stability` on the gain plane of an aggregate loop.
_GAIN_PLANE = ("alpha=0:1.6:200", "beta=0:1.2:200")

for _protocol in (
    Protocol("miaimd", "VCP's MIAIMD fluid model: MI below, AI near, MD above the target load",
             "VCP paper, eqs. (10)-(14) (one link), (16) (network)", single_link=miaimd.SINGLE_LINK,
             network=miaimd_network.ON_NETWORK, stability_plane=("kappa=0.05:3:200", "rtt=10ms:1s:200:log")),
    Protocol("vcp", "VCP: a 2-bit load factor code from the routers, MI/AI/MD at the senders (fluid model: miaimd)",
             "VCP paper, eqs. (1)-(9), Fig. 2", packet="fluidcc.packet.exact_protocols.vcp:VCP"),
    Protocol("xcp", "XCP: efficiency and fairness controllers in every router",
             "iXCP paper, eqs. (1)-(2); XCP, SIGCOMM 2002", single_link=xcp.SINGLE_LINK,
             network=xcp_network.XCP_ON_NETWORK, packet="fluidcc.packet.exact_protocols.xcp:XCP",
             stability_plane=_GAIN_PLANE),
    Protocol("ixcp", "iXCP: XCP with shuffling only among the flows bottlenecked at the link",
             "iXCP paper, eq. (3)", network=xcp_network.IXCP_ON_NETWORK,
             packet="fluidcc.packet.exact_protocols.xcp:IXCP"),
    Protocol("rcp", "RCP: one explicit rate per link, updated from spare capacity and queue",
             "RCP paper, eq. (2)", single_link=rcp.SINGLE_LINK, network=rcp_network.ON_NETWORK,
             packet="fluidcc.packet.exact_protocols.rcp:RCP", stability_plane=_GAIN_PLANE),
    Protocol("qcp", "QCP: one explicit rate per link from the count of the flows' rates",
             "QCP paper, eqs. (4), (12), (14), (19)", single_link=qcp.SINGLE_LINK, network=qcp_network.ON_NETWORK,
             packet="fluidcc.packet.exact_protocols.qcp:QCP", stability_plane=_GAIN_PLANE),
    Protocol("tcp", "TCP NewReno, the baseline", "RFC 6582 (NewReno); RCP paper, section 3.1",
             packet="fluidcc.packet.exact_protocols.tcp:TCP"),
    Protocol("open_loop", "open-loop sources (Poisson or constant rate), no congestion control", "-",
             packet="fluidcc.packet.exact_protocols.open_loop:OpenLoop"),
):
    register(_protocol)
del _protocol
