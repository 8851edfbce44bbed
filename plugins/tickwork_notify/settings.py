"""The ``[notify]`` table, declared by the notify plugin (``tickwork_add_config``)."""

from __future__ import annotations

from tickwork.config import Choice, Integer, Number, OptionalText, Port, Section, Strings, Text


class NotifyConfig(Section, table="notify"):
    """``[notify]``: present, health changes of schedules are sent to a webhook and/or by e-mail."""

    webhook_url = OptionalText(
        help='URL the health changes are POSTed to as Slack-compatible JSON (`{"text": ...}`); not set: no webhook.',
        details='A Slack or Mattermost incoming webhook takes it as it is. Write `"${SLACK_WEBHOOK_URL}"` to keep '
        "a secret URL out of the file. See [notify.md](notify.md).",
    )
    secret_env = OptionalText(
        help="Name of the environment variable holding a `whsec_...` secret: the webhook requests are then signed "
        "(Standard Webhooks headers, like the `http` executor's).",
    )
    smtp_host = OptionalText(help="SMTP server the e-mails go through; not set: no e-mail.")
    smtp_port = Port(25, help="Port of the SMTP server.")
    smtp_security = Choice(
        ("none", "starttls", "ssl"),
        "none",
        help="`starttls`: upgrade the connection (port 587); `ssl`: TLS from the start (port 465).",
    )
    smtp_user = OptionalText(help="User name to log in to the SMTP server with; not set: no login.")
    smtp_password_env = OptionalText(help="Name of the environment variable holding the SMTP password.")
    mail_from = Text("tickwork@localhost", nonblank=True, help="Sender address of the e-mails.")
    mail_to = Strings(items="e-mail addresses", help="Recipients of the e-mails (required with `smtp_host`).")
    max_per_hour = Integer(
        60,
        low=1,
        high=100_000,
        help="Most messages sent per destination in any hour; the changes beyond it are counted, not sent.",
        details="The next message after a quiet spell says how many were left out. A flapping schedule cannot "
        "flood a channel.",
    )
    timeout = Number(10.0, low=0, high=300, low_open=True, help="Seconds one webhook request or SMTP session may take.")
