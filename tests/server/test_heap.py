"""freeze_heap: start-up objects leave the collector's full passes; garbage does not stay."""

from __future__ import annotations

import gc
import sys
import weakref
from pathlib import Path

import pytest

from infodp.server._heap import freeze_heap


class _Node:
    def __init__(self) -> None:
        self.other: _Node | None = None


def test_garbage_cycles_are_collected_before_the_heap_is_frozen() -> None:
    a, b = _Node(), _Node()
    a.other, b.other = b, a  # a cycle only the cyclic collector can free
    gone = weakref.ref(a)
    del a, b
    freeze_heap()
    try:
        assert gone() is None  # collected, not frozen for ever
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()


@pytest.mark.slow
def test_the_named_modules_are_imported_before_freezing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "heap_probe_module.py").write_text("VALUE = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert "heap_probe_module" not in sys.modules
    freeze_heap("heap_probe_module")
    try:
        assert sys.modules["heap_probe_module"].VALUE == 1
    finally:
        gc.unfreeze()
        del sys.modules["heap_probe_module"]


@pytest.mark.slow
def test_a_full_pass_after_freezing_scans_only_what_came_later() -> None:
    freeze_heap()
    try:
        alive = [object() for _ in range(10)]  # untracked: nothing new to scan
        assert len(gc.get_objects(generation=2)) < gc.get_freeze_count()
        del alive
    finally:
        gc.unfreeze()
