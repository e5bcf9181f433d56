"""Container health check: GET /healthz on the node's own listener.

The port comes from $KRAFTPY_HEALTH_URL if set, else from the first entry of `listeners` in the
config the container's main process was started with (`-c FILE` in /proc/1/cmdline), else 9092.
Exit 0 when the node answers 200, 1 otherwise (what Docker's HEALTHCHECK expects).
"""

from __future__ import annotations

import os
import sys
import urllib.request
from pathlib import Path

DEFAULT_PORT = 9092


def config_path(cmdline: list[str]) -> str | None:
    for i, arg in enumerate(cmdline):
        if arg in ("-c", "--config") and i + 1 < len(cmdline):
            return cmdline[i + 1]
        if arg.startswith("--config="):
            return arg.split("=", 1)[1]
    return None


def listener_port(properties: str) -> int | None:
    for raw in properties.splitlines():
        line = raw.strip()
        if line.startswith(("#", "!")) or "=" not in line:
            continue
        key, value = (part.strip() for part in line.split("=", 1))
        if key == "listeners" and value:
            first = value.split(",")[0]
            return int(first.rsplit(":", 1)[1])
    return None


def health_url() -> str:
    if url := os.environ.get("KRAFTPY_HEALTH_URL"):
        return url
    port = DEFAULT_PORT
    try:
        cmdline = Path("/proc/1/cmdline").read_bytes().decode().split("\0")
        path = config_path(cmdline)
        if path is not None:
            port = listener_port(Path(path).read_text()) or DEFAULT_PORT
    except (OSError, ValueError, IndexError):
        pass
    return f"http://127.0.0.1:{port}/healthz"


def main() -> int:
    url = health_url()
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            ok = response.status == 200
    except OSError as e:
        print(f"{url}: {e}", file=sys.stderr)
        return 1
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
