"""The delay-differential engine. It knows nothing about protocols.

* `solve(system, params, t_final, save_times, method=..., rtol=...)`: batched integration. The
  method is an object holding its options, checked when it is made, or its name with the options
  as keywords of `solve` (an option the method does not take is an error):
  - `RK4(steps_per_delay, max_steps_per_delay, log_space)`, "rk4": fixed-step RK4 by the method of
    steps with cubic Hermite interpolation of delayed states (order 4), jitted and vmapped with
    JAX, chunked over the batch; optional per-point refinement to a tolerance (`rtol`). The
    production solver.
  - `Chebyshev(nodes, pieces_per_delay, max_pieces_per_delay)`, "chebyshev": for models linear in
    their current state with one delay (`DDESystem.linear_form`): on each delay interval,
    variation of constants with spectral (Chebyshev-Lobatto) quadrature, the delayed state read
    at the same nodes one delay back; optional per-point refinement (more nodes, then more
    pieces per delay) to a tolerance.
  - `Reference(log_space)`, "scipy": the reference. SciPy's DOP853 by the method of steps, rtol
    1e-11, one point at a time; its error is about 1e-10 relative. For tests and benchmarks.
  - `DDEint(log_space)`, "ddeint": the `ddeint` package, for comparison only. It reads delayed
    values from an interpolation of its own past output that lags the integrator, so it misses
    sharp start-up transients by orders of magnitude.
  - "auto": the first of chebyshev, rk4 whose `supports(system, params)` is true
    (`resolve_method` says which).
* `WithHistory(system)`, `HistoryTable`, `history_table`, `tabulate_history`: a system started
  from any history given as a table (states and slopes on a grid over [-span, 0]); tabulating a
  solution's last delay at the RK4 nodes continues a solve exactly (`_history`).
* `DDESystem`: the interface a model implements; `JAX_OPS` and `projected_rate` the operations
  and the projected rate of a queue its `field_terms` use.
* `Solution`, `Status`: saved states plus a status per point; `batch_size`, `take`: the batch
  axis every solver checks the same way.

Importing fluidcc enables float64 in JAX (``jax_enable_x64``) and, on a CPU, one JAX device per
core so chunks of a batch run in parallel (see `fluidcc._jax_setup`).
"""

from .. import _jax_setup  # noqa: F401  (float64, one CPU device per core)

from ._chebyshev import Chebyshev as Chebyshev  # noqa: E402
from ._history import HistoryTable as HistoryTable  # noqa: E402
from ._history import WithHistory as WithHistory  # noqa: E402
from ._history import history_table as history_table  # noqa: E402
from ._history import tabulate_history as tabulate_history  # noqa: E402
from ._method import Method as Method  # noqa: E402
from ._reference import DDEint as DDEint  # noqa: E402
from ._reference import Reference as Reference  # noqa: E402
from ._rk4 import RK4 as RK4  # noqa: E402
from ._solution import Solution as Solution  # noqa: E402
from ._solution import Status as Status  # noqa: E402
from ._solve import DEFAULT_BATCH_CHUNK as DEFAULT_BATCH_CHUNK  # noqa: E402
from ._solve import METHODS as METHODS  # noqa: E402
from ._solve import batch_size as batch_size  # noqa: E402
from ._solve import require_linear_form as require_linear_form  # noqa: E402
from ._solve import resolve_method as resolve_method  # noqa: E402
from ._solve import solve as solve  # noqa: E402
from ._solve import take as take  # noqa: E402
from ._system import JAX_OPS as JAX_OPS  # noqa: E402
from ._system import DDESystem as DDESystem  # noqa: E402
from ._system import projected_rate as projected_rate  # noqa: E402
from ._system import to_mixed as to_mixed  # noqa: E402
from ._system import to_natural as to_natural  # noqa: E402

__all__ = ["DEFAULT_BATCH_CHUNK", "JAX_OPS", "METHODS", "RK4", "Chebyshev", "DDESystem", "DDEint", "HistoryTable",
           "Method", "Reference", "Solution", "Status", "WithHistory", "batch_size", "history_table", "projected_rate",
           "require_linear_form", "resolve_method", "solve", "tabulate_history", "take", "to_mixed", "to_natural"]
