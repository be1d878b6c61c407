"""Kill a child Python process with SIGKILL once it has reached a point it marks on disk.

Crash tests run a victim script (``python -c SCRIPT DB MARKER``) that writes ``MARKER`` at the
moment to interrupt and then waits; the test kills it there and inspects what it left.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path


def query_stopped_at(stage: str) -> str:
    """A victim script: ``Curator(DB).query`` of ``SELECT COUNT(*) FROM t`` at ε 1/4 by
    analyst ``a``, which writes ``MARKER`` (atomically: the parent kills as soon as it exists)
    with the ledger entry's id when the query path reaches ``stage`` (the curator's test hook:
    ``"reserved"`` — committed, not yet fsync'd, the data not yet read; ``"aggregated"`` — the
    data read, nothing released) and then waits."""
    return textwrap.dedent(
        f"""
        import sys, time, pathlib
        from infodp.curator.engine import Curator
        marker = pathlib.Path(sys.argv[2])
        def hook(stage, entry):
            if stage == {stage!r}:
                tmp = marker.with_suffix(".tmp")
                tmp.write_text(str(entry))
                tmp.replace(marker)
                time.sleep(600)
        Curator(sys.argv[1], _hook=hook).query("a", "SELECT COUNT(*) FROM t", epsilon="0.25")
        print("RESULT LEFT THE PROCESS")
        """
    )


def kill_when_marked(script: str, db: Path, marker: Path, timeout: float = 120.0) -> str:
    """Run ``script`` with ``db`` and ``marker`` as arguments, SIGKILL it once ``marker``
    exists, and return what it printed (asserting it really died of the signal)."""
    proc = subprocess.Popen(
        [sys.executable, "-c", script, str(db), str(marker)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + timeout
    while not marker.exists():
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        assert time.monotonic() < deadline
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGKILL
    return out
