"""Every proof script in proofs/ runs cleanly, and a broken claim makes a proof fail."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

PROOFS_DIR = Path(__file__).resolve().parents[1] / "proofs"
PROOF_SCRIPTS = sorted(PROOFS_DIR.glob("*.py"))


def _load_proof(name: str) -> ModuleType:
    """Import proofs/<name>.py as a module without running its main()."""
    path = PROOFS_DIR / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"proofs_{name}", path)
    assert spec is not None and spec.loader is not None, f"cannot load {path}"
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def vcp_theorem1() -> ModuleType:
    return _load_proof("vcp_theorem1")


@pytest.mark.parametrize("script", PROOF_SCRIPTS, ids=[path.name for path in PROOF_SCRIPTS])
def test_proof_script_passes(script: Path) -> None:
    result = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=600
    )
    assert result.returncode == 0, f"{script.name} failed:\n{result.stdout}\n{result.stderr}"
    assert "ok" in result.stdout


def test_wrong_equilibrium_is_rejected(vcp_theorem1: ModuleType) -> None:
    theorem = vcp_theorem1
    # Forgetting the 1/kappa in the additive term of eq. (14)'s equilibrium.
    wrong_w_star = theorem.gamma * theorem.C * theorem.T + theorem.N * theorem.alpha
    with pytest.raises(AssertionError, match="step 1"):
        theorem.check_equilibrium(claimed_w_star=wrong_w_star)


def test_wrong_rate_is_rejected(vcp_theorem1: ModuleType) -> None:
    theorem = vcp_theorem1
    wrong_rate = theorem.gamma * theorem.C / theorem.N + theorem.alpha / theorem.kappa
    with pytest.raises(AssertionError, match="r_i"):
        theorem.check_equilibrium(claimed_r_i_star=wrong_rate)


def test_wrong_fixed_point_of_eq17_is_rejected(vcp_theorem1: ModuleType) -> None:
    theorem = vcp_theorem1
    wrong_y_star = 1 / (1 - theorem.k2)
    with pytest.raises(AssertionError, match="step 3"):
        theorem.check_shifted_form(claimed_y_star=wrong_y_star)
    with pytest.raises(AssertionError, match="step 4"):
        theorem.check_lyapunov_derivative(claimed_y_star=wrong_y_star)


def test_wrong_integrand_is_rejected(vcp_theorem1: ModuleType) -> None:
    theorem = vcp_theorem1
    u = theorem.PAPER_G_INTEGRAND.free_symbols.pop()
    wrong_integrand = (1 - theorem.sp.exp(-u)) * theorem.sp.exp(1 - theorem.sp.exp(-u))
    with pytest.raises(AssertionError, match="step 5"):
        theorem.check_exponential_inequality(claimed_integrand=wrong_integrand)


def test_too_large_kappa_bound_is_rejected(vcp_theorem1: ModuleType) -> None:
    # kappa <= 3/4 does not force either lemma's hypothesis (take a = 1/2, kappa = 3/4).
    with pytest.raises(AssertionError, match="step 6"):
        vcp_theorem1.check_lemma_cover(kappa_bound=vcp_theorem1.sp.Rational(3, 4))


def test_paper_steps_pass_in_process(vcp_theorem1: ModuleType) -> None:
    # The cheap steps, in-process, so a coverage run sees the proof code too.
    for step in (
        vcp_theorem1.check_equilibrium,
        vcp_theorem1.check_change_of_variables,
        vcp_theorem1.check_shifted_form,
        vcp_theorem1.check_lemma_cover,
    ):
        assert step().startswith("step")


@pytest.fixture(scope="module")
def xcp_stability() -> ModuleType:
    return _load_proof("xcp_stability")


@pytest.fixture(scope="module")
def miaimd_linear() -> ModuleType:
    return _load_proof("miaimd_linear")


def test_xcp_stability_wrong_quasipolynomial_is_rejected(xcp_stability: ModuleType) -> None:
    proof = xcp_stability
    sp, lam, d = proof.sp, proof.LAMBDA, proof.d
    # beta / d instead of beta / d^2 in front of the delayed queue term.
    wrong = lam**2 + (proof.alpha / d) * lam * sp.exp(-lam * d) + (proof.beta / d) * sp.exp(-lam * d)
    with pytest.raises(AssertionError, match="step 2"):
        proof.check_quasipolynomial(claimed=wrong)


def test_xcp_stability_wrong_endpoint_is_rejected(xcp_stability: ModuleType) -> None:
    proof = xcp_stability
    with pytest.raises(AssertionError, match="step 4"):
        proof.check_endpoint(claimed_alpha_max=proof.sp.pi / 4)
    # Extending the line beta = sqrt(2) alpha^2 past pi / (4 sqrt 2) crosses the boundary.
    with pytest.raises(AssertionError, match="step 5"):
        proof.check_line_below_boundary(claimed_alpha_max=proof.sp.Rational(3, 5), grid_size=50)


def test_miaimd_linear_wrong_delayed_gain_is_rejected(miaimd_linear: ModuleType) -> None:
    proof = miaimd_linear
    # Dropping kappa from b = kappa gamma C / w*.
    wrong_b = proof.gamma * proof.C / proof.PAPER_W_STAR
    with pytest.raises(AssertionError, match="step 2"):
        proof.check_linearization(claimed_b=wrong_b)


def test_miaimd_linear_wrong_limit_is_rejected(miaimd_linear: ModuleType) -> None:
    proof = miaimd_linear
    with pytest.raises(AssertionError, match="step 3"):
        proof.check_d_subdivision(claimed_limit=proof.sp.pi)
    # b T < 2 is not sufficient: the boundary B_b(A) comes down to pi/2.
    with pytest.raises(AssertionError, match="step 5"):
        proof.check_sufficient_conditions(claimed_bound=2)


@pytest.fixture(scope="module")
def xcp_two_link() -> ModuleType:
    return _load_proof("xcp_two_link")


def test_xcp_two_link_wrong_limit_is_rejected(xcp_two_link: ModuleType) -> None:
    # Without the shuffling (gamma = 0) XCP would fill the link; the limit is not 1.
    with pytest.raises(AssertionError, match="step 2"):
        xcp_two_link.check_xcp_limit(claimed_limit=lambda s: 1)
    # The iXCP paper's 24 Mb/s is the limit; 55 Mb/s (max-min) is not XCP's.
    with pytest.raises(AssertionError, match="step 2"):
        xcp_two_link.check_xcp_limit(claimed_short_limit=55)


def test_xcp_two_link_wrong_ixcp_rate_is_rejected(xcp_two_link: ModuleType) -> None:
    with pytest.raises(AssertionError, match="step 3"):
        xcp_two_link.check_ixcp(claimed_short=lambda s: s["c_a"] / 2)


# ---------------------------------------------------------------- proofs/rcp_qcp_equilibria.py
@pytest.fixture(scope="module")
def rcp_qcp() -> ModuleType:
    return _load_proof("rcp_qcp_equilibria")


def test_every_step_passes_in_process(rcp_qcp: ModuleType, capsys: pytest.CaptureFixture[str]) -> None:
    rcp_qcp.main()
    lines = capsys.readouterr().out.splitlines()
    assert lines[-1] == "ok"
    assert len(lines) == len(rcp_qcp.STEPS) + 1
    assert all(line.startswith(f"step {k} (") for k, line in enumerate(lines[:-1], start=1))


def test_wrong_rcp_rate_is_rejected(rcp_qcp: ModuleType) -> None:
    with pytest.raises(AssertionError, match="step 1"):
        rcp_qcp.check_rcp_equilibrium(claimed_rate=rcp_qcp.C / (rcp_qcp.N + 1))


def test_wrong_rcp_queue_is_rejected(rcp_qcp: ModuleType) -> None:
    with pytest.raises(AssertionError, match=r"step 1 \(RCP equilibrium\): q\*"):
        rcp_qcp.check_rcp_equilibrium(claimed_queue=rcp_qcp.alpha * rcp_qcp.C * rcp_qcp.d / rcp_qcp.beta)


def test_wrong_flow_count_is_rejected(rcp_qcp: ModuleType) -> None:
    with pytest.raises(AssertionError, match="step 2"):
        rcp_qcp.check_qcp_counts_flows(claimed_count=rcp_qcp.N - 1)


def test_wrong_qcp_rate_is_rejected(rcp_qcp: ModuleType) -> None:
    with pytest.raises(AssertionError, match="step 2"):
        rcp_qcp.check_qcp_counts_flows(claimed_rate=rcp_qcp.C / (rcp_qcp.N + 1), max_flows=2)


def test_processor_share_is_not_the_efficient_share(rcp_qcp: ModuleType) -> None:
    with pytest.raises(AssertionError, match="step 3"):
        rcp_qcp.check_es_example(claimed_share=rcp_qcp.sp.Rational(100, 3))


def test_processor_sharing_is_not_qcps_fixed_point(rcp_qcp: ModuleType) -> None:
    # PS would divide X among all m + n flows, leaving what the remote flows cannot use idle.
    with pytest.raises(AssertionError, match="step 4"):
        rcp_qcp.check_qcp_fills_link(claimed_rate=lambda available, remote, n: available / (len(remote) + n),
                                   sizes=((1, 1),))
    # Forgetting to subtract the remote flows' traffic.
    with pytest.raises(AssertionError, match="step 4"):
        rcp_qcp.check_qcp_fills_link(claimed_rate=lambda available, remote, n: available / n, sizes=((2, 1),))
