"""A point's status from its first overflow and first NaN times (`fluidcc.dde._solution.statuses`)."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from fluidcc.dde import Status
from fluidcc.dde._solution import statuses as _statuses

times = st.one_of(st.just(np.inf), st.floats(0.0, 100.0))


@given(st.lists(st.tuples(times, times, st.booleans()), max_size=40), st.booleans())
def test_the_first_failure_decides_and_only_failures_get_a_message(points, as_integers):
    over, nan, missed = (np.array([p[k] for p in points], dtype=float) for k in range(3))
    # the tolerance flags are read as true or false per point, also when given as 0 / 1
    missed = missed.astype(int) if as_integers else missed.astype(bool)
    status, messages = _statuses(over, nan, missed)
    assert status.shape == messages.shape == (len(points),)
    for i, (o, n, m) in enumerate(points):
        if np.isfinite(o) and o <= n:  # overflowed first (or at the same node as the NaN)
            assert status[i] == Status.OVERFLOW and messages[i].startswith("overflow")
            assert f"{o:.6g} s" in messages[i]
        elif np.isfinite(n):
            assert status[i] == Status.NONFINITE and messages[i].startswith("non-finite")
            assert f"{n:.6g} s" in messages[i]
        elif m:
            assert status[i] == Status.TOLERANCE_NOT_REACHED and messages[i].startswith("tolerance")
        else:
            assert status[i] == Status.OK and messages[i] == ""
