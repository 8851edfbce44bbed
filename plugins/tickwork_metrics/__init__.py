"""Built-in plugin ``metrics``: Prometheus metrics and a health check for a node (``[metrics]``)."""
