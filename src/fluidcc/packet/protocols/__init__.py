"""Sources of the packet simulator, one small module per protocol.

A protocol is an object with three pure functions the engine calls inside its scan (JAX):

* ``init(params, n_flows) -> state``: the per-flow state (a pytree of arrays);
* ``step(state, params, t, acks, key) -> (state, wanted)``: at slot t, having received ``acks``
  (F,) acknowledgements this slot, how many new packets each flow wants to send (F,);
* ``sent(state, params, sent, wanted) -> state``: how many of them the engine placed.

``params`` is a pytree the protocol builds (in slots and packets), so a batch of parameter points
is a ``vmap`` over it.
"""

from .open_loop import OpenLoop as OpenLoop

__all__ = ["OpenLoop"]
