"""The migration shell reads the committed image off the loop: folding it may wait for a snapshot's fold."""

from __future__ import annotations

import threading

from controller.migration.shell import MigrationShell
from kraftpy.image import MetadataImage


async def test_the_committed_image_is_folded_off_the_loop() -> None:
    folded_on: list[threading.Thread] = []

    def image() -> MetadataImage:
        folded_on.append(threading.current_thread())
        return MetadataImage.EMPTY

    shell = MigrationShell(
        node_id=3000,
        voters=[3000],
        zookeeper_connect="127.0.0.1:1",  # never connected: the shell is not started
        session_timeout_ms=6000,
        term=lambda: None,
        image=image,
    )
    assert await shell.current_image() is MetadataImage.EMPTY
    assert folded_on and folded_on[0] is not threading.main_thread()
