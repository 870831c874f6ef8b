"""Characteristic roots of linear delay-differential equations.

For the linear DDE with constant delays

    x'(t) = A_0 x(t) + sum_k A_k x(t - tau_k),        x in R^n,

the characteristic equation is det Delta(lambda) = 0 with

    Delta(lambda) = lambda I - A_0 - sum_k A_k exp(-lambda tau_k),

and the equation is asymptotically stable iff every root has a negative real part (all its
equilibria's linearizations are of this form). The rightmost roots are computed in three steps:

1. **Collocation of the infinitesimal generator** (Breda, Maset and Vermiglio, the method of
   DDE-BIFTOOL and TRACE-DDE): the solution operator's generator acts on functions on
   [-tau_max, 0]; represented by their values at N + 1 Chebyshev points it becomes an
   n (N + 1) square matrix whose eigenvalues approximate the rightmost roots with spectral
   accuracy. Time is scaled by tau_max, so the matrix is the same for every time unit.
2. **Newton on the characteristic matrix**: each of the `n_roots` rightmost eigenvalues and its
   eigenvector seed Newton's method on Delta(lambda) v = 0, c^H v = 1, which converges to the root
   to rounding.
3. **Checks**: the relative residual of every root, and automatic refinement of N until the
   collocation provably holds every root right of the computed abscissa (see
   `characteristic_roots`).

`lambert_w_roots` gives the closed form for the scalar equation x' = a x + b x(t - tau), the
cross-check of the collocation. Everything is vectorized over a leading batch axis (a parameter
grid flattened); the eigenvalue problems of a batch run in chunks on all cores.
"""

from __future__ import annotations

import math
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import scipy.special

from ..errors import ParameterError, ShapeError

#: Relative Newton correction below which the collocation resolved a root.
DEFAULT_RESOLVE_TOL = 1e-3
#: Relative residual above which a refined root is reported as not converged.
RESIDUAL_TOL = 1e-10


@dataclass(frozen=True)
class CharacteristicRoots:
    """Rightmost characteristic roots of a batch of linear DDEs.

    roots: (B, m) complex, 1/s, sorted by decreasing real part; a root found twice (two
        eigenvalues converging to it) appears once and the slot is NaN.
    residual: (B, m) relative residual |Delta(lambda) v| / (|v| (|lambda| + |A_0| + sum |A_k|
        |exp(-lambda tau_k)|)) of each root.
    nodes: (B,) Chebyshev nodes N used for each point.
    converged: (B,) the rightmost root is verified and no root right of it can have been missed
        (see `characteristic_roots`).
    """

    roots: np.ndarray
    residual: np.ndarray
    nodes: np.ndarray
    converged: np.ndarray

    @property
    def rightmost(self) -> np.ndarray:
        """(B,) the root of largest real part, 1/s."""
        return self.roots[:, 0]

    @property
    def abscissa(self) -> np.ndarray:
        """(B,) spectral abscissa: largest real part of a root, 1/s (< 0: asymptotically stable)."""
        return self.roots[:, 0].real

    @property
    def stable(self) -> np.ndarray:
        """(B,) bool: every root has a negative real part."""
        return self.abscissa < 0.0


# ------------------------------------------------------------------------------------------------
# Chebyshev collocation


def chebyshev_points(n_nodes: int) -> np.ndarray:
    """Chebyshev points of the second kind x_j = cos(pi j / N), j = 0..N (x_0 = 1, x_N = -1)."""
    return np.cos(np.pi * np.arange(n_nodes + 1) / n_nodes)


def chebyshev_differentiation(n_nodes: int) -> np.ndarray:
    """(N+1, N+1) matrix D with (D u)_i = p'(x_i), p the interpolant of u at `chebyshev_points`.

    Off the diagonal D_ij = (c_i / c_j) (-1)^(i+j) / (x_i - x_j), c_0 = c_N = 2, else 1; the
    diagonal makes every row sum to zero (derivative of a constant), which is the accurate form.
    """
    x = chebyshev_points(n_nodes)
    c = np.ones(n_nodes + 1)
    c[0] = c[-1] = 2.0
    c *= (-1.0) ** np.arange(n_nodes + 1)
    dx = x[:, None] - x[None, :]
    np.fill_diagonal(dx, 1.0)
    d = (c[:, None] / c[None, :]) / dx
    np.fill_diagonal(d, 0.0)
    np.fill_diagonal(d, -d.sum(axis=1))
    return d


