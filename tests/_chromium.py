"""Open a local HTML file in headless Chromium and report what a person would see.

Talks to Chromium over the DevTools protocol on ``--remote-debugging-pipe`` (fd 3 for
commands, fd 4 for replies, NUL-separated JSON): no websocket, no network port. Collects
console errors, uncaught exceptions and failed loads, checks every ``<img>`` decoded with a
non-zero size, and takes a full-page screenshot.

Chromium missing is an error (the test must fail, not skip): ``scripts/test.sh`` installs
Debian's ``chromium`` package before running pytest.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["Browser", "PageReport", "open_page"]

_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--remote-debugging-pipe",
)


@dataclass(frozen=True)
class PageReport:
    """What the page did: images as (complete, naturalWidth, naturalHeight, alt), errors."""

    images: list[tuple[bool, int, int, str]]
    errors: list[str]
    title: str
    screenshot_png: bytes
    requested_urls: list[str]
    #: The page's visible text (``document.body.innerText``).
    text: str = ""


class _Pipe:
    def __init__(self, write_fd: int, read_fd: int, deadline: float) -> None:
        self.write_fd = write_fd
        self.read_fd = read_fd
        self.deadline = deadline
        self.buffer = b""
        self.next_id = 0
        self.events: list[dict[str, Any]] = []

    def _read_message(self) -> dict[str, Any]:
        while b"\0" not in self.buffer:
            left = self.deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("chromium did not answer in time")
            ready, _, _ = select.select([self.read_fd], [], [], left)
            if not ready:
                continue
            chunk = os.read(self.read_fd, 1 << 20)
            if not chunk:
                raise RuntimeError("chromium closed the DevTools pipe")
            self.buffer += chunk
        raw, self.buffer = self.buffer.split(b"\0", 1)
        message: dict[str, Any] = json.loads(raw)
        return message

    def call(self, method: str, session: str | None = None, **params: Any) -> dict[str, Any]:
        self.next_id += 1
        message: dict[str, Any] = {"id": self.next_id, "method": method, "params": params}
        if session is not None:
            message["sessionId"] = session
        os.write(self.write_fd, json.dumps(message).encode() + b"\0")
        while True:
            reply = self._read_message()
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method} failed: {reply['error']}")
                result: dict[str, Any] = reply.get("result", {})
                return result
            self.events.append(reply)

    def wait_event(self, method: str, session: str | None = None) -> dict[str, Any]:
        """The first event ``method`` (of the tab ``session``, when given) seen so far or next."""

        def wanted(event: dict[str, Any]) -> bool:
            return event.get("method") == method and (
                session is None or event.get("sessionId") == session
            )

        for event in self.events:
            if wanted(event):
                return event
        while True:
            event = self._read_message()
            self.events.append(event)
            if wanted(event):
                return event


def _errors(events: list[dict[str, Any]]) -> list[str]:
    found: list[str] = []
    for event in events:
        method, params = event.get("method"), event.get("params", {})
        if method == "Runtime.exceptionThrown":
            found.append("exception: " + json.dumps(params.get("exceptionDetails", {}))[:500])
        elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            found.append("console: " + json.dumps(params.get("args", []))[:500])
        elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
            found.append("log: " + str(params["entry"].get("text", ""))[:500])
        elif method == "Network.loadingFailed":
            found.append("load failed: " + str(params.get("errorText", "")))
    return found


def open_page(
    path: Path | str,
    *,
    width: int = 1200,
    timeout: float = 60.0,
    wait_for: str | None = None,
) -> PageReport:
    """Load ``path`` (a file, or a URL given as a string) in headless Chromium and return what
    happened. ``wait_for`` is a JavaScript expression polled after the load event until it is
    true (pages that render after fetching, e.g. Swagger UI); the deadline still applies."""
    with Browser(width=width, timeout=timeout) as browser:
        return browser.open(path, width=width, timeout=timeout, wait_for=wait_for)


class Browser:
    """One headless Chromium for several pages (each in its own tab, closed after use): what
    :func:`open_page` does, without a browser start per page. A page's report holds only its
    own tab's events."""

    def __init__(self, *, width: int = 1200, timeout: float = 60.0) -> None:
        self._width, self._timeout = width, timeout
        self._stack = contextlib.ExitStack()
        self._pipe: _Pipe | None = None

    def __enter__(self) -> Browser:
        exe = shutil.which("chromium")
        if exe is None:
            raise RuntimeError(
                "chromium is not installed; run scripts/test.sh (apt-get install -y chromium)"
            )
        try:
            self._start(exe)
        except BaseException:
            self._stack.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self._stack.close()

    def _start(self, exe: str) -> None:
        # The child's ends are moved above fd 9 first so that bash can put them on 3 and 4
        # without clobbering one with the other (dash only takes fds 0-9).
        low_r, cmd_w = os.pipe()
        res_r, low_w = os.pipe()
        cmd_r = fcntl.fcntl(low_r, fcntl.F_DUPFD, 10)
        res_w = fcntl.fcntl(low_w, fcntl.F_DUPFD, 10)
        os.close(low_r)
        os.close(low_w)
        profile_dir = self._stack.enter_context(
            tempfile.TemporaryDirectory(prefix="infodp-chromium-")
        )
        # Closed by the exit stack, with the browser.
        self._log = log = self._stack.enter_context(tempfile.TemporaryFile())  # noqa: SIM115
        flags = " ".join(_FLAGS)
        script = (
            f"exec 3<&{cmd_r} 4>&{res_w} {cmd_r}<&- {res_w}>&-; "
            f'exec "{exe}" {flags} --user-data-dir="{profile_dir}" '
            f"--window-size={self._width},900 about:blank"
        )
        proc = subprocess.Popen(
            ["bash", "-c", script],
            pass_fds=(cmd_r, res_w),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
        )
        os.close(cmd_r)
        os.close(res_w)
        pipe = _Pipe(cmd_w, res_r, time.monotonic() + self._timeout)

        def stop() -> None:
            with contextlib.suppress(RuntimeError, TimeoutError, OSError):
                pipe.deadline = time.monotonic() + 15
                pipe.call("Browser.close")
            os.close(cmd_w)
            os.close(res_r)
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

        self._stack.callback(stop)
        self._pipe = pipe

    def open(
        self,
        path: Path | str,
        *,
        width: int | None = None,
        timeout: float | None = None,
        wait_for: str | None = None,
    ) -> PageReport:
        """Load ``path`` in a new tab (as :func:`open_page`) and close the tab."""
        pipe = self._pipe
        if pipe is None:
            raise RuntimeError("the browser is not started: use it in a with block")
        width = self._width if width is None else width
        pipe.deadline = time.monotonic() + (self._timeout if timeout is None else timeout)
        try:
            target = pipe.call("Target.createTarget", url="about:blank")["targetId"]
            session = pipe.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
            try:
                return _report(pipe, session, path, width, wait_for)
            finally:
                with contextlib.suppress(RuntimeError, TimeoutError):
                    pipe.call("Target.closeTarget", targetId=target)
        except (RuntimeError, TimeoutError) as err:
            self._log.seek(0)
            tail = self._log.read()[-2000:].decode(errors="replace")
            raise RuntimeError(f"{err}; chromium said:\n{tail}") from err


