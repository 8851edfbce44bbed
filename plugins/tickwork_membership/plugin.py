"""Registers the ``single``, ``all`` and ``hashring`` memberships."""

from __future__ import annotations

from tickwork.abc import Membership
from tickwork.plugin import Deferred, Registry, hookimpl

from .settings import HashRingSettings
from .single import AllMembership, SingleMembership


@hookimpl
def tickwork_register_memberships(registry: Registry[type[Membership]]) -> None:
    registry.add("single", SingleMembership)
    registry.add("all", AllMembership)
    registry.add("hashring", Deferred("tickwork_membership.hashring:HashRingMembership", section=HashRingSettings))
