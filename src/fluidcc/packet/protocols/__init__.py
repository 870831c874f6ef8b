"""Sources of the packet simulator, one small module per protocol.

A protocol is an object the engine (`fluidcc.packet.engine`) calls inside its scan (JAX):

* ``params(network, layout, timing, tables)``: its parameters as a pytree, in slots and packets;
* ``init(params, flows) -> state``: the per-flow state (a pytree of arrays);
* ``step(state, params, flows, t, acks, budget, key) -> (state, Send)``: at slot t, having
  received ``acks`` (`engine.Acks`), what each flow sends: one batch of consecutive packets, or a
  SYN (`engine.Send`), within ``budget`` packets (its interface's speed);
* ``header_size``: how many header fields its packets carry; protocols with routers add
  ``router_init(params, n_links)``, ``stamp(router, params, link, header)``,
  ``router_step(router, params, t, links)`` and optionally ``observe(router, params)``.

A protocol is a frozen dataclass whose fields are its settings (`fluidcc.packet.settings`). The
catalogue `fluidcc.protocols`, scenario files and `fluidcc packet` use the exact engine's
protocols (`fluidcc.packet.exact_protocols`), not these.
"""

from ..settings import FieldSettings as FieldSettings
from ..settings import SettingField as SettingField
from ..settings import scenario_keys as scenario_keys
from ..settings import setting_fields as setting_fields

from .open_loop import OpenLoop as OpenLoop
from .qcp import QCP as QCP
from .rcp import RCP as RCP
from .tcp import TCP as TCP

__all__ = ["FieldSettings", "OpenLoop", "QCP", "RCP", "SettingField", "TCP", "scenario_keys", "setting_fields"]