def barycentric_row(n_nodes: int, x: np.ndarray) -> np.ndarray:
    """Weights l_j(x) of the Chebyshev interpolant at points x (any shape): p(x) = sum_j l_j(x) u_j."""
    nodes = chebyshev_points(n_nodes)
    w = (-1.0) ** np.arange(n_nodes + 1)
    w[0] *= 0.5
    w[-1] *= 0.5
    x = np.asarray(x, dtype=float)[..., None]
    diff = x - nodes
    exact = diff == 0.0
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = w / diff
        rows = terms / terms.sum(axis=-1, keepdims=True)
    on_node = exact.any(axis=-1, keepdims=True)
    return np.where(on_node, exact.astype(float), rows)


def generator_matrix(a0: np.ndarray, a_delayed: np.ndarray, scaled_delays: np.ndarray, n_nodes: int) -> np.ndarray:
    """Collocation of the infinitesimal generator in time scaled by tau_max.

    a0: (B, n, n) and a_delayed: (B, K, n, n), already multiplied by tau_max; scaled_delays:
    (B, K) tau_k / tau_max in (0, 1]. Returns (B, n (N+1), n (N+1)); the state is the values at
    theta_j = (x_j - 1) / 2, node-major (block j holds the n components at theta_j).
    Block row 0 is the equation at theta = 0; block rows j >= 1 say u' = du/dtheta.
    """
    batch, n = a0.shape[0], a0.shape[1]
    size = n_nodes + 1
    d_theta = 2.0 * chebyshev_differentiation(n_nodes)  # d/dtheta on [-1, 0]
    matrix = np.zeros((batch, size, n, size, n))
    eye = np.eye(n)
    matrix[:, 1:, :, :, :] = d_theta[None, 1:, None, :, None] * eye[None, None, :, None, :]
    interp = barycentric_row(n_nodes, 1.0 - 2.0 * scaled_delays)  # (B, K, N+1)
    # block (0, j) = delta_j0 A_0 + sum_k l_j(x_k) A_k
    matrix[:, 0, :, :, :] = np.einsum("bkj,bkpq->bpjq", interp, a_delayed)
    matrix[:, 0, :, 0, :] += a0
    return matrix.reshape(batch, size * n, size * n)


# ------------------------------------------------------------------------------------------------
# Newton refinement


def characteristic_matrix(mu, a0, a_delayed, scaled_delays):
    """Delta(mu) and Delta'(mu) in scaled time for roots mu (B, m): each (B, m, n, n) complex."""
    n = a0.shape[-1]
    with np.errstate(all="ignore"):
        phase = np.exp(-mu[..., None] * scaled_delays[:, None, :])  # (B, m, K)
    delayed = np.einsum("bmk,bkpq->bmpq", phase, a_delayed)
    derivative = np.einsum("bmk,bk,bkpq->bmpq", phase, scaled_delays, a_delayed)
    eye = np.eye(n)
    delta = mu[..., None, None] * eye - a0[:, None] - delayed
    return delta, eye + derivative


def _null_vector(mu, a0, a_delayed, scaled_delays):
    """(B, m, n) right singular vector of Delta(mu) for its smallest singular value (Newton's seed)."""
    delta, _ = characteristic_matrix(mu, a0, a_delayed, scaled_delays)
    finite = np.all(np.isfinite(delta), axis=(-2, -1))
    _, _, vh = np.linalg.svd(np.where(finite[..., None, None], delta, 0.0))
    return vh[..., -1, :].conj()


