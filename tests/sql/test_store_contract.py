"""The Store contract (``tickwork.testing.StoreContract``) over every store x claim strategy:
MemoryStore first, then SQLite, PostgreSQL and MySQL, each on its own real clock."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tickwork.abc import Store
from tickwork.testing import StoreContract


class TestStoreContract(StoreContract):
    @pytest.fixture
    def make_store(self, store_factory: Callable[[], Store]) -> Callable[[], Store]:
        return store_factory
