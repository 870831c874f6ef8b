"""fluidcc: analysis of explicit congestion control (VCP/MIAIMD, RCP, QCP, XCP, iXCP, TCP).

Three views of one network description: delay-differential fluid models integrated in batches
with JAX, analysis (equilibria, stability) checked with SymPy, and a packet-level simulator.
"""

from ._version import __version__ as __version__
from . import dde as dde
from . import errors as errors
from . import maxmin as maxmin
from . import models as models
from . import network as network
from . import sharing as sharing
from . import units as units

__all__ = ["__version__", "dde", "errors", "maxmin", "models", "network", "sharing", "units"]
