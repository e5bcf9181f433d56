"""`kraftpy storage` as a user runs it: a real subprocess of the installed console script."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from protocol.uuid import Uuid

REPO = Path(__file__).resolve().parents[2]
SCRIPT = Path(sys.executable).parent / "kraftpy"


def kraftpy(*args: str) -> subprocess.CompletedProcess[str]:
    cmd = [str(SCRIPT)] if SCRIPT.exists() else [sys.executable, "-m", "tools.cli.main"]
    return subprocess.run([*cmd, *args], cwd=REPO, capture_output=True, text=True, timeout=120)


def _config(tmp_path: Path) -> tuple[Path, list[Path]]:
    dirs = [tmp_path / "disk1" / "kafka", tmp_path / "disk2" / "kafka", tmp_path / "disk3" / "kafka"]
    meta = tmp_path / "metadata"
    cfg = tmp_path / "server.properties"
    cfg.write_text(
        "process.roles=broker,controller\n"
        "node.id=1\n"
        "listeners=PLAINTEXT://127.0.0.1:19092,CONTROLLER://127.0.0.1:19093\n"
        "controller.listener.names=CONTROLLER\n"
        "controller.quorum.voters=1@127.0.0.1:19093\n"
        f"log.dirs={','.join(str(d) for d in dirs)}\n"
        f"metadata.log.dir={meta}\n"
    )
    return cfg, [*dirs, meta]


def _files(root: Path) -> dict[str, bytes]:
    return {
        str(p): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.name != "server.properties"
    }


def test_random_uuid_prints_22_chars_that_parse_back() -> None:
    r = kraftpy("storage", "random-uuid")
    assert r.returncode == 0, r.stderr
    text = r.stdout.strip()
    assert len(text) == 22
    u = Uuid.from_string(text)
    assert str(u) == text and not u.is_reserved() and not text.startswith("-")


def test_format_info_and_refused_reformat(tmp_path: Path) -> None:
    cfg, dirs = _config(tmp_path)
    cid = kraftpy("storage", "random-uuid").stdout.strip()

    r = kraftpy("storage", "format", "-c", str(cfg), "--cluster-id", cid)
    assert r.returncode == 0, r.stderr
    metas = [d / "meta.properties" for d in dirs]
    assert all(m.is_file() for m in metas)
    assert all((d / "bootstrap.checkpoint").is_file() for d in dirs)
    ids = [
        next(line.split("=", 1)[1] for line in m.read_text().splitlines() if line.startswith("directory.id="))
        for m in metas
    ]
    assert len(set(ids)) == 4

    r = kraftpy("storage", "info", "-c", str(cfg), "--json")
    assert r.returncode == 0, r.stdout + r.stderr
    info = json.loads(r.stdout)
    assert [row["dir"] for row in info["dirs"]] == sorted(str(d) for d in dirs)
    assert {row["directory_id"] for row in info["dirs"]} == set(ids)
    assert {row["cluster_id"] for row in info["dirs"]} == {cid}
    assert {row["node_id"] for row in info["dirs"]} == {1}
    assert {row["state"] for row in info["dirs"]} == {"formatted"}
    assert info["metadata_version"] == "3.9-IV0" and info["problems"] == []

    r = kraftpy("storage", "info", "-c", str(cfg))
    assert r.returncode == 0
    for d, i in zip(dirs, ids, strict=True):
        assert str(d) in r.stdout and i in r.stdout

    before = _files(tmp_path)
    other = str(Uuid.random())
    r = kraftpy("storage", "format", "-c", str(cfg), "--cluster-id", other)
    assert r.returncode != 0
    assert str(dirs[0]) in r.stderr and "Traceback" not in r.stderr
    r = kraftpy("storage", "format", "-c", str(cfg), "--cluster-id", other, "--ignore-formatted")
    assert r.returncode != 0 and "Invalid cluster.id" in r.stderr
    r = kraftpy("storage", "format", "-c", str(cfg), "--cluster-id", cid)
    assert r.returncode != 0 and "already formatted" in r.stderr and "--ignore-formatted" in r.stderr
    assert _files(tmp_path) == before

    r = kraftpy("storage", "format", "-c", str(cfg), "--cluster-id", cid, "--ignore-formatted")
    assert r.returncode == 0 and "All of the log directories are already formatted." in r.stdout
    assert _files(tmp_path) == before


def test_info_reports_problems(tmp_path: Path) -> None:
    cfg, dirs = _config(tmp_path)
    cid = str(Uuid.random())
    assert kraftpy("storage", "format", "-c", str(cfg), "--cluster-id", cid).returncode == 0
    (dirs[1] / "meta.properties").unlink()
    (dirs[2] / "meta.properties").write_text("version=1\nnode.id=1\n")
    r = kraftpy("storage", "info", "-c", str(cfg), "--json")
    assert r.returncode == 1
    info = json.loads(r.stdout)
    states = {row["dir"]: row["state"] for row in info["dirs"]}
    assert states[str(dirs[1])] == "not formatted" and states[str(dirs[2])] == "error"
    assert any(str(dirs[1]) in p for p in info["problems"])


def test_user_errors_are_one_line_without_traceback(tmp_path: Path) -> None:
    r = kraftpy(
        "storage", "format", "-c", str(tmp_path / "missing.properties"), "--cluster-id", str(Uuid.random())
    )
    assert r.returncode == 2 and "missing.properties" in r.stderr and "Traceback" not in r.stderr
    bad = tmp_path / "bad.properties"
    bad.write_text("process.roles=broker\nnode.id=abc\n")
    r = kraftpy("storage", "info", "-c", str(bad))
    assert (
        r.returncode == 2 and "node.id" in r.stderr and str(bad) in r.stderr and "Traceback" not in r.stderr
    )
    cfg, dirs = _config(tmp_path)
    r = kraftpy("storage", "format", "-c", str(cfg), "--cluster-id", "x", "--release-version", "3.9")
    assert r.returncode == 2 and "valid UUID" in r.stderr
    assert not any(d.exists() for d in dirs)


def test_release_version_is_written(tmp_path: Path) -> None:
    cfg, _ = _config(tmp_path)
    r = kraftpy(
        "storage",
        "format",
        "-c",
        str(cfg),
        "--cluster-id",
        str(Uuid.random()),
        "--release-version",
        "3.7-IV2",
    )
    assert r.returncode == 0, r.stderr
    r = kraftpy("storage", "info", "-c", str(cfg), "--json")
    assert json.loads(r.stdout)["metadata_version"] == "3.7-IV2"
