"""The protocol catalogue: one entry per protocol, read by every front end.

A toy protocol defined in this module alone (a single-link fluid model, a network model and a
packet source) plus one `register` call appears in `fluidcc models`, `fluidcc simulate`, the
scenario parser and the docs table, with nothing else edited.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from click.testing import CliRunner

from fluidcc import protocols
from fluidcc.cli import main
from fluidcc.dde import DDESystem
from fluidcc.errors import ParameterError
from fluidcc.models import ParameterSpec, SingleLinkModel
from fluidcc.network import Flow, Link, Network
from fluidcc.packet.exact import ExactProtocol

README = Path(__file__).resolve().parents[1] / "README.md"


# ----------------------------------------------------------------- the toy protocol, one module
@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class ToyParams:
    gain: jax.Array
    capacity_pps: jax.Array
    rtt_s: jax.Array


@dataclass(frozen=True)
class ToyLoop(DDESystem):
    """r'(t) = -(gain / d) (r(t - d) - C): a rate that closes on the capacity one RTT late."""

    name = "toy"

    def state_size(self, params):
        return 1

    def state_names(self, params):
        return ["rate"]

    def delay_terms(self, params):
        return [params.rtt_s]

    def history(self, t, params):
        return jnp.stack([0.5 * params.capacity_pps + 0.0 * t])

    def vector_field(self, t, x, x_delayed, params):
        return -(params.gain / params.rtt_s) * (x_delayed[0] - params.capacity_pps)

    def equilibrium_state(self, params):
        return np.asarray(params.capacity_pps, dtype=np.float64).reshape(-1, 1)


def _toy_params(values):
    gain = np.asarray(values["gain"], dtype=np.float64)
    if np.any(gain <= 0):
        raise ParameterError("gain", float(gain.min()), "a gain > 0")
    return ToyParams(gain=gain, capacity_pps=np.asarray(values["capacity"], dtype=np.float64),
                     rtt_s=np.asarray(values["rtt"], dtype=np.float64))


TOY_SINGLE_LINK = SingleLinkModel(
    name="toy", description="a toy rate loop", observed="rate", observed_unit="packets/s",
    parameters=(ParameterSpec("gain", "number", 0.5, "loop gain > 0"),
                ParameterSpec("capacity", "rate", 1000.0, "link capacity C", "capacity_pps"),
                ParameterSpec("rtt", "time", 0.1, "round-trip time", "rtt_s")),
    aggregate=lambda values: (ToyLoop(), _toy_params(values)),
)


@dataclass(frozen=True)
class ToySource:
    """A packet source with a number, a time and a choice among its settings."""

    gain: float = 1.0
    interval_s: float = 0.1
    name = "toy"
    header_size = 0


TOY = protocols.Protocol(name="toy", description="a toy protocol for the catalogue's test", paper="none, eq. (0)",
                         single_link=TOY_SINGLE_LINK, packet=ToySource, stability_plane=("gain=0.1:2:4", "rtt=10ms:1s:3"))


@pytest.fixture
def toy():
    protocols.register(TOY)
    yield TOY
    protocols.unregister("toy")


