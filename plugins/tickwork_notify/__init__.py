"""The ``notify`` plugin: health announcements of schedules (firing, repeat, resolved) to a webhook
(Slack-compatible) and e-mail."""
