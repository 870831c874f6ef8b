"""RTT estimation and retransmission timeout shared by the closed-loop sources (RFC 6298)."""

from __future__ import annotations

import jax.numpy as jnp


def rtt_update(srtt, rttvar, rto, sample, first, more, min_rto, max_rto):
    """One RFC 6298 step per flow: `first` takes the sample as srtt (rttvar = sample / 2), `more`
    blends it in (gains 1/8 and 1/4). RTO = srtt + max(one slot, 4 rttvar), within [min_rto,
    max_rto]; unchanged where there is no sample. All in slots. Returns (srtt, rttvar, rto)."""
    srtt_new = jnp.where(first, sample, jnp.where(more, 0.875 * srtt + 0.125 * sample, srtt))
    rttvar_new = jnp.where(first, sample / 2, jnp.where(more, 0.75 * rttvar + 0.25 * jnp.abs(srtt - sample), rttvar))
    fresh = jnp.clip(srtt_new + jnp.maximum(1.0, 4.0 * rttvar_new), min_rto, max_rto)
    return srtt_new, rttvar_new, jnp.where(first | more, fresh, rto)
