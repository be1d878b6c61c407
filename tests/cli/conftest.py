"""Fixtures shared by the CLI tests."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture
def served(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Any]]:
    """The apps ``infodp serve`` would have run: uvicorn's Server.run is replaced (the socket
    is bound, on a free port, but nothing is served)."""
    import uvicorn

    apps: list[Any] = []

    def run(server: Any, sockets: Any = None) -> None:
        apps.append(server.config.app)
        server.started = True

    monkeypatch.setattr(uvicorn.Server, "run", run)
    interval = sys.getswitchinterval()
    yield apps
    sys.setswitchinterval(interval)
    for app in apps:
        app.state.service.close()
