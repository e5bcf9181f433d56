"""Helpers shared by tests that run real kraftpy processes."""
