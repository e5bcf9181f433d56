"""Multi-host mode: one network namespace per node, all plugged into a bridge in a switch namespace.

    <prefix>-sw          bridge br0, ports p1..pN
    <prefix>-n<i>        eth0 = 10.200.0.(10+i)/24, veth peer of p<i>

Nothing is created in the root namespace except a blackhole route for 10.200.0.0/24 while a
cluster is up: traffic to those addresses from the root namespace would otherwise leave the machine.
Processes join a namespace with `nsenter --net=/run/netns/NAME --`, which joins only the network
namespace: `ip netns exec` would also give them a private copy of the mount table, in which a
filesystem unmounted and remounted in the root namespace stays the old, shut-down one.

Namespaces made by a test run (KRAFTPY_TEST_RUN set, tools/cluster/launcher.py) are recorded in
`TEST_MARKER_DIR/<prefix>` with the run's id, outside /run/netns where `ip netns` would list the file
as a namespace; the crash janitor deletes only those, never the namespaces of a cluster someone has up.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Sequence

from tools.cluster.errors import ClusterError
from tools.cluster.spec import SUBNET, node_address

NETNS_DIR = "/run/netns"
TEST_MARKER_DIR = "/run/kraftpy/test-netns"
TEST_RUN_ENV = "KRAFTPY_TEST_RUN"


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(["ip", *args], capture_output=True, text=True, check=False)
    if check and proc.returncode != 0:
        raise ClusterError(f"`ip {' '.join(args)}` failed: {proc.stderr.strip() or proc.returncode}")
    return proc


def available() -> str | None:
    """None when multi-host mode can run here, else why not."""
    if os.geteuid() != 0:
        return "multi-host mode needs root (network namespaces)"
    for tool in ("ip", "nsenter"):
        if shutil.which(tool) is None:
            return f"multi-host mode needs `{tool}` (iproute2, util-linux)"
    return None


def switch_name(prefix: str) -> str:
    return f"{prefix}-sw"


def node_name(prefix: str, index: int) -> str:
    return f"{prefix}-n{index}"


def nsenter_prefix(netns: str) -> list[str]:
    return ["nsenter", f"--net={NETNS_DIR}/{netns}", "--"]


def wrap(argv: Sequence[str], netns: str | None) -> list[str]:
    """`argv`, run inside `netns` when one is given."""
    return [*nsenter_prefix(netns), *argv] if netns else list(argv)


def list_namespaces() -> list[str]:
    try:
        return sorted(os.listdir(NETNS_DIR))
    except FileNotFoundError:
        return []


def create(prefix: str, hosts: int) -> list[str]:
    """The switch and `hosts` node namespaces (1..hosts); on failure removes what it made and raises."""
    made: list[str] = []
    run_id = os.environ.get(TEST_RUN_ENV)
    if run_id:
        # Written before the first namespace exists, so a run killed midway still leaves it marked.
        os.makedirs(TEST_MARKER_DIR, exist_ok=True)
        with open(os.path.join(TEST_MARKER_DIR, prefix), "w") as f:
            f.write(run_id + "\n")
    try:
        sw = switch_name(prefix)
        _ip("netns", "add", sw)
        made.append(sw)
        _ip("-n", sw, "link", "set", "lo", "up")
        _ip("-n", sw, "link", "add", "br0", "type", "bridge")
        _ip("-n", sw, "link", "set", "br0", "up")
        for i in range(1, hosts + 1):
            ns = node_name(prefix, i)
            _ip("netns", "add", ns)
            made.append(ns)
            _ip("-n", ns, "link", "set", "lo", "up")
            # Both veth ends are created inside their namespaces: nothing appears in the root namespace.
            _ip("link", "add", "eth0", "netns", ns, "type", "veth", "peer", "name", f"p{i}", "netns", sw)
            _ip("-n", sw, "link", "set", f"p{i}", "master", "br0")
            _ip("-n", sw, "link", "set", f"p{i}", "up")
            _ip("-n", ns, "addr", "add", f"{node_address(i)}/24", "dev", "eth0")
            _ip("-n", ns, "link", "set", "eth0", "up")
    except BaseException:
        for ns in reversed(made):
            _ip("netns", "del", ns, check=False)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(os.path.join(TEST_MARKER_DIR, prefix))
        raise
    return made


def destroy(prefix: str) -> list[str]:
    """Delete every namespace of this prefix (processes in them must be stopped first)."""
    done = []
    for ns in list_namespaces():
        if ns == switch_name(prefix) or ns.startswith(f"{prefix}-n"):
            _ip("netns", "del", ns, check=False)
            done.append(f"namespace {ns} deleted")
    with contextlib.suppress(FileNotFoundError):
        os.unlink(os.path.join(TEST_MARKER_DIR, prefix))
    return done


def marked_prefixes() -> dict[str, str]:
    """Prefixes of namespaces a test run made, with that run's id."""
    out: dict[str, str] = {}
    try:
        names = os.listdir(TEST_MARKER_DIR)
    except FileNotFoundError:
        return out
    for name in names:
        with contextlib.suppress(OSError), open(os.path.join(TEST_MARKER_DIR, name)) as f:
            out[name] = f.read().strip()
    return out


def pids_in(netns: str) -> list[int]:
    proc = _ip("netns", "pids", netns, check=False)
    return [int(x) for x in proc.stdout.split() if x.isdigit()]


def kill_processes_in(namespaces: Sequence[str]) -> list[str]:
    """SIGKILL whatever still runs inside `namespaces`, so they can be deleted; what was killed."""
    actions: list[str] = []
    for ns in namespaces:
        for pid in pids_in(ns):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
                actions.append(f"pid {pid} in {ns} killed")
    if namespaces:
        # The kernel frees a namespace only once its last process is reaped.
        time.sleep(0.2)
    return actions


def _route_present() -> bool:
    proc = _ip("route", "show", SUBNET, check=False)
    return "blackhole" in proc.stdout


def add_blackhole_route() -> bool:
    """Add the guard route unless present; True if this call added it."""
    if _route_present():
        return False
    _ip("route", "add", "blackhole", SUBNET)
    return True


def remove_blackhole_route(own_prefix: str | None = None) -> bool:
    """Remove the guard route unless another cluster's switch namespace still exists."""
    others = [
        ns
        for ns in list_namespaces()
        if ns.endswith("-sw") and (own_prefix is None or ns != switch_name(own_prefix))
    ]
    if others or not _route_present():
        return False
    _ip("route", "del", "blackhole", SUBNET, check=False)
    return True


def set_link(prefix: str, index: int, up: bool) -> None:
    """Cut (down) or restore (up) node `index`'s cable at the switch."""
    _ip("-n", switch_name(prefix), "link", "set", f"p{index}", "up" if up else "down")