# ----------------------------------------------------------------------------------- tests
def test_a_registered_protocol_appears_in_every_front_end(toy, tmp_path):
    assert "toy" in protocols.names() and "toy" in protocols.names("packet") and "toy" not in protocols.names("network")
    runner = CliRunner()
    listing = runner.invoke(main, ["models"])
    assert listing.exit_code == 0, listing.output
    assert "toy: a toy rate loop" in listing.output and re.search(r"gain +default 0.5", listing.output)
    assert "toy [protocol]" in listing.output and re.search(r"interval +default 0.1", listing.output)

    result = runner.invoke(main, ["simulate", "toy", "--set", "gain=0.4", "--set", "capacity=8Mbps",
                                  "--duration", "3s", "--format", "csv", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "equilibrium 1000" in result.output
    rates = np.loadtxt(tmp_path / "timeseries.csv", delimiter=",", skiprows=1, usecols=1)
    assert abs(rates[-1] / 1000.0 - 1) < 1e-3  # 8 Mb/s of 1000-byte packets, reached

    bad = runner.invoke(main, ["simulate", "toy", "--set", "gain=-1", "--out", str(tmp_path / "bad")])
    assert bad.exit_code == 2 and "gain = -1" in bad.output

    from fluidcc.packet.scenario import Scenario

    scenario = Scenario.from_dict({"duration": "1s", "network": {"links": [{"name": "l", "capacity": "8Mbps", "delay": "10ms"}],
                                                                 "flows": [{"name": "f", "route": ["l"]}]},
                                   "protocol": {"name": "toy", "gain": 2.0, "interval": "50ms"}})
    assert scenario.protocol == ToySource(gain=2.0, interval_s=0.05)
    with pytest.raises(ParameterError, match="bogus") as error:
        Scenario.from_dict({"duration": "1s", "network": {"links": [{"name": "l", "capacity": 1000.0}],
                                                          "flows": [{"name": "f", "route": ["l"]}]},
                            "protocol": {"name": "toy", "bogus": 1}})
    assert "gain" in str(error.value) and "interval" in str(error.value)

    table = protocols.markdown_table()
    assert "| `toy` | a toy protocol for the catalogue's test | none, eq. (0) | yes | - | `ToySource` |" in table


def test_a_registered_protocol_is_swept_and_mapped(toy, tmp_path):
    from fluidcc.sweep import SweepSpec, parse_grid, run_stability, run_sweep

    spec = SweepSpec(model="toy", axes=(parse_grid("toy", "gain=0.2:1.2:3"), parse_grid("toy", "rtt=50ms:200ms:2")),
                     fixed={}, horizon_rtts=60.0, saves_per_rtt=4, steps_per_delay=16, rtol=None)
    data = run_sweep(spec)
    assert (data["behaviour"].values <= 1).all()  # converged or converging: gain < pi / 2 is stable
    lin = run_stability(spec, "linear", tmp_path)
    assert (lin["linear_stable"].values == 1).all()


def test_the_readme_table_is_the_catalogue():
    assert protocols.markdown_table() in README.read_text()


def test_every_protocol_lives_in_some_layer_and_its_models_build():
    for name in protocols.names():
        protocol = protocols.get_protocol(name)
        assert protocol.layers()
        if protocol.single_link is not None:
            values = {k: np.asarray([v]) for k, v in protocol.single_link.defaults().items()}
            system, params = protocol.single_link.aggregate(values)
            assert protocol.single_link.observed in system.state_names(jax.tree_util.tree_map(lambda a: a[0], params))
        if protocol.network is not None:
            network = Network((Link("l", 1000.0, 0.01),), (Flow("f", ("l",)),))
            system, params, values = protocol.network.build(network)
            assert set(values) == set(protocol.network.parameters)
        if protocol.packet is not None:  # a protocol of the exact engine, which scenarios run
            assert protocol.packet_class().name == name
            assert issubclass(protocol.packet_class(), ExactProtocol)
            assert protocol.packet.startswith("fluidcc.packet.exact_protocols.")


def _just_outside_and_inside(spec):
    """Values just outside and just inside each finite end of spec's range."""
    low, high = spec.bounds()
    step = (lambda a: 1.0) if spec.kind == "count" else (lambda a: 1e-9 * max(1.0, abs(a)))
    pairs = []
    if low is not None:
        a, closed = low
        pairs.append((a - step(a), a) if closed else (a, a + step(a)))
    if high is not None:
        b, closed = high
        pairs.append((b + step(b), b) if closed else (b, b - step(b)))
    return pairs


SINGLE_LINK_PARAMETERS = [(name, spec) for name in protocols.names("single_link")
                          for spec in protocols.single_link_model(name).parameters]


@pytest.mark.parametrize("model, spec", SINGLE_LINK_PARAMETERS,
                         ids=[f"{name}-{spec.name}" for name, spec in SINGLE_LINK_PARAMETERS])
def test_a_declared_range_is_what_the_model_accepts(model, spec):
    """The range a spec declares (shown by `fluidcc models`) is the one its builder enforces: a
    value just outside each end is an error naming the parameter, the end or just inside is not."""
    assert spec.range, f"{model}.{spec.name} declares no range"
    assert spec.contains(spec.default)
    entry = protocols.single_link_model(model)
    pairs = _just_outside_and_inside(spec)
    assert pairs
    for outside, inside in pairs:
        assert not spec.contains(outside) and spec.contains(inside)
        values = {k: np.asarray([v]) for k, v in entry.defaults().items()}
        values[spec.name] = np.asarray([outside])
        with pytest.raises(ParameterError) as error:
            entry.aggregate(values)
        assert error.value.field in (spec.name, spec.field_name), (spec.name, error.value)
        values[spec.name] = np.asarray([inside])
        entry.aggregate(values)


@pytest.mark.parametrize("bad", ["0..1", "> x", "(0, 1", "=> 0"])
def test_a_range_of_unknown_form_is_an_error(bad):
    with pytest.raises(ParameterError) as error:
        ParameterSpec("gain", "number", 0.5, "a gain", range=bad)
    assert error.value.field == "parameter gain: range" and "(a, b]" in error.value.allowed
    with pytest.raises(ParameterError, match="default"):
        ParameterSpec("gain", "number", -1.0, "a gain", range="> 0")


@pytest.mark.parametrize("call, field, allowed", [
    (lambda: protocols.get_protocol("sctp"), "protocol", "miaimd, vcp, xcp, ixcp, rcp, qcp, tcp, open_loop"),
    (lambda: protocols.single_link_model("tcp"), "model", "tcp has: packet"),
    (lambda: protocols.network_model("tcp", field="MODEL"), "MODEL", "miaimd, xcp, ixcp, rcp, qcp"),
    (lambda: protocols.get_protocol("rcp").single_link.parameter("kappa"), "parameter", "alpha, beta"),
    (lambda: protocols.network_model("xcp").build(Network((Link("l", 1.0, 0.01),), (Flow("f", ("l",)),)),
                                                  {"kappa": 1.0}), "parameter", "alpha, beta, gamma"),
    (lambda: protocols.register(protocols.get_protocol("rcp")), "protocol", "a name not yet in the catalogue"),
    (lambda: protocols.Protocol("Bad Name", "d", "p", packet="x:y"), "name", "lower-case"),
    (lambda: protocols.Protocol("empty", "d", "p"), "protocol empty", "at least one of"),
    (lambda: protocols.names("fluid"), "layer", "single_link, network, packet"),
])
def test_bad_names_are_errors_naming_the_field_and_listing_what_is_allowed(call, field, allowed):
    with pytest.raises(ParameterError) as error:
        call()
    assert error.value.field == field and allowed in error.value.allowed


def test_unknown_protocols_on_the_command_line(tmp_path):
    runner = CliRunner()
    for args in (["simulate", "sctp"], ["sweep", "sctp"], ["stability", "tcp", "--method", "linear"],
                 ["simulate", "tcp", "--network", "x.toml"]):
        result = runner.invoke(main, args + ["--out", str(tmp_path)])
        assert result.exit_code == 2, (args, result.output)
        assert "model = " in result.output and "miaimd" in result.output, (args, result.output)
