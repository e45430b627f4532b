"""The one sync bridge: run a coroutine to completion from sync code, even inside a running loop.

With no loop running it uses ``asyncio.run``; inside one (Jupyter, an async web app) it runs the
coroutine on a fresh loop in a worker thread, because ``asyncio.run`` would raise there.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")


def run_sync(factory: Callable[[], Awaitable[T]]) -> T:
    """Run ``factory()`` (a coroutine function with no arguments) and return its result."""

    async def main() -> T:
        return await factory()

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(main())
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="hcg-sync-bridge") as pool:
        return pool.submit(asyncio.run, main()).result()
