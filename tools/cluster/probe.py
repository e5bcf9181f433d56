"""HTTP probes of the nodes: `/healthz` and `/metrics`, standard library only; and ZooKeeper's
`ruok` for a `zk://host:port` address (200 when it answers `imok`).

In multi-host mode the nodes' addresses exist only inside the test network, so the probe runs there:
`nsenter --net=/run/netns/<client ns> -- python -m tools.cluster.probe URL...` prints one JSON
object mapping each URL to its result. `probe_all` hides which of the two ways is used.

With a command config (tools.client.security) every `http://` URL is fetched over TLS with its
client certificate.
"""

from __future__ import annotations

import json
import os
import ssl
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from tools.client.security import CURRENT, child_env, client_context, urlopen


def zk_serving(host: str, port: int, timeout: float = 1.0) -> bool:
    """Whether ZooKeeper serves clients: its `srvr` answer starts with its version once it does.

    Not `ruok`: that answers `imok` as soon as the port listens, while the server may still be loading
    its database and dropping every session attempt ("ZooKeeperServer not running").
    """
    import socket

    try:
        with socket.create_connection((host, port), timeout=timeout) as sock:
            sock.sendall(b"srvr")
            return sock.recv(64).startswith(b"Zookeeper version:")
    except OSError:
        return False


def fetch(url: str, timeout: float = 1.0, ctx: ssl.SSLContext | None = CURRENT) -> dict[str, Any]:
    """{"status": HTTP status or None, "body": parsed JSON or text, "error": text or None}.
    `ctx`: the TLS client context (default: the command config's)."""
    if ctx is CURRENT:
        ctx = client_context()
    if url.startswith(METADATA_SCHEME):
        return _metadata(url[len(METADATA_SCHEME) :], timeout, ctx)
    if url.startswith("zk://"):
        host, _, port = url[len("zk://") :].rpartition(":")
        if zk_serving(host, int(port), timeout):
            return {"status": 200, "body": {"status": "ok"}, "error": None}
        return {"status": None, "body": None, "error": "not serving clients (no version in its srvr answer)"}
    try:
        with urlopen(url, timeout, ctx) as resp:
            status, raw = resp.status, resp.read()
    except urllib.error.HTTPError as e:
        status, raw = e.code, e.read()
    except (OSError, ValueError) as e:
        return {"status": None, "body": None, "error": str(getattr(e, "reason", e))}
    text = raw.decode(errors="replace")
    body: Any = text
    if text[:1] in "{[":
        try:
            body = json.loads(text)
        except ValueError:
            pass
    return {"status": status, "body": body, "error": None}


METADATA_SCHEME = "metadata+"
"""`metadata+http://host:port`: a broker's Metadata answer for every topic (JSON, Kafka's field names)."""


def _metadata(base: str, timeout: float, ctx: ssl.SSLContext | None) -> dict[str, Any]:
    body = json.dumps(
        {"Topics": None, "AllowAutoTopicCreation": False, "IncludeTopicAuthorizedOperations": False}
    ).encode()
    req = urllib.request.Request(
        f"{base}/rpc/Metadata",
        data=body,
        headers={"Content-Type": "application/json", "Accept": "application/json", "Kafka-Api-Version": "12"},
        method="POST",
    )
    try:
        with urlopen(req, timeout, ctx) as resp:
            return {"status": resp.status, "body": json.loads(resp.read()), "error": None}
    except urllib.error.HTTPError as e:
        return {"status": e.code, "body": None, "error": str(e)}
    except (OSError, ValueError) as e:
        return {"status": None, "body": None, "error": str(getattr(e, "reason", e))}


def fetch_many(urls: Sequence[str], timeout: float = 1.0) -> dict[str, dict[str, Any]]:
    if not urls:
        return {}
    # Read here: the worker threads do not see the command config a caller's block set.
    ctx = client_context()
    with ThreadPoolExecutor(max_workers=min(16, len(urls))) as pool:
        results = list(pool.map(lambda u: fetch(u, timeout, ctx), urls))
    return dict(zip(urls, results, strict=True))


def probe_all(urls: Sequence[str], netns: str | None, timeout: float = 1.0) -> dict[str, dict[str, Any]]:
    """Fetch every URL, from inside `netns` when given (a short-lived helper process joins it)."""
    if netns is None:
        return fetch_many(urls, timeout)
    from tools.cluster.netns import wrap

    argv = wrap([sys.executable, "-m", "tools.cluster.probe", "--timeout", str(timeout), *urls], netns)
    try:
        proc = subprocess.run(
            argv,
            capture_output=True,
            text=True,
            timeout=timeout * 2 + 10,
            check=False,
            env={**os.environ, **child_env()},
        )
        return json.loads(proc.stdout)
    except (subprocess.TimeoutExpired, ValueError):
        err = {"status": None, "body": None, "error": f"probe inside {netns} failed"}
        return {u: dict(err) for u in urls}


def parse_metrics(text: str) -> dict[str, list[tuple[dict[str, str], float]]]:
    """Prometheus text exposition -> {metric name: [(labels, value)]} (comments skipped)."""
    out: dict[str, list[tuple[dict[str, str], float]]] = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        name_part, _, value_part = line.rpartition(" ")
        labels: dict[str, str] = {}
        name = name_part
        if "{" in name_part:
            name, _, rest = name_part.partition("{")
            for item in _split_labels(rest.rstrip("}")):
                k, _, v = item.partition("=")
                labels[k.strip()] = v.strip().strip('"').replace('\\"', '"').replace("\\\\", "\\")
        try:
            value = float(value_part)
        except ValueError:
            continue
        out.setdefault(name.strip(), []).append((labels, value))
    return out


def _split_labels(s: str) -> list[str]:
    items, cur, quoted, escaped = [], [], False, False
    for c in s:
        if escaped:
            cur.append(c)
            escaped = False
        elif c == "\\":
            cur.append(c)
            escaped = True
        elif c == '"':
            quoted = not quoted
            cur.append(c)
        elif c == "," and not quoted:
            items.append("".join(cur))
            cur = []
        else:
            cur.append(c)
    if cur:
        items.append("".join(cur))
    return [i for i in items if i.strip()]


def main(argv: Sequence[str] | None = None) -> int:
    import argparse

    p = argparse.ArgumentParser(prog="python -m tools.cluster.probe")
    p.add_argument("--timeout", type=float, default=1.0)
    p.add_argument("urls", nargs="*")
    args = p.parse_args(argv)
    json.dump(fetch_many(args.urls, args.timeout), sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
