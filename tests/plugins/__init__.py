"""Tests of the built-in plugins, one folder per ``plugins/tickwork_<name>``."""
