"""The failure of a ``--json`` CLI command: one JSON object on stdout, one line on stderr."""

from __future__ import annotations

import json
from typing import Any


def json_error(out: str, err: str, status: int) -> dict[str, Any]:
    """Check that ``out`` is exactly one ``{"error": …}`` object agreeing with the stderr line
    ``err`` and the exit ``status``; return the error object."""
    assert out.count("\n") == 1 and err.count("\n") == 1 and "Traceback" not in err
    payload = json.loads(out)
    assert set(payload) == {"error"}
    error: dict[str, Any] = payload["error"]
    assert error["exit_status"] == status and isinstance(error["kind"], str)
    assert err == f"infodp: error: {error['message']}\n"
    return error
