"""Schedules before they reach the store: declaring jobs in code, finding a trigger for an
expression, checking a schedule, reading schedule files, and syncing declared jobs at start."""
