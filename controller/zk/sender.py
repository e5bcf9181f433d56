"""Requests to one broker, in order, each retried until answered or the broker is gone: how a
controller that is not a broker's peer (the ZooKeeper-mode controller, and a KRaft controller during
a migration) reaches each ZooKeeper-mode broker."""

from __future__ import annotations

import asyncio
import ssl as _ssl
from collections.abc import Callable
from typing import Any

import structlog

from controller.zk.model import LiveBroker
from controller.zk.requests import BrokerRequest
from controller.zk.wire import RequestWire
from protocol.errors import Errors
from protocol.transport import RpcClient, RpcConnectionError
from protocol.transport.client import NO_RETRIES

log = structlog.get_logger("controller.zk")

SEND_TIMEOUT_S = 10.0
SEND_BACKOFF_S = 0.1


class BrokerSender:
    """One broker's requests, in order, each retried until answered or the broker is gone."""

    def __init__(
        self,
        broker: LiveBroker,
        url: str,
        on_answer: Callable[[BrokerRequest, Any], None],
        *,
        ssl: _ssl.SSLContext | None = None,
    ) -> None:
        """`ssl`: the client context when the broker's listener is TLS."""
        self.broker = broker
        self._client = RpcClient(url, timeout=SEND_TIMEOUT_S, retry=NO_RETRIES, ssl=ssl)
        self._queue: asyncio.Queue[tuple[BrokerRequest, RequestWire]] = asyncio.Queue()
        self._on_answer = on_answer
        self._task = asyncio.create_task(self._run(), name=f"zk-controller-sender-{broker.id}")

    def send(self, req: BrokerRequest, wire: RequestWire) -> None:
        self._queue.put_nowait((req, wire))

    async def stop(self) -> None:
        self._task.cancel()
        await asyncio.gather(self._task, return_exceptions=True)
        await self._client.close()

    async def _run(self) -> None:
        while True:
            req, wire = await self._queue.get()
            api, body = wire.encode(req)
            while True:
                try:
                    response = await self._client.call(api, body)
                except (RpcConnectionError, TimeoutError) as e:
                    log.debug("broker unreachable; retrying", broker=self.broker.id, api=api, error=str(e))
                    await asyncio.sleep(SEND_BACKOFF_S)
                    continue
                break
            code = getattr(response, "ErrorCode", 0)
            if code != Errors.NONE:
                log.warning(
                    "broker refused a controller request",
                    broker=self.broker.id,
                    api=api,
                    error=Errors(code).name,
                )
            self._on_answer(req, response)
