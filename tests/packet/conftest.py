"""Fixtures of the packet tests."""

import numpy as np
import pytest


@pytest.fixture
def conserved():
    """A check of an exact-engine dataset: every data packet is delivered, dropped or in flight;
    every packet sent (data or SYN) is dropped, back at its sender as an ACK, or still in the
    network; links drop what they do not take."""
    def check(run):
        np.testing.assert_array_equal(run.sent, run.delivered + run.dropped + run.in_flight)
        np.testing.assert_array_equal(run.packets_sent,
                                      run.dropped + run.control_dropped + run.acks_received + run.held)
        np.testing.assert_array_equal(run.link_arrived, run.link_accepted + run.link_dropped)
    return check
