"""A broker's request to the ZooKeeper-mode controller (AlterPartition, ControlledShutdown) runs as an
event in turn with the watches; whatever becomes of that event, the request is answered."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from controller.zk.core import ZkControllerResult
from controller.zk.shell import ZkControllerShell
from kraftpy.zookeeper import ZkError
from protocol.errors import Errors, KafkaError


def shell() -> ZkControllerShell:
    s = ZkControllerShell(zk=None, broker_id=1, epoch=1, epoch_zk_version=0)  # type: ignore[arg-type]
    s.active = True  # as start() leaves it, without reading a cluster from ZooKeeper
    return s


def failing_on_zookeeper() -> ZkControllerResult:
    raise ZkError("connection loss", path="/brokers/topics/t/partitions/0/state")


async def test_an_event_that_fails_answers_its_request_with_an_error() -> None:
    s = shell()
    s._tasks.append(asyncio.create_task(s._run()))
    try:
        with pytest.raises(KafkaError) as e:
            await asyncio.wait_for(s._ask(failing_on_zookeeper, lambda r: r), 5)
        assert e.value.code is Errors.UNKNOWN_SERVER_ERROR
        assert "connection loss" in str(e.value)
        # The event loop goes on: the next request is answered.
        answered: Any = await asyncio.wait_for(
            s._ask(lambda: ZkControllerResult(response="ok"), lambda r: r), 5
        )
        assert answered == "ok"
    finally:
        await s.stop()


async def test_a_request_queued_when_the_controller_resigns_is_answered_not_controller() -> None:
    s = shell()  # no event task: the request waits in the queue until the resignation
    ask = asyncio.create_task(s._ask(lambda: ZkControllerResult(response="ok"), lambda r: r))
    await asyncio.sleep(0)
    await s.stop()
    with pytest.raises(KafkaError) as e:
        await asyncio.wait_for(ask, 5)
    assert e.value.code is Errors.NOT_CONTROLLER


async def test_a_request_to_a_resigned_controller_is_answered_not_controller() -> None:
    s = shell()
    await s.stop()
    with pytest.raises(KafkaError) as e:
        await asyncio.wait_for(s._ask(lambda: ZkControllerResult(response="ok"), lambda r: r), 5)
    assert e.value.code is Errors.NOT_CONTROLLER
