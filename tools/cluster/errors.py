"""Errors of the local cluster, worded for the person who ran the command."""

from __future__ import annotations


class ClusterError(RuntimeError):
    """The cluster cannot do what was asked; the message says why and what to do."""


class NodeStartError(ClusterError):
    """A node exited or never became healthy; the message carries the end of its log."""
