"""A real `kraftpy-controller` process per test, on 127.0.0.1 with a free port and its own dirs.

`controller_node(extra={...})` formats the metadata dir with `kraftpy storage format`, starts the
process and waits for /healthz. Every process is stopped by a finalizer (its whole process group,
SIGTERM then SIGKILL), whatever the test did.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from protocol.transport import RpcClient
from tests.support.processes import (
    ManagedProcess,
    ProcessSet,
    format_storage,
    free_port,
    random_cluster_id,
    run_kraftpy,
    wait_for_healthz,
    write_controller_config,
)


@dataclass
class ControllerNode:
    workdir: Path
    procs: ProcessSet
    node_id: int = 1
    extra: Mapping[str, object] = field(default_factory=dict)
    cluster_id: str = field(default_factory=random_cluster_id)
    port: int = field(default_factory=free_port)
    proc: ManagedProcess | None = None
    starts: int = 0

    @property
    def metadata_dir(self) -> Path:
        return self.workdir / "meta"

    @property
    def config(self) -> Path:
        return self.workdir / "controller.properties"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def write_config(self) -> Path:
        return write_controller_config(
            self.config,
            node_id=self.node_id,
            port=self.port,
            metadata_dir=self.metadata_dir,
            extra=self.extra,
        )

    def format(self) -> None:
        format_storage(self.config, self.cluster_id)

    def start(self) -> ManagedProcess:
        self.starts += 1
        self.proc = self.procs.start_controller(
            self.config, name=f"controller-{self.node_id}-run{self.starts}"
        )
        wait_for_healthz(self.proc, timeout=60)
        return self.proc

    def kill9(self) -> int:
        assert self.proc is not None
        return self.proc.kill9()

    def stop(self, timeout: float = 30) -> int:
        assert self.proc is not None
        return self.proc.terminate(timeout)

    def client(self) -> RpcClient:
        return RpcClient(self.url, timeout=30)

    def dump(self, from_offset: int = 0) -> list[dict[str, Any]]:
        """`kraftpy metadata dump --json` of the controller's log, one dict per record."""
        out = run_kraftpy(
            "metadata", "dump", "--json", "--from-offset", str(from_offset), str(self.metadata_dir)
        )
        return [json.loads(line) for line in out.stdout.splitlines() if line.strip()]

    def records(self, type_name: str, from_offset: int = 0) -> list[dict[str, Any]]:
        return [r for r in self.dump(from_offset) if r["type"] == type_name]

    def image(self) -> dict[str, Any]:
        """`kraftpy metadata image --json` of the controller's log."""
        return json.loads(run_kraftpy("metadata", "image", "--json", str(self.metadata_dir)).stdout)


@pytest.fixture
def processes(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[ProcessSet]:
    procs = ProcessSet(tmp_path)
    request.addfinalizer(procs.stop_all)
    yield procs


@pytest.fixture
def controller_node(tmp_path: Path, processes: ProcessSet) -> Callable[..., ControllerNode]:
    """Factory: a formatted, started controller (`start=False` to only write config and format)."""

    def make(extra: Mapping[str, object] | None = None, *, start: bool = True) -> ControllerNode:
        node = ControllerNode(tmp_path / f"node{len(processes.started)}", processes, extra=dict(extra or {}))
        node.write_config()
        node.format()
        if start:
            node.start()
        return node

    return make
