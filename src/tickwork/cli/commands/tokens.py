"""``tickwork tokens create|revoke|list``: the API tokens of the dashboard and its JSON API
(docs/web.md#roles-and-tokens). A token's secret is printed once, by ``create``; the store keeps
only its digest, so it cannot be shown again (revoke it and create another)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import ClassVar

from ...admin.api import Admin
from ...admin.roles import namespaces_text
from ...plugin.command import Command, CommandGroup
from ...structures import Role
from ..output import Listing, short_time
from ..parser import namespaces_given
from .admincommand import AdminCommand, operator


class TokensCreate(AdminCommand):
    namespaced = False
    help = "create an API token and print its secret (shown this once)"

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("name", help="the token's name: what the action log and the versions' author show")
        parser.add_argument(
            "--role",
            required=True,
            choices=[r.value for r in Role],
            help="viewer: reads; operator: also runs, pauses, resumes, backfills, releases, enables, disables; "
            "admin: also adds, changes and removes schedules",
        )

    def act(self, args: argparse.Namespace, admin: Admin) -> int:
        token, secret = admin.create_token(args.name, args.role, namespaces_given(args), by=operator())
        if args.json:
            print(json.dumps({**token.as_json(), "secret": secret}))
        else:
            print(secret)
            print(
                f"tickwork: token {token.name!r} ({token.role.value}, namespaces: {namespaces_text(token.namespaces)}) "
                "created; its secret is printed above, this once: keep it now",
                file=sys.stderr,
            )
        return 0


class TokensRevoke(AdminCommand):
    namespaced = False
    help = "revoke an API token: its requests and dashboard sessions stop working at once"

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("name", help="the token's name (tickwork tokens list)")

    def act(self, args: argparse.Namespace, admin: Admin) -> int:
        token = admin.revoke_token(args.name)
        if args.json:
            print(json.dumps(token.as_json()))
        else:
            print(f"revoked token {token.name!r} ({token.role.value})")
        return 0


class TokensList(AdminCommand):
    namespaced = False
    help = "list the API tokens (never a secret: only digests are stored)"

    def act(self, args: argparse.Namespace, admin: Admin) -> int:
        tokens = admin.tokens()
        Listing(
            columns=("NAME", "ROLE", "NAMESPACES", "CREATED", "BY"),
            rows=[
                (t.name, t.role.value, namespaces_text(t.namespaces), short_time(t.created_at), t.created_by or "-")
                for t in tokens
            ],
            objects=[t.as_json() for t in tokens],
            empty="no API tokens (tickwork tokens create NAME --role viewer|operator|admin)",
        ).print(as_json=args.json)
        return 0


class TokensCommand(CommandGroup):
    help = "API tokens of the dashboard: create, revoke, list"
    description = "API tokens of the web dashboard and its JSON API, each with a role and its namespaces."
    actions: ClassVar[dict[str, type[Command]]] = {"create": TokensCreate, "revoke": TokensRevoke, "list": TokensList}
