"""``tickwork tokens create|list|revoke`` (in-process, on the default SQLite store): the secret is
printed once and only its digest is stored; the list never shows a secret; names are unique; a
revoked token is no longer found by its secret."""

from __future__ import annotations

import getpass
import json

import tickwork
from tests.support.cli import Tickwork, error_of
from tests.support.cli import tw as tw
from tests.support.cli import workdir as workdir
from tickwork.admin.roles import digest_of
from tickwork.structures import Role


def test_create_prints_the_secret_once_and_stores_its_digest(tw: Tickwork) -> None:
    made = tw("tokens", "create", "ci", "--role", "operator", "--namespace", "a", "--namespace", "b")
    assert made.code == 0, made
    secret = made.out.strip()
    assert secret.startswith("tw_") and len(secret) > 40
    assert "printed above, this once" in made.err
    listed = tw("tokens", "list")
    assert listed.lines == [f"ci\toperator\ta,b\t{listed.lines[0].split(chr(9))[3]}\t{getpass.getuser()}"]
    assert secret not in listed.out
    (obj,) = [json.loads(line) for line in tw("tokens", "list", "--json").lines]
    assert obj["name"] == "ci" and obj["role"] == "operator" and obj["namespaces"] == ["a", "b"]
    assert "secret" not in obj and "digest" not in obj
    with tickwork.connect() as admin:  # the default store of workdir
        found = admin.token_for(secret)
        assert found is not None and found.role is Role.OPERATOR and found.digest == digest_of(secret)
        assert admin.token_for(secret + "x") is None
        assert all(secret not in repr(t) for t in admin.tokens())


def test_a_name_is_unique_and_a_revoked_token_is_gone(tw: Tickwork) -> None:
    first = tw("tokens", "create", "deploy", "--role", "admin", "--json")
    secret = json.loads(first.out)["secret"]
    assert "already exists" in error_of(tw("tokens", "create", "deploy", "--role", "viewer"), 1)
    assert tw("tokens", "revoke", "deploy").out == "revoked token 'deploy' (admin)\n"
    with tickwork.connect() as admin:
        assert admin.token_for(secret) is None and admin.tokens() == []
    assert "no token named 'deploy'" in error_of(tw("tokens", "revoke", "deploy"), 1)
    assert tw("tokens", "list").err.startswith("tickwork: no API tokens")


def test_names_roles_and_namespaces_are_checked(tw: Tickwork) -> None:
    # A value the command line got wrong: status 2, as every ConfigError.
    assert "token name 'two words'" in error_of(tw("tokens", "create", "two words", "--role", "admin"), 2)
    assert "got 'a b'" in error_of(tw("tokens", "create", "x", "--role", "admin", "--namespace", "a b"), 2)
