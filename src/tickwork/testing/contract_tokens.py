"""The store contract's tests of API tokens (docs/web.md#roles-and-tokens): a token is stored with
its role, namespaces and digest, found by either its digest or its name, listed by name without
any secret, unique by name, and gone once removed."""

from __future__ import annotations

import pytest

from ..abc import Store
from ..admin.roles import digest_of
from ..errors import TokenExistsError, TokenNotFoundError
from ..structures import Role


class TokensContract:
    """Mixed into :class:`~tickwork.testing.StoreContract`; uses its ``store`` fixture."""

    def test_a_token_is_found_by_its_digest_and_its_name(self, store: Store) -> None:
        t = store.now()
        added = store.add_token("ci", Role.OPERATOR, ["a", "b"], digest_of("s3cret-ci"), by="alice")
        assert (added.name, added.role, added.namespaces, added.created_by) == (
            "ci",
            Role.OPERATOR,
            ("a", "b"),
            "alice",
        )
        assert t <= added.created_at <= store.now()
        by_digest = store.find_token(digest=digest_of("s3cret-ci"))
        assert by_digest == added and store.find_token(name="ci") == added
        assert store.find_token(digest=digest_of("another")) is None
        assert store.find_token(name="nobody") is None

    def test_tokens_are_listed_by_name_and_an_empty_scope_is_every_namespace(self, store: Store) -> None:
        store.add_token("viewer-2", Role.VIEWER, [], digest_of("v"))
        store.add_token("admin-1", Role.ADMIN, [], digest_of("a"))
        listed = store.list_tokens()
        assert [(t.name, t.role, t.namespaces) for t in listed] == [
            ("admin-1", Role.ADMIN, ()),
            ("viewer-2", Role.VIEWER, ()),
        ]
        assert "digest" not in listed[0].as_json()  # what `tokens list --json` prints

    def test_a_name_is_taken_once_and_a_removed_token_is_gone(self, store: Store) -> None:
        store.add_token("ci", Role.ADMIN, [], digest_of("one"))
        with pytest.raises(TokenExistsError):
            store.add_token("ci", Role.VIEWER, [], digest_of("two"))
        assert store.find_token(digest=digest_of("two")) is None  # the refused one left nothing
        removed = store.remove_token("ci")
        assert removed.name == "ci" and removed.role is Role.ADMIN
        assert store.find_token(digest=digest_of("one")) is None and store.list_tokens() == []
        with pytest.raises(TokenNotFoundError):
            store.remove_token("ci")
        store.add_token("ci", Role.VIEWER, ["x"], digest_of("three"))  # the name is free again
        assert store.find_token(name="ci") is not None
