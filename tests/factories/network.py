"""A loopback TCP proxy that can black-hole traffic: a silent network partition, on demand.

`partition()` stops forwarding in both directions without closing anything, as a dropped route
would: the client's bytes are accepted (the proxy's kernel still ACKs them) and then nothing comes
back; new connections are accepted and never answered. `heal()` delivers what was held, as TCP's
retransmission would after a short partition. Nothing here ever closes a socket on its own, so a
client only notices through its own timeouts, which is exactly what the tests need to measure.
"""

from __future__ import annotations

import socket
import threading
from contextlib import suppress
from types import TracebackType


class BlackholeProxy:
    def __init__(self, target: tuple[str, int] = ("127.0.0.1", 5432)) -> None:
        self.target = target
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._forwarding = threading.Event()
        self._forwarding.set()
        self._closed = threading.Event()
        self._sockets: list[socket.socket] = []
        self._guard = threading.Lock()
        threading.Thread(target=self._accept, name="blackhole-accept", daemon=True).start()

    # -- control ------------------------------------------------------------------------------

    def partition(self) -> None:
        self._forwarding.clear()

    def heal(self) -> None:
        self._forwarding.set()

    def close(self) -> None:
        self._closed.set()
        self._forwarding.set()  # release pumps waiting to forward, so they see the closed sockets
        self._listener.close()
        with self._guard:
            sockets, self._sockets = self._sockets, []
        for s in sockets:
            with suppress(OSError):
                s.close()

    def __enter__(self) -> BlackholeProxy:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # -- plumbing -----------------------------------------------------------------------------

    def _track(self, s: socket.socket) -> None:
        with self._guard:
            self._sockets.append(s)

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            self._track(client)
            threading.Thread(target=self._open, args=(client,), daemon=True).start()

    def _open(self, client: socket.socket) -> None:
        # A connection made during a partition waits here (accepted, never answered) until healed.
        self._forwarding.wait()
        if self._closed.is_set():
            return
        try:
            upstream = socket.create_connection(self.target)
        except OSError:
            client.close()
            return
        self._track(upstream)
        threading.Thread(target=self._pump, args=(client, upstream), daemon=True).start()
        threading.Thread(target=self._pump, args=(upstream, client), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket) -> None:
        try:
            while True:
                data = src.recv(65536)
                self._forwarding.wait()  # held, not dropped, while partitioned
                if not data or self._closed.is_set():
                    break
                dst.sendall(data)
        except OSError:
            pass
        for s in (src, dst):
            with suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
