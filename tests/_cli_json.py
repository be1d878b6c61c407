"""The success of a ``--json`` CLI command: exactly one JSON object on stdout."""

from __future__ import annotations

import json
from typing import Any

from infodp.cli import main


def cli_json(capsys: Any, *args: str, status: int = 0) -> dict[str, Any]:
    """Run ``infodp <args>``: it exits with ``status`` and prints exactly one JSON object,
    which is returned."""
    assert main(list(args)) == status
    out = capsys.readouterr().out
    assert out.count("\n") == 1  # exactly one JSON object
    payload = json.loads(out)
    assert isinstance(payload, dict)
    return payload
