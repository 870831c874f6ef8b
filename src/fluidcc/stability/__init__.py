"""Stability analysis: characteristic roots of linearizations and nonlinear maps from simulation."""

from .classify import BEHAVIOUR_NAMES as BEHAVIOUR_NAMES
from .classify import Behaviour as Behaviour
from .classify import Classification as Classification
from .classify import Thresholds as Thresholds
from .classify import classify as classify
from .classify import settled as settled
from .linear import CharacteristicRoots as CharacteristicRoots
from .linear import characteristic_roots as characteristic_roots
from .linear import lambert_w_roots as lambert_w_roots

__all__ = [
    "BEHAVIOUR_NAMES",
    "Behaviour",
    "CharacteristicRoots",
    "Classification",
    "Thresholds",
    "characteristic_roots",
    "classify",
    "lambert_w_roots",
    "settled",
]
