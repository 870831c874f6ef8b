"""Fluid models, one module per protocol. Each model is a `fluidcc.dde.DDESystem`."""

from . import miaimd as miaimd
from .miaimd import MIAIMD as MIAIMD
from .miaimd import MIAIMDAggregate as MIAIMDAggregate

__all__ = ["MIAIMD", "MIAIMDAggregate", "miaimd"]
