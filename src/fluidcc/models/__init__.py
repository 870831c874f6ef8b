"""Fluid models, one module per protocol. Each model is a `fluidcc.dde.DDESystem`."""

from . import miaimd as miaimd
from .miaimd import MIAIMD as MIAIMD
from .miaimd import MIAIMDAggregate as MIAIMDAggregate

__all__ = ["MIAIMD", "MIAIMDAggregate", "miaimd"]

from ._registry import REGISTRY as REGISTRY  # noqa: E402
from ._registry import get_model as get_model  # noqa: E402

__all__ += ["REGISTRY", "get_model"]
