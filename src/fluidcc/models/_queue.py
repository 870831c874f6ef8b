"""What the single-link models with a queue share: the choice of a linear or projected queue."""

from __future__ import annotations

from dataclasses import dataclass

from ..dde import DDESystem
from ..errors import ParameterError

QUEUE_MODES = ("linear", "projected")


@dataclass(frozen=True)
class QueueModel(DDESystem):
    """A model whose queue is either linear (q' = y - C, may go negative: the form linear analysis
    uses) or projected (kept >= 0, `DDESystem.nonnegative_components`)."""

    queue: str = "projected"

    def __post_init__(self):
        if self.queue not in QUEUE_MODES:
            raise ParameterError("queue", self.queue, f"one of {', '.join(QUEUE_MODES)}")

    @property
    def projected(self) -> bool:
        return self.queue == "projected"

    def linearizable(self) -> "QueueModel":
        return type(self)(queue="linear")
