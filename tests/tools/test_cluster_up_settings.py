"""`kraftpy cluster up --broker-config / --controller-config`: bad settings are refused before anything
is created, and a controller setting has controllers to go to."""

from __future__ import annotations

from pathlib import Path

import pytest

from tools.cli.main import main
from tools.cluster.spec import ClusterSpec


def _up(tmp_path: Path, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    work = tmp_path / "cluster"
    code = main(["cluster", "up", "--work-dir", str(work), "--timeout", "1", *args])
    _, err = capsys.readouterr()
    assert not work.exists(), "a refused `cluster up` left its work dir behind"
    return code, err


@pytest.mark.parametrize("flag", ["--broker-config", "--controller-config"])
def test_a_setting_without_a_value_is_refused_by_its_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flag: str
) -> None:
    code, err = _up(tmp_path, capsys, flag, "controller.quorum.append.linger.ms")
    assert code != 0
    assert f"{flag} 'controller.quorum.append.linger.ms' is not of the form KEY=VALUE" in err
    assert "Traceback" not in err


def test_controller_settings_need_controllers(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, err = _up(
        tmp_path, capsys, "--zookeeper", "--controller-config", "controller.quorum.append.linger.ms=5"
    )
    assert code != 0
    assert "--controller-config is for KRaft clusters" in err
    with pytest.raises(ValueError, match="ZooKeeper mode has no controllers"):
        ClusterSpec(zookeeper=True, controller_config={"controller.quorum.append.linger.ms": "5"})
