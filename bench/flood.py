"""Connection floods and slowloris against a real `kraftpy-controller`: do heartbeats keep their latency?

    .venv/bin/python bench/flood.py [--brokers 10] [--flood 2000] [--seconds 15] [--keep DIR]

Simulated brokers (registered over HTTP) heartbeat every 250 ms on their kept-alive connection, and
once per 500 ms one heartbeat goes out on a fresh connection (what a restarted broker does). After a
quiet phase, a separate process attacks from another loopback address (127.0.0.2):
- a connection flood: it keeps opening connections, reopening each one the controller closes;
- slowloris: every open connection trickles an HTTP request header, one byte a second, never ending it.

The run is done twice: with Kafka's defaults (no connection bounds) and with
`max.connections.per.ip=64` plus an override for the brokers' address (Kafka's advice for a listener
clients can reach). Prints connections tried, how many the controller held, heartbeat p50/p99/max
before and during, and whether any simulated broker was fenced. No timed assertions: figures and goals.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib.util
import json
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import aiohttp

from protocol.uuid import Uuid

_spec = importlib.util.spec_from_file_location("bench_controller", Path(__file__).parent / "controller.py")
assert _spec is not None and _spec.loader is not None
bench_controller = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench_controller)
Controller, Rpc = bench_controller.Controller, bench_controller.Rpc
registration, heartbeat, check = (
    bench_controller.registration,
    bench_controller.heartbeat,
    bench_controller.check,
)
percentile = bench_controller.percentile

ATTACKER = "127.0.0.2"
BOUNDED = {"max.connections.per.ip": 64, "max.connections.per.ip.overrides": "127.0.0.1:100000"}
GOAL = "no broker fenced; heartbeat p99 during the flood within 2x the quiet p99 + 20 ms"


# ---- the attacker (its own process, so its work does not slow the measuring loop) ------------------


def flood(port: int, connections: int, seconds: float) -> dict[str, int]:
    """Keep `connections` sockets open to 127.0.0.1:`port` from ATTACKER, each trickling a header."""
    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, connections + 256), hard))
    tried = refused = closed = 0
    open_socks: list[socket.socket] = []
    started: set[int] = set()
    header = b"POST /rpc/BrokerHeartbeat HTTP/1.1\r\nHost: controller\r\nX-Slow: "
    deadline = time.monotonic() + seconds
    next_trickle = time.monotonic()
    while time.monotonic() < deadline:
        while len(open_socks) < connections and time.monotonic() < deadline:
            s = socket.socket()
            s.setblocking(False)
            tried += 1
            try:
                s.bind((ATTACKER, 0))
                s.connect_ex(("127.0.0.1", port))
                open_socks.append(s)
            except OSError:
                refused += 1
                s.close()
                break
        if time.monotonic() >= next_trickle:
            next_trickle = time.monotonic() + 1.0
            alive = []
            for s in open_socks:
                try:
                    # the request line first, then one more header byte a second
                    s.send(b"a" if s.fileno() in started else header)
                    started.add(s.fileno())
                    alive.append(s)
                except (BlockingIOError, InterruptedError):
                    alive.append(s)  # still connecting
                except OSError:
                    closed += 1
                    started.discard(s.fileno())
                    s.close()
            open_socks = alive
        time.sleep(0.01)
    held = len(open_socks)
    for s in open_socks:
        s.close()
    return {"tried": tried, "refused_at_connect": refused, "closed_by_server": closed, "held_at_end": held}


# ---- the measurement -------------------------------------------------------------------------------


async def heartbeats(
    url: str, epochs: dict[int, int], seconds: float, fenced: set[int]
) -> tuple[list[float], list[float]]:
    """(kept-alive latencies, fresh-connection latencies) in ms over `seconds`."""
    kept: list[float] = []
    fresh: list[float] = []
    rpc = Rpc(url, connections=len(epochs) + 4)
    stop = time.monotonic() + seconds

    async def broker(b: int, epoch: int) -> None:
        body = Rpc.encode(heartbeat(b, epoch))
        while time.monotonic() < stop:
            t0 = time.perf_counter()
            try:
                resp = await asyncio.wait_for(rpc.post("BrokerHeartbeat", body), 10)
                kept.append((time.perf_counter() - t0) * 1000)
                if resp.get("IsFenced"):
                    fenced.add(b)
            except (TimeoutError, aiohttp.ClientError, RuntimeError):
                kept.append(10_000.0)
            await asyncio.sleep(0.25)

    async def reconnecting(b: int, epoch: int) -> None:
        body = Rpc.encode(heartbeat(b, epoch))
        headers = {"Content-Type": "application/msgpack"}
        while time.monotonic() < stop:
            t0 = time.perf_counter()
            try:
                async with (
                    aiohttp.ClientSession(connector=aiohttp.TCPConnector(force_close=True)) as s,
                    s.post(
                        f"{url}/rpc/BrokerHeartbeat",
                        data=body,
                        headers=headers,
                        timeout=aiohttp.ClientTimeout(total=10),
                    ) as r,
                ):
                    await r.read()
                fresh.append((time.perf_counter() - t0) * 1000)
            except (TimeoutError, aiohttp.ClientError):
                fresh.append(10_000.0)
            await asyncio.sleep(0.5)

    try:
        first = next(iter(epochs))
        await asyncio.gather(*(broker(b, e) for b, e in epochs.items()), reconnecting(first, epochs[first]))
    finally:
        await rpc.close()
    return sorted(kept), sorted(fresh)


def _fmt(values: list[float]) -> str:
    if not values:
        return "no samples"
    return f"p50 {percentile(values, 0.5):7.1f}  p99 {percentile(values, 0.99):7.1f}  max {values[-1]:7.1f} ms ({len(values)})"


async def run_once(label: str, extra: dict[str, object], args: argparse.Namespace, workdir: Path) -> None:
    ctl = Controller(workdir, {"broker.session.timeout.ms": 9000, **extra})
    rpc = Rpc(ctl.url)
    try:
        epochs = {}
        for b in range(1, args.brokers + 1):
            epochs[b] = check(
                await rpc.call("BrokerRegistration", registration(ctl.cluster_id, b, [Uuid.random()])),
                "register",
            )["BrokerEpoch"]
        for _ in range(2):
            for b, e in epochs.items():
                await rpc.call("BrokerHeartbeat", heartbeat(b, e))
        fenced: set[int] = set()
        quiet_kept, quiet_fresh = await heartbeats(ctl.url, epochs, args.quiet, fenced)
        attacker = subprocess.Popen(
            [sys.executable, __file__, "--attack", str(ctl.port), str(args.flood), str(args.seconds)],
            stdout=subprocess.PIPE,
            text=True,
        )
        await asyncio.sleep(1.0)  # let the flood build up
        flood_kept, flood_fresh = await heartbeats(ctl.url, epochs, args.seconds - 2, fenced)
        held = await bench_controller.metric(rpc, "kafka_server_socket_server_metrics_connection_count")
        refused = await bench_controller.metric(rpc, "kraftpy_connections_refused_total")
        out, _ = attacker.communicate(timeout=args.seconds + 30)
        attack = json.loads(out.strip().splitlines()[-1])
        alive = ctl.proc.alive
    finally:
        await rpc.close()
        ctl.stop()
    print(f"\n== {label}")
    print(
        f"attacker from {ATTACKER}: {attack['tried']} connections tried (slowloris: one header byte a second); "
        f"the controller held {held:.0f} connections near the end, refused {refused:.0f} at accept"
    )
    print(f"heartbeats, kept-alive   quiet: {_fmt(quiet_kept)}")
    print(f"                         flood: {_fmt(flood_kept)}")
    print(f"heartbeats, new conn.    quiet: {_fmt(quiet_fresh)}")
    print(f"                         flood: {_fmt(flood_fresh)}")
    q99 = percentile(quiet_kept, 0.99)
    f99 = percentile(flood_kept + flood_fresh, 0.99)
    met = not fenced and f99 <= 2 * max(q99, percentile(quiet_fresh, 0.99)) + 20 and alive
    print(f"brokers fenced: {sorted(fenced) or 'none'}; controller alive: {alive}")
    print(f"goal: {GOAL}: {'met' if met else 'NOT met'}")


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "--attack":
        port, n, seconds = int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
        print(json.dumps(flood(port, n, seconds)))
        return 0
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--brokers", type=int, default=10)
    ap.add_argument("--flood", type=int, default=2000, help="connections the attacker keeps open")
    ap.add_argument("--seconds", type=float, default=15.0, help="how long the flood lasts")
    ap.add_argument("--quiet", type=float, default=5.0, help="seconds of heartbeats before the flood")
    ap.add_argument("--keep", metavar="DIR", help="keep the controller's files here")
    args = ap.parse_args()
    root = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="kraftpy-flood-"))
    try:
        asyncio.run(run_once("Kafka's defaults: no connection bounds", {}, args, root / "unbounded"))
        asyncio.run(
            run_once(
                "max.connections.per.ip=64, brokers' address overridden",
                dict(BOUNDED),
                args,
                root / "bounded",
            )
        )
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        sys.exit(main())
