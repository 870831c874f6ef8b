"""Stability analysis: nonlinear maps from simulation (and, in later modules, linear analysis)."""

from .classify import BEHAVIOUR_NAMES as BEHAVIOUR_NAMES
from .classify import Behaviour as Behaviour
from .classify import Classification as Classification
from .classify import Thresholds as Thresholds
from .classify import classify as classify

__all__ = ["BEHAVIOUR_NAMES", "Behaviour", "Classification", "Thresholds", "classify"]
