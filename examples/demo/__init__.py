"""Example jobs for the two-command demo (`tickwork run --config examples/tickwork.toml`)."""
