"""The delay-differential engine. It knows nothing about protocols.

* `solve(system, params, t_final, save_times, method="rk4")`: batched integration.
  - "rk4": fixed-step RK4 by the method of steps with cubic Hermite interpolation of delayed
    states (order 4), jitted and vmapped with JAX, chunked over the batch; optional per-point
    refinement to a tolerance (`rtol`). The production solver.
  - "chebyshev": for models linear in their current state with one delay
    (`DDESystem.linear_form`): on each delay interval, variation of constants with spectral
    (Chebyshev-Lobatto) quadrature, the delayed state read at the same nodes one delay back;
    optional per-point refinement (more nodes, then more pieces per delay) to a tolerance.
  - "scipy": the reference. SciPy's DOP853 by the method of steps, rtol 1e-11, one point at a
    time; its error is about 1e-10 relative. For tests and benchmarks.
  - "ddeint": the `ddeint` package, for comparison only. It reads delayed values from an
    interpolation of its own past output that lags the integrator, so it misses sharp
    start-up transients by orders of magnitude.
* `DDESystem`: the interface a model implements.
* `Solution`, `Status`: saved states plus a status per point.

Importing fluidcc enables float64 in JAX (``jax_enable_x64``) and, on a CPU, one JAX device per
core so chunks of a batch run in parallel (see `fluidcc._jax_setup`).
"""

from .. import _jax_setup  # noqa: F401  (float64, one CPU device per core)

from ._solution import Solution as Solution  # noqa: E402
from ._solution import Status as Status  # noqa: E402
from ._solve import METHODS as METHODS  # noqa: E402
from ._solve import batch_size as batch_size  # noqa: E402
from ._solve import solve as solve  # noqa: E402
from ._solve import take as take  # noqa: E402
from ._system import DDESystem as DDESystem  # noqa: E402
from ._system import to_mixed as to_mixed  # noqa: E402
from ._system import to_natural as to_natural  # noqa: E402

__all__ = ["DDESystem", "METHODS", "Solution", "Status", "batch_size", "solve", "take", "to_mixed", "to_natural"]
