"""Errors the CLI reports as one line (exit 2) instead of a traceback."""


class UserError(Exception):
    """Bad input from the person at the terminal."""
