"""Export the service's OpenAPI document (kept in the repo as ``docs/openapi.json``).

``python -c "from infodp.server import write_openapi; write_openapi('docs/openapi.json')"``
rewrites the file; a test checks that the file matches the app, so the published document
never drifts from the code.

>>> doc = openapi_document()
>>> doc["info"]["title"], "/v1/query" in doc["paths"]
('infodp curator', True)
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from infodp.server.app import create_app

__all__ = ["openapi_document", "openapi_text", "write_openapi"]


def openapi_document() -> dict[str, Any]:
    """The OpenAPI document of :func:`infodp.server.create_app` (no store needed)."""
    return create_app().openapi()


def openapi_text() -> str:
    """The document as canonical JSON text (sorted keys, 2-space indent, final newline)."""
    return json.dumps(openapi_document(), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def write_openapi(path: str | Path) -> Path:
    """Write :func:`openapi_text` to ``path``; returns the path."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(openapi_text(), encoding="utf-8")
    return p
