"""A real uvicorn server on 127.0.0.1 in a thread, for behaviour TestClient hides.

TestClient runs the whole ASGI call before handing back the response, so work done after the response
is sent (a dependency's exit) and the event loop's fairness between concurrent requests are invisible
to it. Everything here is bounded: startup and shutdown give up after a few seconds.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import uvicorn
from fastapi import FastAPI


@contextmanager
def serve(app: FastAPI, start_timeout: float = 20.0) -> Iterator[str]:
    """Serve `app` on a free port; yields the base URL."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))  # a free port, held from now on: no race with other processes
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + start_timeout
    try:
        while not server.started:
            assert time.monotonic() < deadline and thread.is_alive(), "uvicorn did not start"
            time.sleep(0.02)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()
