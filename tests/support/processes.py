"""Real kraftpy processes in tests, through the one launcher (`tools.cluster.launcher`).

Every process runs in its own session (process group) with its output in a log file, so a test can
read what it printed, a finalizer can stop the whole group even when the test fails, and the kernel
kills it should the test process die without running its finalizers. Typical use:

    procs = ProcessSet(tmp_path)
    request.addfinalizer(procs.stop_all)
    cfg = write_controller_config(tmp_path / "controller.properties", node_id=1, port=free_port(),
                                  metadata_dir=tmp_path / "meta")
    format_storage(cfg, cluster_id=random_cluster_id())
    ctl = procs.start_controller(cfg)
    wait_for_healthz(ctl)

A controller with brokers: `tools.cluster.layout.ProcessCluster` (fixtures in the test folders).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tools.cluster.configs import voters_string, write_broker_config, write_controller_config
from tools.cluster.launcher import (
    ManagedProcess,
    ProcessSet,
    format_storage,
    free_port,
    free_ports,
    get_json,
    kraftpy_command,
    node_command,
    wait_for_healthz,
)
from tools.cluster.launcher import run_kraftpy as _run_kraftpy
from tools.cluster.layout import random_cluster_id

# The launcher's names, importable from here by every process test.
__all__ = [
    "REPO",
    "ManagedProcess",
    "ProcessSet",
    "broker_command",
    "controller_command",
    "format_storage",
    "free_port",
    "free_ports",
    "get_json",
    "kraftpy_command",
    "random_cluster_id",
    "run_kraftpy",
    "run_kraftpy_json",
    "voters_string",
    "wait_for_healthz",
    "write_broker_config",
    "write_controller_config",
]

REPO = Path(__file__).resolve().parents[2]


def run_kraftpy(*args: str, check: bool = True, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """`kraftpy ARGS` run from the checkout; with `check`, a non-zero exit fails with its output."""
    return _run_kraftpy(*args, check=check, timeout=timeout, cwd=REPO)


def run_kraftpy_json(*args: str, timeout: float = 120) -> object:
    """Run a `kraftpy ... --json` command and parse its stdout."""
    return json.loads(run_kraftpy(*args, timeout=timeout).stdout)


def controller_command(config: Path) -> list[str]:
    return node_command("controller", config)


def broker_command(config: Path) -> list[str]:
    return node_command("broker", config)
