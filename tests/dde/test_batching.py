"""How a batch is cut into chunks for the devices (`fluidcc.dde._batching.chunk_width`)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from fluidcc.dde._batching import chunk_width


def rounds_of(size: int, devices: int, width: int) -> int:
    """Rounds of chunks when chunks of `width` are dealt to the devices in turn."""
    chunks = -(-size // width)
    return -(-chunks // devices)


@given(size=st.integers(1, 200_000), devices=st.integers(1, 8), cap_log2=st.integers(0, 12),
       smallest=st.sampled_from([1, 16]))
def test_width_respects_the_cap_and_keeps_every_device_busy(size, devices, cap_log2, smallest):
    cap = 1 << cap_log2
    width = chunk_width(size, devices, cap, smallest)
    assert 1 <= width <= cap
    # no more rounds than the cap itself needs: the devices share the batch evenly
    assert rounds_of(size, devices, width) == -(-size // (devices * cap))
    # the padded work per device exceeds its share by at most an eighth of the cap per round
    # (or by the padding up to `smallest`, a power of two, for tiny batches)
    share = -(-size // devices)
    rounds = rounds_of(size, devices, width)
    slack = max(cap // 8, min(smallest, cap), 1)
    assert rounds * width <= share + rounds * slack


@given(size=st.integers(1, 200_000), devices=st.integers(1, 8), cap_log2=st.integers(0, 12))
def test_width_is_a_power_of_two_or_a_multiple_of_an_eighth_of_the_cap(size, devices, cap_log2):
    cap = 1 << cap_log2
    width = chunk_width(size, devices, cap)
    assert width & (width - 1) == 0 or width % max(1, cap // 8) == 0


def test_a_batch_smaller_than_the_smallest_chunk_is_not_padded_up_to_it():
    assert chunk_width(3, 2, 1024, smallest=16) == 4
    assert chunk_width(1, 2, 1024, smallest=16) == 1
    # a larger batch is not cut below `smallest`
    assert chunk_width(40, 2, 1024, smallest=16) == 32


def test_the_refinement_passes_of_the_benchmark_are_balanced():
    # a pass of 2 486 points at 1 024 per chunk on two devices: four chunks of 640, two per
    # device, instead of three of 1 024 (two on one device, one padded on the other)
    assert chunk_width(2486, 2, 1024) == 640
    assert chunk_width(10_000, 2, 1024) == 1024
    assert chunk_width(104, 2, 64) == 56
