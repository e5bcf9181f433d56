"""`kraftpy cluster up` without --base-port: the same ports for the same work dir each time."""

from __future__ import annotations

import socket

from tools.cluster.launcher import stable_base_port


def test_the_same_work_dir_gets_the_same_ports_and_others_most_likely_not() -> None:
    a = stable_base_port("/tmp/kraftpy-a/cluster", 9)
    assert a is not None and 20000 <= a <= 32000 - 9
    assert stable_base_port("/tmp/kraftpy-a/cluster", 9) == a
    others = {stable_base_port(f"/tmp/kraftpy-{i}/cluster", 9) for i in range(20)}
    assert len(others - {None}) >= 15


def test_a_taken_port_gives_none_so_free_ports_are_used() -> None:
    base = stable_base_port("/tmp/kraftpy-taken/cluster", 9)
    assert base is not None
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", base + 4))
        s.listen()
        assert stable_base_port("/tmp/kraftpy-taken/cluster", 9) is None