def _balance(a0, a_delayed, sweeps=8):
    """Diagonal similarity D^-1 A D making rows and columns of |A_0| + sum |A_k| comparable.

    The roots do not change; the norms in the node bound (see `characteristic_roots`) shrink when
    the states have very different units (a queue in packets beside a rate in packets/s).
    """
    weight = np.abs(a0) + np.abs(a_delayed).sum(axis=1)
    n = a0.shape[-1]
    scale = np.ones(a0.shape[:1] + (n,))
    eye = np.eye(n, dtype=bool)
    weight = np.where(eye, 0.0, weight)
    for _ in range(sweeps):
        for i in range(n):  # one index at a time (updating all at once oscillates)
            row = np.sum(weight[:, i, :] * scale, axis=1) / scale[:, i]
            col = np.sum(weight[:, :, i] / scale, axis=1) * scale[:, i]
            ok = (row > 0) & (col > 0)
            scale[:, i] *= np.where(ok, np.sqrt(row / np.where(ok, col, 1.0)), 1.0)
    ratio = scale[:, None, :] / scale[:, :, None]  # D^-1 A D has entries A_ij d_j / d_i
    return a0 * ratio, a_delayed * ratio[:, None]


def _newton(mu, v, a0, a_delayed, scaled_delays, iterations=20):
    """Newton on Delta(mu) v = 0, c^H v = 1 (c the normalized initial vector), vectorized.

    mu: (B, m), v: (B, m, n). Each root stops when its correction is below 1e-14 relative; roots
    whose iteration leaves the finite numbers become NaN.
    """
    batch, m, n = v.shape
    norm = np.linalg.norm(v, axis=-1, keepdims=True)
    v = (v / np.where(norm > 0, norm, 1.0)).reshape(batch * m, n)
    c = v.conj()
    mu = mu.reshape(-1).copy()
    owner = np.repeat(np.arange(batch), m)
    active = np.flatnonzero(np.isfinite(mu))
    for _ in range(iterations):
        if active.size == 0:
            break
        b = owner[active]
        delta, d_delta = characteristic_matrix(mu[active, None], a0[b], a_delayed[b], scaled_delays[b])
        delta, d_delta = delta[:, 0], d_delta[:, 0]
        va, ca = v[active], c[active]
        rhs = np.concatenate([-(delta @ va[..., None])[..., 0], (1.0 - np.sum(ca * va, axis=-1))[:, None]], axis=-1)
        jac = np.zeros((active.size, n + 1, n + 1), dtype=complex)
        jac[:, :n, :n] = delta
        jac[:, :n, n] = (d_delta @ va[..., None])[..., 0]
        jac[:, n, :n] = ca
        with np.errstate(all="ignore"):
            finite = np.all(np.isfinite(jac), axis=(-2, -1)) & np.all(np.isfinite(rhs), axis=-1)
            safe_jac = np.where(finite[:, None, None], jac, np.eye(n + 1))
            safe_rhs = np.where(finite[:, None], rhs, 0.0)
            try:
                step = np.linalg.solve(safe_jac, safe_rhs[..., None])[..., 0]
            except np.linalg.LinAlgError:
                step = _solve_each(safe_jac, safe_rhs)
            v[active] = va + step[:, :n]
            mu[active] = np.where(finite, mu[active] + step[:, n], np.nan)
            done = ~np.isfinite(mu[active]) | (np.abs(step[:, n]) <= 1e-14 * (1.0 + np.abs(mu[active])))
        active = active[~done]
    return mu.reshape(batch, m), v.reshape(batch, m, n)


def _solve_each(jac, rhs):
    """Solve stacked systems one by one, NaN where singular (np.linalg.solve fails on the stack)."""
    out = np.full(rhs.shape, np.nan, dtype=complex)
    flat_j = jac.reshape(-1, *jac.shape[-2:])
    flat_r = rhs.reshape(-1, rhs.shape[-1])
    flat_o = out.reshape(-1, rhs.shape[-1])
    for i in range(flat_j.shape[0]):
        try:
            flat_o[i] = np.linalg.solve(flat_j[i], flat_r[i])
        except np.linalg.LinAlgError:
            pass
    return out


def _residual(mu, v, a0, a_delayed, scaled_delays):
    delta, _ = characteristic_matrix(mu, a0, a_delayed, scaled_delays)
    with np.errstate(all="ignore"):
        phase = np.abs(np.exp(-mu[..., None] * scaled_delays[:, None, :]))
    scale = (
        np.abs(mu)
        + np.linalg.norm(a0, 2, axis=(-2, -1))[:, None]
        + np.einsum("bmk,bk->bm", phase, np.linalg.norm(a_delayed, 2, axis=(-2, -1)))
    )
    num = np.linalg.norm((delta @ v[..., None])[..., 0], axis=-1)
    den = np.linalg.norm(v, axis=-1) * np.where(scale > 0, scale, 1.0)
    with np.errstate(all="ignore"):
        return np.where(np.isfinite(mu), num / den, np.inf)


