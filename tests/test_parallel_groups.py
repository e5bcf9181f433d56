"""Which tests `./dev test` keeps off each other's workers (tests/conftest.py, `xdist_group`)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from tests.conftest import xdist_group


@dataclass
class Item:
    nodeid: str
    fixturenames: tuple[str, ...] = ()
    marks: tuple[str, ...] = ()

    def get_closest_marker(self, name: str) -> object | None:
        return name if name in self.marks else None


@pytest.mark.parametrize(
    ("item", "group"),
    [
        (Item("tests/raft/test_log_view.py::test_x"), None),
        (Item("tests/dataplane/test_failover_process.py::test_x", ("tmp_path",)), None),
        (Item("tests/broker_process/test_x.py::test_y", ("real_disks", "tmp_path")), "devices"),
        (Item("tests/broker_zk/test_x.py::test_y", ("zk_server",)), "devices"),
        (Item("tests/disk/test_cli.py::test_x", ("require_root",)), "devices"),
        (Item("tests/system/test_launcher.py::test_x"), "devices"),
        (Item("tests/zookeeper/test_zk_client.py::test_x", marks=("real",)), "devices"),
        (Item("tests/x/test_y.py::test_z", marks=("system", "slow")), "devices"),
        (Item("tests/analytics/test_analyze.py::test_x", ("spark",), ("spark", "real")), "spark"),
        (Item("tests/system/test_demo.py::test_x", ("spark",), ("system", "real", "spark")), "devices"),
        (Item("tests/controller_process/test_x.py::test_y", marks=("slow",)), None),
    ],
    ids=lambda v: v.nodeid if isinstance(v, Item) else str(v),
)
def test_each_test_lands_in_its_group(item: Item, group: str | None) -> None:
    assert xdist_group(item) == group  # type: ignore[arg-type]
