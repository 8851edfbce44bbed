"""Whole-cluster, fault, chaos and end-to-end tests: real processes exercising many packages at once."""
