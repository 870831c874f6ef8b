"""proofs/rcp_qcp_equilibria.py: the papers' claims pass step by step, and wrong claims are rejected."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

PROOFS_DIR = Path(__file__).resolve().parents[1] / "proofs"


def _load_proof(name: str) -> ModuleType:
    """Import proofs/<name>.py as a module without running its main()."""
    path = PROOFS_DIR / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"proofs_{name}", path)
    assert spec is not None and spec.loader is not None, f"cannot load {path}"
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def proof() -> ModuleType:
    return _load_proof("rcp_qcp_equilibria")


def test_every_step_passes_in_process(proof: ModuleType, capsys: pytest.CaptureFixture[str]) -> None:
    proof.main()
    lines = capsys.readouterr().out.splitlines()
    assert lines[-1] == "ok"
    assert len(lines) == len(proof.STEPS) + 1
    assert all(line.startswith(f"step {k} (") for k, line in enumerate(lines[:-1], start=1))


def test_wrong_rcp_rate_is_rejected(proof: ModuleType) -> None:
    with pytest.raises(AssertionError, match="step 1"):
        proof.check_rcp_equilibrium(claimed_rate=proof.C / (proof.N + 1))


def test_wrong_rcp_queue_is_rejected(proof: ModuleType) -> None:
    with pytest.raises(AssertionError, match=r"step 1 \(RCP equilibrium\): q\*"):
        proof.check_rcp_equilibrium(claimed_queue=proof.alpha * proof.C * proof.d / proof.beta)


def test_wrong_flow_count_is_rejected(proof: ModuleType) -> None:
    with pytest.raises(AssertionError, match="step 2"):
        proof.check_qcp_counts_flows(claimed_count=proof.N - 1)


def test_wrong_qcp_rate_is_rejected(proof: ModuleType) -> None:
    with pytest.raises(AssertionError, match="step 2"):
        proof.check_qcp_counts_flows(claimed_rate=proof.C / (proof.N + 1), max_flows=2)


def test_processor_share_is_not_the_efficient_share(proof: ModuleType) -> None:
    with pytest.raises(AssertionError, match="step 3"):
        proof.check_es_example(claimed_share=proof.sp.Rational(100, 3))


def test_processor_sharing_is_not_qcps_fixed_point(proof: ModuleType) -> None:
    # PS would divide X among all m + n flows, leaving what the remote flows cannot use idle.
    with pytest.raises(AssertionError, match="step 4"):
        proof.check_qcp_fills_link(claimed_rate=lambda available, remote, n: available / (len(remote) + n),
                                   sizes=((1, 1),))
    # Forgetting to subtract the remote flows' traffic.
    with pytest.raises(AssertionError, match="step 4"):
        proof.check_qcp_fills_link(claimed_rate=lambda available, remote, n: available / n, sizes=((2, 1),))
