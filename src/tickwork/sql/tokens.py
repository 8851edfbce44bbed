"""API tokens in the SQL store (``tickwork_api_tokens``; :class:`tickwork.abc.tokenstore.TokenStore`):
one short transaction per call, a token found by the unique index on its digest or its name."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.exc import IntegrityError

from ..errors import TokenExistsError, TokenNotFoundError
from ..structures import ApiToken, Role
from . import bulk
from .retry import transient_retry
from .schema import api_tokens
from .storecore import SQLCore

_T = api_tokens


def _token(row: Any) -> ApiToken:
    return ApiToken(
        name=row.name,
        role=Role(row.role),
        namespaces=tuple(row.namespaces or ()),
        created_at=row.created_at,
        created_by=row.created_by,
        digest=row.digest,
    )


class TokensSQL(SQLCore):
    """:meth:`~tickwork.abc.Store.add_token`, ``remove_token``, ``list_tokens`` and ``find_token``."""

    def add_token(
        self, name: str, role: Role, namespaces: Sequence[str], digest: str, *, by: str | None = None
    ) -> ApiToken:
        try:
            with self._tx() as conn:
                now = bulk.clock(self, conn)
                values = {
                    "name": name,
                    "role": Role(role).value,
                    "namespaces": list(namespaces),
                    "digest": digest,
                    "created_at": now,
                    "created_by": by,
                }
                conn.execute(_T.insert().values(**values))
                row = conn.execute(select(_T).where(_T.c.name == name)).one()
        except IntegrityError as exc:  # the name (a digest of 256 random bits does not repeat)
            raise TokenExistsError(name) from exc
        return _token(row)

    @transient_retry
    def remove_token(self, name: str) -> ApiToken:
        with self._tx() as conn:
            row = conn.execute(select(_T).where(_T.c.name == name)).first()
            if row is None:
                raise TokenNotFoundError(name)
            conn.execute(delete(_T).where(_T.c.id == row.id))
        return _token(row)

    @transient_retry
    def list_tokens(self) -> list[ApiToken]:
        with self._tx() as conn:
            return [_token(row) for row in conn.execute(select(_T).order_by(_T.c.name))]

    @transient_retry
    def find_token(self, *, digest: str | None = None, name: str | None = None) -> ApiToken | None:
        if (digest is None) == (name is None):
            raise ValueError("find_token: give a digest or a name")
        where = _T.c.digest == digest if digest is not None else _T.c.name == name
        with self._tx() as conn:
            row = conn.execute(select(_T).where(where)).first()
        return None if row is None else _token(row)
