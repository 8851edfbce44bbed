"""Membership plugins: which node attempts which schedules."""
