"""Fluid models, one module per protocol. Each model is a `fluidcc.dde.DDESystem`.

A model module also says how the front ends use it: `SINGLE_LINK` (a `SingleLinkModel`: the
parameters a user sets, with units and defaults, and how to build the model from them) or
`ON_NETWORK` (a `NetworkModel`); the protocol catalogue `fluidcc.protocols` names them.

`vcp_rounds` is no fluid model: it is VCP's discrete MI/AI/MD round model behind Theorems 3 and 4."""

from . import miaimd as miaimd
from . import miaimd_network as miaimd_network
from . import qcp as qcp
from . import qcp_network as qcp_network
from . import rcp as rcp
from . import rcp_network as rcp_network
from . import vcp_rounds as vcp_rounds
from . import xcp as xcp
from . import xcp_network as xcp_network
from .miaimd import MIAIMD as MIAIMD
from .miaimd import MIAIMDAggregate as MIAIMDAggregate
from .miaimd_network import MIAIMDNetwork as MIAIMDNetwork
from .qcp import QCPAggregate as QCPAggregate
from .qcp_network import QCPNetwork as QCPNetwork
from .rcp import RCPAggregate as RCPAggregate
from .rcp_network import RCPNetwork as RCPNetwork
from .xcp import EfficiencyLoop as EfficiencyLoop
from .xcp import XCPAggregate as XCPAggregate
from .xcp_network import XCPNetwork as XCPNetwork

__all__ = ["MIAIMD", "MIAIMDAggregate", "MIAIMDNetwork", "EfficiencyLoop", "QCPAggregate", "QCPNetwork",
           "RCPAggregate", "RCPNetwork", "XCPAggregate", "XCPNetwork", "miaimd", "miaimd_network", "qcp",
           "qcp_network", "rcp", "rcp_network", "vcp_rounds", "xcp", "xcp_network"]

from ._spec import NetworkModel as NetworkModel  # noqa: E402
from ._spec import ParameterSpec as ParameterSpec  # noqa: E402
from ._spec import SingleLinkModel as SingleLinkModel  # noqa: E402

__all__ += ["NetworkModel", "ParameterSpec", "SingleLinkModel"]
