"""A TCP proxy in front of a Unix socket (the test PostgreSQL server's), in a thread of its own,
that can drop every connection and refuse new ones for a while: "the network went away for 5 s"
with the server itself still up (bench/fault_sweep.py, tests/store/test_database_faults.py).

    with TcpProxy(pg.folder / ".s.PGSQL.5432") as proxy:
        url = f"postgresql://postgres@127.0.0.1:{proxy.port}/db"
        ...
        proxy.drop(5.0)  # cut every open connection; refuse (reset) new ones for 5 s
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from pathlib import Path


class TcpProxy:
    def __init__(self, target: Path) -> None:
        self.target = target
        self.port = 0
        self.dropped = 0  # connections cut by drop()
        self._refuse_until = 0.0
        self._links: set[asyncio.StreamWriter] = set()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._ready = threading.Event()
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(target=lambda: asyncio.run(self._serve()),
                                        name="TcpProxy", daemon=True)

    def __enter__(self) -> TcpProxy:
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("the TCP proxy did not start")
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(10)

    def drop(self, seconds: float) -> None:
        """Cut every connection now and reset the new ones for ``seconds``."""
        self._refuse_until = time.monotonic() + seconds
        assert self._loop is not None
        done = threading.Event()

        def cut() -> None:
            for writer in list(self._links):
                writer.transport.abort()
                self.dropped += 1
            self._links.clear()
            done.set()

        self._loop.call_soon_threadsafe(cut)
        done.wait(5)

    async def _serve(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        await self._stop.wait()
        server.close()
        for writer in list(self._links):
            writer.transport.abort()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if time.monotonic() < self._refuse_until:
            writer.transport.abort()  # a reset, as an unreachable peer's firewall gives
            return
        try:
            up_reader, up_writer = await asyncio.open_unix_connection(str(self.target))
        except OSError:
            writer.transport.abort()
            return
        self._links.update((writer, up_writer))
        await asyncio.gather(self._pipe(reader, up_writer), self._pipe(up_reader, writer))
        self._links.difference_update((writer, up_writer))

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(OSError, asyncio.IncompleteReadError):
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        writer.close()  # one side ended: so does the other