# ------------------------------------------------------------------------------------------------
# the solver


def _check_system(a0, a_delayed, delays):
    a0 = np.asarray(a0, dtype=float)
    a_delayed = np.asarray(a_delayed, dtype=float)
    delays = np.asarray(delays, dtype=float)
    if a0.ndim == 2:
        a0, a_delayed, delays = a0[None], a_delayed[None], delays[None]
    if a0.ndim != 3 or a0.shape[1] != a0.shape[2]:
        raise ShapeError("a0", a0.shape, "shape (n, n) or (batch, n, n)")
    batch, n = a0.shape[0], a0.shape[1]
    if batch == 0:
        raise ShapeError("a0", a0.shape, "a batch of at least one point")
    if delays.ndim != 2 or delays.shape[0] != batch or delays.shape[1] == 0:
        raise ShapeError("delays", delays.shape, f"shape (K,) or ({batch}, K) with K >= 1 delays")
    k = delays.shape[1]
    if a_delayed.shape != (batch, k, n, n):
        raise ShapeError("a_delayed", a_delayed.shape, f"shape ({k}, {n}, {n}) or ({batch}, {k}, {n}, {n}): one matrix per delay")
    if not np.all(np.isfinite(delays)) or np.any(delays <= 0):
        bad = delays[~(np.isfinite(delays) & (delays > 0))][0]
        raise ParameterError("delays", float(bad), "finite delays > 0 seconds")
    for name, value in (("a0", a0), ("a_delayed", a_delayed)):
        if not np.all(np.isfinite(value)):
            raise ParameterError(name, "a non-finite entry", "finite matrices")
    return a0, a_delayed, delays


