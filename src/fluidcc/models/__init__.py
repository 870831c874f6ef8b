"""Fluid models, one module per protocol. Each model is a `fluidcc.dde.DDESystem`."""

from . import miaimd as miaimd
from . import qcp as qcp
from . import rcp as rcp
from . import xcp as xcp
from .miaimd import MIAIMD as MIAIMD
from .miaimd import MIAIMDAggregate as MIAIMDAggregate
from .qcp import QCPAggregate as QCPAggregate
from .rcp import RCPAggregate as RCPAggregate
from .xcp import EfficiencyLoop as EfficiencyLoop
from .xcp import XCPAggregate as XCPAggregate

__all__ = ["MIAIMD", "MIAIMDAggregate", "EfficiencyLoop", "QCPAggregate", "RCPAggregate", "XCPAggregate",
           "miaimd", "qcp", "rcp", "xcp"]

from ._registry import REGISTRY as REGISTRY  # noqa: E402
from ._registry import get_model as get_model  # noqa: E402

__all__ += ["REGISTRY", "get_model"]
