"""Errors of the controller process shell."""

from __future__ import annotations


class StartupError(Exception):
    """A reason the controller cannot start that the operator can act on; printed as one line."""
