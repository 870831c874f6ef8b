"""The fluid models on a network take one capacity per link: a network whose links have capacity
schedules is refused at every entry point (naming the link and `schedule`, pointing at
`network.at(t_s)`), never run on the capacities before the schedules start."""

from __future__ import annotations

import pytest

from fluidcc import protocols
from fluidcc.errors import NetworkError
from fluidcc.models import MIAIMDNetwork, QCPNetwork, RCPNetwork, XCPNetwork
from fluidcc.models import miaimd_network, qcp_network, rcp_network, xcp_network
from fluidcc.network import Flow, Link, Network
from fluidcc.runs import network_model, simulate_network

SCHEDULE = ((2.0, 2500.0), (4.0, 500.0))


def scheduled() -> Network:
    links = (Link("l1", 1250.0, 0.02), Link("l2", 1250.0, 0.02, schedule=SCHEDULE))
    return Network(links, (Flow("f", ("l1", "l2")), Flow("g", ("l2",))))


def check_refusal(call) -> None:
    with pytest.raises(NetworkError) as caught:
        call(scheduled())
    assert caught.value.field == "link 'l2': schedule" and caught.value.value == SCHEDULE
    assert "network.at(t_s)" in str(caught.value)
    call(scheduled().at(3.0))  # the network at one time is accepted


@pytest.mark.parametrize("name", protocols.names("network"))
def test_every_network_model_of_the_catalogue_refuses_schedules(name):
    entry = protocols.network_model(name)
    check_refusal(entry.build)
    check_refusal(entry.system)
    check_refusal(entry.params)
    check_refusal(lambda net: network_model(name, net))


@pytest.mark.parametrize(
    "system",
    [MIAIMDNetwork, lambda net: XCPNetwork(net, "xcp"), lambda net: XCPNetwork(net, "ixcp"), RCPNetwork, QCPNetwork,
     lambda net: QCPNetwork(net, variant="simplified"), lambda net: RCPNetwork(net, accounting=True)],
    ids=["miaimd", "xcp", "ixcp", "rcp", "qcp", "qcp_simplified", "rcp_accounting"],
)
def test_every_network_system_refuses_schedules(system):
    check_refusal(system)


@pytest.mark.parametrize("module", [miaimd_network, xcp_network, rcp_network, qcp_network],
                         ids=lambda m: m.__name__.rsplit(".", 1)[-1])
def test_parameters_refuse_schedules_even_with_given_capacities(module):
    """The system would refuse the network anyway; the parameters say so at once."""
    check_refusal(module.network_params)
    check_refusal(lambda net: module.network_params(net, capacity_pps=[1250.0, 2500.0]))


def test_a_run_refuses_schedules():
    check_refusal(lambda net: simulate_network("xcp", net, duration_s=0.5))
