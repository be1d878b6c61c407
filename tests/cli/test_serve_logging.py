"""``infodp serve`` configures only uvicorn's loggers: it neither shuts down nor closes the
log handlers (and streams) of the other libraries in its process, and its own handlers
write to the current ``sys.stderr``, never to a stream replaced since.

uvicorn's default dictConfig shut down every handler of the process; absl's (installed by
dp_accounting, bound to the ``sys.stderr`` of its import: pytest's capture buffer) then
closed that buffer, and pytest lost its stderr after any test module importing
dp_accounting ran before a serve test.
"""

from __future__ import annotations

import io
import logging
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

import infodp
from _server_harness import build_store
from infodp.cli import main


class _ClosesItsStream(logging.StreamHandler):  # type: ignore[type-arg]
    """Like absl's handler: closing it closes the stream it was given."""

    def close(self) -> None:
        self.stream.close()
        super().close()


def _serve(tmp_path: Path) -> int:
    db, _ = build_store(tmp_path, [("alice", "people", 1)], rows=10)
    return main(["serve", "--db", db, "--workers", "0", "--port", "0"])


@pytest.mark.slow
def test_other_handlers_and_their_streams_stay_open(tmp_path: Path, served: list[Any]) -> None:
    stream = io.StringIO()
    foreign = _ClosesItsStream(stream)
    root = logging.getLogger()
    root.addHandler(foreign)
    try:
        assert _serve(tmp_path) == 0
        assert len(served) == 1
        assert not stream.closed
        assert foreign in root.handlers
        root.warning("still logging")
        assert stream.getvalue() == "still logging\n"
    finally:
        root.removeHandler(foreign)


@pytest.mark.slow
def test_server_logs_go_to_the_current_stderr(
    tmp_path: Path, served: list[Any], capsys: pytest.CaptureFixture[str]
) -> None:
    assert _serve(tmp_path) == 0
    capsys.readouterr()
    logging.getLogger("uvicorn.error").info("first")
    assert capsys.readouterr().err.endswith("first\n")
    with capsys.disabled():  # sys.stderr replaced: the handler follows it
        replaced = io.StringIO()
        saved, sys.stderr = sys.stderr, replaced
        try:
            logging.getLogger("uvicorn.error").info("second")
        finally:
            sys.stderr = saved
    assert replaced.getvalue().endswith("second\n")


@pytest.mark.slow  # seconds of CPU: out of the quick tier
def test_capsys_cli_test_then_serve_in_one_pytest_run(tmp_path: Path) -> None:
    # The failure as it happened: a module importing dp_accounting at collection (so absl's
    # handler holds pytest's capture buffer), a CLI test under capsys, then `serve`.
    (tmp_path / "test_inner.py").write_text(
        textwrap.dedent(
            """
            import json

            import dp_accounting  # noqa: F401  (installs absl's log handler)
            import uvicorn

            from infodp.cli import main
            from _server_harness import build_store


            def test_cli_under_capsys(capsys):
                args = ["account", "--mechanism", "laplace", "--scale", "10",
                        "--sensitivity", "1", "--compositions", "10", "--delta", "1e-6"]
                assert main([*args, "--json"]) == 0
                assert json.loads(capsys.readouterr().out)


            def test_serve(tmp_path, monkeypatch, capsys):
                apps = []

                def run(server, sockets=None):
                    apps.append(server.config.app)
                    server.started = True

                monkeypatch.setattr(uvicorn.Server, "run", run)
                db, _ = build_store(tmp_path, [("alice", "people", 1)], rows=10)
                assert main(["serve", "--db", db, "--workers", "0", "--port", "0"]) == 0
                apps[0].state.service.close()
                assert capsys.readouterr().out == ""
            """
        )
    )
    src = str(Path(infodp.__file__).resolve().parents[1])
    harness = str(Path(__file__).resolve().parents[1])  # tests/, where _server_harness is
    paths = [src, harness, os.environ.get("PYTHONPATH", "")]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in paths if p)}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "test_inner.py"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    report = done.stdout + done.stderr
    assert done.returncode == 0, report
    assert "2 passed" in done.stdout
    assert "closed file" not in report and "lost sys.stderr" not in report
