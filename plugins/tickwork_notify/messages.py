"""What a notification says: a line per health change, the Slack-compatible JSON, the e-mail."""

from __future__ import annotations

from collections.abc import Sequence
from email.message import EmailMessage
from typing import Any

from tickwork.structures import AlertKind, HealthChange, iso_z


def headline(change: HealthChange) -> str:
    """``flaky is failing``, ``resolved: flaky is healthy``, ``flaky is still failing``."""
    state = change.new.state.value
    if change.kind is AlertKind.REPEAT:
        return f"{change.schedule} is still {state}"
    if change.kind is AlertKind.RESOLVED:
        return f"resolved: {change.schedule} is {state}"
    return f"{change.schedule} is {state}"


def line(change: HealthChange) -> str:
    if change.kind is AlertKind.REPEAT:
        when = f"since {iso_z(change.since, 'seconds')}"
    else:
        when = f"was {change.old.value}"
    return f"{headline(change)} ({when}): {change.new.reason}"


def webhook_body(change: HealthChange, left_out: int = 0) -> dict[str, Any]:
    """One change as Slack-compatible JSON: ``text`` for chat tools, ``tickwork`` for programs."""
    text = f"tickwork: {line(change)}"
    if left_out:
        text += f" ({left_out} earlier notification(s) left out by the rate limit)"
    return {"text": text, "tickwork": {**change.as_json(), "left_out": left_out}}


def email(changes: Sequence[HealthChange], sender: str, recipients: Sequence[str], left_out: int = 0) -> EmailMessage:
    message = EmailMessage()
    if len(changes) == 1:
        message["Subject"] = f"tickwork: {headline(changes[0])}"
    else:
        message["Subject"] = f"tickwork: {len(changes)} schedules changed health"
    message["From"] = sender
    message["To"] = ", ".join(recipients)
    body = "\n".join(line(c) for c in changes)
    if left_out:
        body += f"\n\n{left_out} earlier notification(s) were left out by the rate limit ([notify] max_per_hour)."
    message.set_content(body + "\n")
    return message
