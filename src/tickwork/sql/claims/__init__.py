"""Claim strategies: each one small, documented unit, so they can be benchmarked fairly."""

from __future__ import annotations

from .advisory import AdvisoryClaim
from .base import CLAIMED_COLUMNS, RUN_COLUMNS, ClaimedRow, ClaimRequest, ClaimSQL, ClaimStrategy, run_started_at
from .mark import MarkClaim
from .optimistic import OptimisticClaim
from .skip_locked import SkipLockedClaim
from .unique_fire import UniqueFireClaim

STRATEGIES: dict[str, type[ClaimStrategy]] = {
    cls.name: cls for cls in (SkipLockedClaim, OptimisticClaim, UniqueFireClaim, AdvisoryClaim, MarkClaim)
}

__all__ = [
    "CLAIMED_COLUMNS",
    "RUN_COLUMNS",
    "STRATEGIES",
    "ClaimRequest",
    "ClaimSQL",
    "ClaimStrategy",
    "ClaimedRow",
    "run_started_at",
]
