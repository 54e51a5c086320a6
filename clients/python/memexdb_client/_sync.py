"""Synchronous facades over async clients: one event loop on a daemon thread per client,
and decorators that turn an async method into its blocking (or iterating) twin with the
same signature and docstring.

Shared by memexdb_client.MemexClient and the server package's memexdb.Memex (which ships
this package), so the two sync clients run coroutines the same way.
"""

from __future__ import annotations

import asyncio
import functools
import threading
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator
from typing import Any, Concatenate, ParamSpec, Protocol, TypeVar

_P = ParamSpec("_P")
_R = TypeVar("_R")
_T = TypeVar("_T")
_A = TypeVar("_A")


class LoopThread:
    """An event loop on its own daemon thread, for running coroutines from sync code."""

    def __init__(self, name: str) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name=name, daemon=True)
        self._thread.start()

    def run(self, coro: Coroutine[Any, Any, _R]) -> _R:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join()
        self.loop.close()


class SyncFacade(Protocol):
    """What the decorators need of a sync class: its async client and its loop."""

    @property
    def _async(self) -> Any: ...

    @property
    def _loop(self) -> LoopThread: ...


def blocking(
    method: Callable[Concatenate[_A, _P], Coroutine[Any, Any, _R]],
) -> Callable[Concatenate[SyncFacade, _P], _R]:
    """The sync form of an async method: same signature and docstring."""

    def call(self: SyncFacade, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        return self._loop.run(method(self._async, *args, **kwargs))

    functools.update_wrapper(call, method)
    return call


def iterating(
    method: Callable[Concatenate[_A, _P], AsyncIterator[_T]],
) -> Callable[Concatenate[SyncFacade, _P], Iterator[_T]]:
    """The sync form of an async iterator method: an iterator, one item at a time."""

    def call(self: SyncFacade, /, *args: _P.args, **kwargs: _P.kwargs) -> Iterator[_T]:
        items = method(self._async, *args, **kwargs)
        try:
            while True:
                try:
                    yield self._loop.run(_next(items))
                except StopAsyncIteration:
                    return
        finally:
            self._loop.run(_close(items))

    functools.update_wrapper(call, method)
    return call


async def _next(items: AsyncIterator[_T]) -> _T:
    return await anext(items)


async def _close(items: AsyncIterator[Any]) -> None:
    close = getattr(items, "aclose", None)
    if close is not None:
        await close()
