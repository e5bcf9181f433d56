"""Format planning: checks first, then writes; refused formats change nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from kraftpy.config import ConfigError, KafkaConfig
from kraftpy.storage import read_meta_properties
from kraftpy.storage.bootstrap import read_bootstrap_checkpoint
from kraftpy.storage.format import FormatError, execute_format, plan_format
from kraftpy.storage.metadata_version import level_for_release
from protocol.uuid import Uuid


def _cfg(tmp_path: Path, **extra: str) -> KafkaConfig:
    props = {
        "process.roles": "broker,controller",
        "node.id": "1",
        "controller.listener.names": "CONTROLLER",
        "controller.quorum.voters": "1@127.0.0.1:9093",
        "log.dirs": ",".join(str(tmp_path / f"d{i}") for i in range(3)),
        "metadata.log.dir": str(tmp_path / "meta"),
    }
    props.update(extra)
    return KafkaConfig.from_properties(props)


def _snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize(
    "release,level",
    [("3.9", 21), ("3.9-IV0", 21), ("3.7", 19), ("3.7-IV2", 17), ("3.7-iv4", 19), ("3.8", 20), ("3.3", 7)],
)
def test_release_versions(release: str, level: int) -> None:
    assert level_for_release(release) == level


def test_format_writes_every_dir_with_distinct_ids(tmp_path: Path) -> None:
    cfg = _cfg(tmp_path)
    cid = str(Uuid.random())
    plan = plan_format(cfg, cid)
    assert sorted(plan.to_format) == cfg.all_dirs
    assert not any(Path(d).exists() for d in cfg.all_dirs)  # planning wrote nothing
    lines: list[str] = []
    execute_format(plan, lines)
    metas = {d: read_meta_properties(d) for d in cfg.all_dirs}
    assert {m.cluster_id for m in metas.values()} == {cid} and {m.node_id for m in metas.values()} == {1}
    assert len({m.directory_id for m in metas.values()}) == 4
    assert all(read_bootstrap_checkpoint(d).metadata_version_level == 21 for d in cfg.all_dirs)
    assert any("metadata directory" in line and "3.9-IV0" in line for line in lines)


def test_refusals_change_nothing(tmp_path: Path) -> None:
    cfg = _cfg(tmp_path)
    cid = str(Uuid.random())
    # one dir formatted, the others not: every refusal below must leave the tree exactly as is
    first = cfg.log_dir_list[0]
    one = _cfg(tmp_path, **{"log.dirs": first, "metadata.log.dir": first})
    execute_format(plan_format(one, cid))
    before = _snapshot(tmp_path)
    with pytest.raises(FormatError, match="already formatted"):
        plan_format(cfg, cid)
    with pytest.raises(FormatError, match=f"Invalid cluster.id in: {first}"):
        plan_format(cfg, str(Uuid.random()), ignore_formatted=True)
    with pytest.raises(FormatError, match="does not appear to be a valid UUID"):
        plan_format(cfg, "not-a-uuid")
    with pytest.raises(FormatError, match="JBOD"):
        plan_format(cfg, cid, ignore_formatted=True, release_version="3.7-IV1")
    with pytest.raises(FormatError, match=r"Unknown metadata\.version"):
        plan_format(cfg, cid, release_version="2.8")
    with pytest.raises(FormatError, match="not supported"):
        plan_format(cfg, cid, release_version="3.2")
    with pytest.raises(FormatError, match="node id"):
        plan_format(
            _cfg(tmp_path, **{"node.id": "2", "controller.quorum.voters": "2@127.0.0.1:9093"}),
            cid,
            ignore_formatted=True,
        )
    with pytest.raises(ConfigError, match=r"process\.roles"):
        plan_format(KafkaConfig.from_properties({"log.dirs": str(tmp_path / "x")}), cid)
    assert _snapshot(tmp_path) == before


def test_ignore_formatted_formats_only_the_rest(tmp_path: Path) -> None:
    cfg = _cfg(tmp_path)
    cid = str(Uuid.random())
    first = cfg.log_dir_list[0]
    execute_format(plan_format(_cfg(tmp_path, **{"log.dirs": first, "metadata.log.dir": first}), cid))
    original = (Path(first) / "meta.properties").read_bytes()
    plan = plan_format(cfg, cid, ignore_formatted=True)
    assert first not in plan.to_format and len(plan.to_format) == 3
    execute_format(plan)
    assert (Path(first) / "meta.properties").read_bytes() == original
    assert len({read_meta_properties(d).directory_id for d in cfg.all_dirs}) == 4
    again = plan_format(cfg, cid, ignore_formatted=True)
    assert again.to_format == {} and "All of the log directories are already formatted." in again.messages


def test_unwritable_target_is_refused_before_writing(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    cfg = _cfg(tmp_path, **{"log.dirs": f"{tmp_path / 'ok'},{blocker / 'sub'}"})
    with pytest.raises(FormatError, match="not a directory"):
        plan_format(cfg, str(Uuid.random()))
    assert not (tmp_path / "ok").exists()


def test_unreadable_dir_is_reported_and_skipped(tmp_path: Path) -> None:
    cfg = _cfg(tmp_path)
    bad = Path(cfg.log_dir_list[1])
    (bad / "meta.properties").mkdir(parents=True)
    plan = plan_format(cfg, str(Uuid.random()))
    assert f"I/O error trying to read log directory {bad}. Ignoring..." in plan.messages
    assert str(bad) not in plan.to_format and len(plan.to_format) == 3


def test_add_scram_writes_credentials_a_scram_client_can_log_in_with(tmp_path: Path) -> None:
    import scramp

    cfg = _cfg(tmp_path)
    plan = plan_format(
        cfg,
        str(Uuid.random()),
        add_scram=[
            "SCRAM-SHA-512=[name=alice,password=alice-secret,iterations=8192]",
            "SCRAM-SHA-256=[name=bob,password=b]",
        ],
    )
    execute_format(plan)
    records = [r.message for r in read_bootstrap_checkpoint(cfg.metadata_log_dir_path).records]
    creds = {r.Name: r for r in records if type(r).__name__ == "UserScramCredentialRecord"}
    assert sorted(creds) == ["alice", "bob"]
    alice = creds["alice"]
    assert (alice.Mechanism, alice.Iterations) == (2, 8192)
    # a real SCRAM exchange against the stored keys: only the right password gets through
    for password, ok in (("alice-secret", True), ("wrong", False)):
        server = scramp.ScramMechanism("SCRAM-SHA-512").make_server(
            lambda _u: (alice.Salt, alice.StoredKey, alice.ServerKey, alice.Iterations)
        )
        client = scramp.ScramClient(["SCRAM-SHA-512"], "alice", password)
        server.set_client_first(client.get_client_first())
        client.set_server_first(server.get_server_first())
        try:
            server.set_client_final(client.get_client_final())
            logged_in = True
        except scramp.ScramException:
            logged_in = False
        assert logged_in is ok


@pytest.mark.parametrize(
    ("argument", "release", "message"),
    [
        ("SCRAM-SHA-1=[name=a,password=b]", None, "unknown SCRAM mechanism"),
        ("SCRAM-SHA-256=[password=b]", None, "no name"),
        ("SCRAM-SHA-256=[name=a]", None, "no password"),
        ("SCRAM-SHA-256=[name=a,password=b,iterations=10]", None, "iterations must be between"),
        ("SCRAM-SHA-256=name=a", None, "is not of the form"),
        ("SCRAM-SHA-256=[name=a,password=b]", "3.4", "only supported in metadata.version 3.5-IV2"),
    ],
)
def test_bad_add_scram_is_refused_and_writes_nothing(
    tmp_path: Path, argument: str, release: str | None, message: str
) -> None:
    cfg = _cfg(tmp_path, **{"log.dirs": str(tmp_path / "d0")}) if release else _cfg(tmp_path)
    with pytest.raises(FormatError, match=message):
        plan_format(cfg, str(Uuid.random()), add_scram=[argument], release_version=release)
    assert _snapshot(tmp_path) == {}
