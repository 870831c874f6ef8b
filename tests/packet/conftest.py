"""Fixtures of the packet tests."""

import numpy as np
import pytest


@pytest.fixture
def conserved():
    """A check of an exact-engine dataset: every data packet is delivered, dropped or in flight;
    every packet sent (data, SYN, handshake ACK) is dropped, back at its sender as an ACK, a
    handshake ACK that reached its receiver, or still in the network; links drop what they do not
    take."""
    def check(run):
        np.testing.assert_array_equal(run.sent, run.delivered + run.dropped + run.in_flight)
        np.testing.assert_array_equal(run.packets_sent,
                                      run.dropped + run.control_dropped + run.acks_received
                                      + run.handshake_acks + run.held)
        np.testing.assert_array_equal(run.link_arrived, run.link_accepted + run.link_dropped)
    return check