def characteristic_roots(
    a0,
    a_delayed,
    delays,
    *,
    n_roots: int = 4,
    nodes: int = 8,
    max_nodes: int = 256,
    resolve_tol: float = DEFAULT_RESOLVE_TOL,
    guarantee_from: float | None = None,
    chunk: int = 512,
    workers: int | None = None,
) -> CharacteristicRoots:
    """Rightmost roots of x' = A_0 x + sum_k A_k x(t - tau_k) for a batch of systems.

    a0: (n, n) or (B, n, n); a_delayed: (K, n, n) or (B, K, n, n); delays: (K,) or (B, K) seconds.
    n_roots: how many of the rightmost collocation eigenvalues are refined and returned.
    nodes: Chebyshev nodes N to start with; max_nodes: the most a point may use.
    resolve_tol: largest relative Newton correction of the rightmost root for which the
        collocation counts as having resolved it.
    guarantee_from: None (default) guarantees that no root right of the reported abscissa is
        missing. A number g (1/s) only guarantees that no root with Re lambda >= g is missing:
        enough for a stability verdict with g = 0, and much cheaper for strongly damped points,
        whose reported abscissa is then the rightmost root found (the true one lies between it
        and g when it is below g).
    workers: threads running the eigenvalue problems (default: all cores).
    Returns `CharacteristicRoots`; roots in 1/s.

    Why no root right of the reported abscissa is missed: in time scaled by tau_max, a root mu
    with Re mu >= sigma satisfies |mu| <= R(sigma) = |A_0| + sum_k |A_k| exp(-sigma tau_k / tau_max)
    (take norms in mu v = A_0 v + sum_k A_k exp(-mu tau_k / tau_max) v). Its eigenfunction
    exp(mu theta) on [-1, 0] is resolved by N >= R / 2 + 1.6 sqrt(R) + 2 Chebyshev nodes (measured:
    interpolation error <= 1e-4 for |mu| <= R, ample for Newton to converge from the eigenvalue). A point is converged when its N meets that bound
    at sigma = its computed abscissa, Newton moved the rightmost eigenvalue by at most
    `resolve_tol` (relative), and the rightmost root's residual is <= `RESIDUAL_TOL`; otherwise it
    is recomputed with more nodes (1.25x per level, or the bound), up to `max_nodes`. Each point
    starts at the nodes the bound asks for at sigma = 0 (at least `nodes`). The roots
    after the first are verified roots (residual), but roots far left of the abscissa may be
    missing from the list.
    """
    a0, a_delayed, delays = _check_system(a0, a_delayed, delays)
    for name, value, low in (("n_roots", n_roots, 1), ("nodes", nodes, 2), ("max_nodes", max_nodes, nodes)):
        if int(value) != value or value < low:
            raise ParameterError(name, value, f"a whole number >= {low}")
    if not resolve_tol > 0:
        raise ParameterError("resolve_tol", resolve_tol, "a number > 0")
    batch = a0.shape[0]
    tau_max = delays.max(axis=1)
    scaled_a0, scaled_ad = _balance(a0 * tau_max[:, None, None], a_delayed * tau_max[:, None, None, None])
    scaled_delays = delays / tau_max[:, None]
    norm_a0 = np.linalg.norm(scaled_a0, 2, axis=(-2, -1))
    norm_ad = np.linalg.norm(scaled_ad, 2, axis=(-2, -1))

    roots = np.full((batch, n_roots), np.nan, dtype=complex)
    residual = np.full((batch, n_roots), np.inf)
    used = np.zeros(batch, dtype=int)
    converged = np.zeros(batch, dtype=bool)
    ladder = [nodes]
    while ladder[-1] < max_nodes:
        ladder.append(min(max_nodes, int(math.ceil(ladder[-1] * 1.25))))
    if guarantee_from is not None and not np.isfinite(guarantee_from):
        raise ParameterError("guarantee_from", guarantee_from, "None or a finite number, 1/s")
    floor = -np.inf if guarantee_from is None else guarantee_from * tau_max  # scaled time
    # Start each point at the nodes its roots with Re >= max(0, floor) need.
    start = np.maximum(0.0, floor) if guarantee_from is not None else np.zeros(batch)
    first = _nodes_needed(norm_a0 + np.sum(norm_ad * np.exp(-start[..., None] * scaled_delays), axis=1))
    assigned = np.clip(np.searchsorted(ladder, first, side="left"), 0, len(ladder) - 1)
    workers = workers or os.cpu_count() or 1
    for step, level in enumerate(ladder):
        pending = np.flatnonzero(assigned == step)
        if pending.size == 0:
            continue
        mu, res, moved = _solve_level(
            scaled_a0[pending], scaled_ad[pending], scaled_delays[pending], level, n_roots, chunk, workers
        )
        roots[pending], residual[pending], used[pending] = mu, res, level
        sigma = np.maximum(mu[:, 0].real, floor if np.ndim(floor) == 0 else floor[pending])
        with np.errstate(all="ignore"):
            bound = norm_a0[pending] + np.sum(norm_ad[pending] * np.exp(-sigma[:, None] * scaled_delays[pending]), axis=1)
            needed = _nodes_needed(bound)
        finite = np.isfinite(mu[:, 0])
        # below the floor the root need not be resolved by the collocation, only verified
        resolved = (moved <= resolve_tol) | (mu[:, 0].real < (floor if np.ndim(floor) == 0 else floor[pending]))
        ok = finite & resolved & (res[:, 0] <= RESIDUAL_TOL) & (needed <= level)
        converged[pending] = ok
        # the next level: at least one rung up, and at least the bound when it is known
        target = np.where(finite & np.isfinite(needed), needed, level + 1)
        rung = np.searchsorted(ladder, target, side="left")
        assigned[pending[~ok]] = np.clip(np.maximum(rung[~ok], step + 1), step + 1, len(ladder))
    return CharacteristicRoots(
        roots=roots / tau_max[:, None], residual=residual, nodes=used, converged=converged
    )


def _nodes_needed(bound):
    """Chebyshev nodes resolving exp(mu theta) on [-1, 0] for |mu| <= bound (error <= 1e-4)."""
    return np.ceil(0.5 * bound + 1.6 * np.sqrt(bound) + 2.0)


