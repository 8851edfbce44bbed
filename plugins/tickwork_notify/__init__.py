"""The ``notify`` plugin: health changes of schedules to a webhook (Slack-compatible) and e-mail."""