def _report(
    pipe: _Pipe, session: str, path: Path | str, width: int, wait_for: str | None
) -> PageReport:
    """Load ``path`` in the attached tab ``session`` and read what it shows."""
    for domain in ("Runtime", "Log", "Page", "Network"):
        pipe.call(f"{domain}.enable", session)
    pipe.call(
        "Emulation.setDeviceMetricsOverride",
        session,
        width=width,
        height=900,
        deviceScaleFactor=1,
        mobile=False,
    )
    url = path if isinstance(path, str) else path.resolve().as_uri()
    pipe.call("Page.navigate", session, url=url)
    pipe.wait_event("Page.loadEventFired", session)
    while wait_for is not None:
        done = pipe.call(
            "Runtime.evaluate", session, expression=f"!!({wait_for})", returnByValue=True
        )
        if done["result"].get("value") is True:
            break
        if time.monotonic() > pipe.deadline:
            raise TimeoutError(f"the page never satisfied {wait_for!r}")
        time.sleep(0.2)
    probe = pipe.call(
        "Runtime.evaluate",
        session,
        expression=(
            "JSON.stringify({title: document.title, images: Array.from(document.images)"
            ".map(i => [i.complete, i.naturalWidth, i.naturalHeight, i.alt]),"
            " text: document.body ? document.body.innerText : ''})"
        ),
        returnByValue=True,
    )
    seen = json.loads(probe["result"]["value"])
    shot = pipe.call("Page.captureScreenshot", session, format="png", captureBeyondViewport=True)
    events = [e for e in pipe.events if e.get("sessionId") == session]
    requested = [
        str(e["params"]["request"]["url"])[:80]
        for e in events
        if e.get("method") == "Network.requestWillBeSent"
    ]
    return PageReport(
        images=[(bool(c), int(w), int(h), str(a)) for c, w, h, a in seen["images"]],
        errors=_errors(events),
        title=str(seen["title"]),
        screenshot_png=base64.b64decode(shot["data"]),
        requested_urls=requested,
        text=str(seen.get("text", "")),
    )