def _solve_level(a0, ad, sd, n_nodes, n_roots, chunk, workers):
    """Collocation + Newton for one node count, chunked over the batch and threads."""
    batch = a0.shape[0]
    starts = list(range(0, batch, chunk))

    def one(start):
        sl = slice(start, start + chunk)
        return _collocate_and_refine(a0[sl], ad[sl], sd[sl], n_nodes, n_roots)

    if workers > 1 and len(starts) > 1:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            parts = list(pool.map(one, starts))
    else:
        parts = [one(s) for s in starts]
    return tuple(np.concatenate(p) for p in zip(*parts))


def _collocate_and_refine(a0, ad, sd, n_nodes, n_roots):
    """Rightmost roots (sorted, verified) and the relative Newton correction of the rightmost one."""
    matrix = generator_matrix(a0, ad, sd, n_nodes)
    values = np.linalg.eigvals(matrix)
    m = min(n_roots, values.shape[1])
    order = np.argsort(-values.real, axis=1, kind="stable")[:, :m]
    mu0 = np.take_along_axis(values, order, axis=1)
    v0 = _null_vector(mu0, a0, ad, sd)
    mu, v = _newton(mu0.copy(), v0, a0, ad, sd)
    res = _residual(mu, v, a0, ad, sd)
    # the rightmost collocation eigenvalue against the root Newton took it to
    with np.errstate(all="ignore"):
        moved = np.abs(mu[:, 0] - mu0[:, 0]) / (1.0 + np.abs(mu[:, 0]))
    moved = np.where(np.isfinite(moved), moved, np.inf)
    unverified = ~(res <= RESIDUAL_TOL)
    mu = np.where(unverified, np.nan, mu)
    res = np.where(unverified, np.inf, res)
    mu, res = _dedupe_and_sort(mu, res)
    if m < n_roots:
        pad = n_roots - m
        mu = np.concatenate([mu, np.full((mu.shape[0], pad), np.nan, dtype=complex)], axis=1)
        res = np.concatenate([res, np.full((res.shape[0], pad), np.inf)], axis=1)
    return mu, res, moved


def _dedupe_and_sort(mu, res):
    """Drop roots found twice (NaN), then sort by decreasing real part with NaN last."""
    mu = mu.copy()
    m = mu.shape[1]
    for i in range(1, m):
        close = np.abs(mu[:, :i] - mu[:, i : i + 1]) <= 1e-8 * (1.0 + np.abs(mu[:, i : i + 1]))
        mu[np.any(close, axis=1), i] = np.nan
    key = np.where(np.isfinite(mu), -mu.real, np.inf)
    order = np.argsort(key, axis=1, kind="stable")
    mu, res = np.take_along_axis(mu, order, axis=1), np.take_along_axis(res, order, axis=1)
    # A conjugate pair in a fixed order: the member with Im >= 0 first.
    for i in range(m - 1):
        pair = np.abs(mu[:, i] - mu[:, i + 1].conj()) <= 1e-8 * (1.0 + np.abs(mu[:, i]))
        swap = pair & (mu[:, i].imag < mu[:, i + 1].imag)
        mu[swap, i], mu[swap, i + 1] = mu[swap, i + 1], mu[swap, i].copy()
        res[swap, i], res[swap, i + 1] = res[swap, i + 1], res[swap, i].copy()
    return mu, res


# ------------------------------------------------------------------------------------------------
# closed form for the scalar equation


def lambert_w_roots(a, b, tau, branches=range(-3, 4)) -> np.ndarray:
    """Roots of lambda = a + b exp(-lambda tau) (x' = a x + b x(t - tau)) by the Lambert W function.

    lambda_k = a + W_k(b tau exp(-a tau)) / tau for each branch k. a, b, tau broadcast; returns
    shape broadcast + (len(branches),), 1/s. For real a and b the principal branch k = 0 gives the
    rightmost root (Shinozaki and Mori, Automatica 2006).
    """
    a, b, tau = np.broadcast_arrays(*(np.asarray(v, dtype=float) for v in (a, b, tau)))
    if np.any(tau <= 0):
        raise ParameterError("tau", float(tau[tau <= 0].flat[0]), "delays > 0 seconds")
    z = b * tau * np.exp(-a * tau)
    out = [a + scipy.special.lambertw(z, k) / tau for k in branches]
    return np.stack(out, axis=-1)
