"""API tokens and their roles (docs/web.md#roles-and-tokens): how a token's secret is made and
kept (the token itself is :class:`tickwork.structures.ApiToken`), what each role may do, and the
one question of namespaces, "may this token act on a schedule of namespace X" (:func:`may_act_on`).

A token's secret is shown once, at creation; the store keeps only its SHA-256 digest. A slow,
salted password hash (bcrypt, scrypt, argon2) exists to make guessing a *low-entropy* secret
expensive; a token is 32 random bytes from :mod:`secrets` (256 bits), which no amount of hashing
speed makes guessable, so one SHA-256 is enough and costs nothing per request. Digests are looked
up by equality in the database (an index), then confirmed with :func:`hmac.compare_digest`: the
lookup's timing depends on the digest, which an attacker cannot steer towards a stored one without
a SHA-256 preimage, and the final comparison is constant-time anyway.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..errors import ConfigError
from ..structures import DEFAULT_NAMESPACE, ApiToken, Role, check_namespace

#: What a token's secret starts with: recognisable in a leaked file or a secret scanner's rules.
PREFIX = "tw_"
#: A token's name: what the audit log, the versions' ``by`` and ``tokens list`` show.
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@-]{0,99}")
#: Most namespaces one token may name.
MAX_NAMESPACES = 100


#: The role each action needs. State and runs (operator) versus definitions (admin): the same
#: line schedule versions draw (a version is written by a change of definition, never by these).
NEEDS: dict[str, Role] = {
    "read": Role.VIEWER,
    **{
        action: Role.OPERATOR
        for action in ("trigger", "enable", "disable", "pause", "resume", "backfill", "release", "rerun")
    },
    # `plan` and `apply` are the schedules-as-code endpoints (issue 43 §3): a plan changes
    # nothing, but it reads every definition of a namespace, which is an admin's concern.
    **{action: Role.ADMIN for action in ("create", "edit", "remove", "plan", "apply")},
}


def role_needed(action: str) -> Role:
    """The role ``action`` needs (an action this table does not know needs admin: a new action is
    refused to the lesser roles until someone decides otherwise)."""
    return NEEDS.get(action, Role.ADMIN)


def new_secret() -> str:
    """A new token's secret: 32 random bytes, URL-safe, after :data:`PREFIX`."""
    return PREFIX + secrets.token_urlsafe(32)


def digest_of(secret: str) -> str:
    """The digest the store keeps of ``secret`` (see the module's docstring for why SHA-256)."""
    return hashlib.sha256(secret.encode("utf-8", "replace")).hexdigest()


def digest_matches(secret: str, token: ApiToken) -> bool:
    """Whether ``secret`` is ``token``'s, compared in constant time."""
    return hmac.compare_digest(digest_of(secret), token.digest)


def may_act_on(token: ApiToken | None, namespace: str) -> bool:
    """THE namespace check: may ``token`` read or act on a schedule of ``namespace``? A token
    naming no namespace covers all of them; ``None`` (the configured dashboard token, or an
    anonymous reader where reads are public) covers all too. Every surface asks this function."""
    return token is None or not token.namespaces or namespace in token.namespaces


def namespace_of(info: Any) -> str:
    """The namespace of a schedule (a ``ScheduleInfo``)."""
    return str(info.namespace)


def namespace_in(fields: Mapping[str, Any]) -> str:
    """The namespace a new schedule's fields (an API body) put it in."""
    return str(fields.get("namespace") or DEFAULT_NAMESPACE)


def scope(token: ApiToken | None) -> tuple[str, ...] | None:
    """The namespaces a list shows to ``token``: ``None`` for all."""
    return None if token is None or not token.namespaces else token.namespaces


# -------------------------------------------------------------------------------------------------


def checked_name(name: str) -> str:
    if not NAME.fullmatch(name):
        raise ConfigError(
            f"token name {name!r}: 1 to 100 letters, digits and . _ @ - (starting with a letter or digit)"
        )
    return name


def checked_role(role: str | Role) -> Role:
    try:
        return Role(role)
    except ValueError:
        raise ConfigError(f"role: one of {', '.join(r.value for r in Role)}, got {role!r}") from None


def checked_namespaces(namespaces: Iterable[str]) -> tuple[str, ...]:
    names = tuple(dict.fromkeys(namespaces))
    for ns in names:
        try:
            check_namespace(ns)  # the schedules' own rule: a token names namespaces they can be in
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
    if len(names) > MAX_NAMESPACES:
        raise ConfigError(f"at most {MAX_NAMESPACES} namespaces per token, got {len(names)}")
    return names


def namespaces_text(namespaces: Sequence[str]) -> str:
    return ",".join(namespaces) if namespaces else "all"
