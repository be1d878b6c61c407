"""A process that runs one ``infodp`` command sets the garbage collector for it; a command run
inside a longer-lived process leaves the collector alone."""

from __future__ import annotations

import gc
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import pytest

from infodp.cli import _collector
from infodp.cli._collector import one_command, start_up


@pytest.fixture
def collector_state() -> Iterator[None]:
    """Whatever a test freezes or pauses is undone after it."""
    enabled = gc.isenabled()
    yield
    gc.unfreeze()
    if enabled:
        gc.enable()


class _Cycle:
    finalized: ClassVar[list[str]] = []

    def __init__(self, name: str) -> None:
        self.name = name
        self.me = self  # a reference cycle: only the collector frees it

    def __del__(self) -> None:
        _Cycle.finalized.append(self.name)


@pytest.mark.usefixtures("collector_state")
def test_start_up_pauses_the_collector_then_freezes_what_it_made() -> None:
    gc.collect()
    gc.unfreeze()
    with one_command():
        with start_up():
            assert not gc.isenabled()
            made = [object() for _ in range(10)]
            frozen_before = gc.get_freeze_count()
        assert gc.isenabled()
        assert gc.get_freeze_count() > frozen_before
        assert made
    assert gc.get_freeze_count() > 0
    assert _collector._depth == 0


@pytest.mark.usefixtures("collector_state")
def test_the_command_garbage_is_finalized_before_the_freeze() -> None:
    _Cycle.finalized.clear()
    with one_command():
        _Cycle("left by the command")
    assert _Cycle.finalized == ["left by the command"]


@pytest.mark.usefixtures("collector_state")
def test_outside_a_one_command_process_nothing_changes() -> None:
    frozen = gc.get_freeze_count()
    with start_up():
        assert gc.isenabled()
    assert gc.get_freeze_count() == frozen


@pytest.mark.usefixtures("collector_state")
def test_a_failing_command_still_leaves_the_collector_running() -> None:
    with pytest.raises(RuntimeError), one_command(), start_up():
        raise RuntimeError("refused")
    assert gc.isenabled() and _collector._depth == 0


def _gc_after(code: str, cwd: Path) -> dict[str, object]:
    probe = (
        "import atexit, gc, json, sys\n"
        "atexit.register(lambda: print(json.dumps({'frozen': gc.get_freeze_count() > 0, "
        "'enabled': gc.isenabled()}), file=sys.stderr))\n" + code
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, cwd=cwd, check=False
    )
    state: dict[str, object] = json.loads(out.stderr.strip().splitlines()[-1])
    return state


@pytest.mark.slow
def test_the_entry_point_freezes_only_for_the_process_command_line(tmp_path: Path) -> None:
    own = _gc_after(
        "import sys\nfrom infodp.cli import main\nsys.argv = ['infodp', 'ledger', '--db', "
        "'missing.duckdb']\nsys.exit(main())",
        tmp_path,
    )
    assert own == {"frozen": True, "enabled": True}
    called = _gc_after(
        "import sys\nfrom infodp.cli import main\nsys.exit(main(['ledger', '--db', "
        "'missing.duckdb']))",
        tmp_path,
    )
    assert called == {"frozen": False, "enabled": True}
