"""``/v1/docs`` works offline: every src/href on the page is local and every asset loads."""

from __future__ import annotations

import asyncio
import json
import re
import urllib.request
from collections.abc import Iterator

import httpx
import pytest

from _chromium import open_page
from _server_harness import ServerProcess, build_store, get_json
from infodp.server.app import create_app
from infodp.server.openapi import openapi_document


async def _fetch_all() -> tuple[httpx.Response, dict[str, httpx.Response]]:
    transport = httpx.ASGITransport(app=create_app())
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
        page = await client.get("/v1/docs")
        links = re.findall(r"""(?:src|href)\s*=\s*["']([^"']+)["']""", page.text)
        links += re.findall(r"""\burl\s*:\s*["']([^"']+)["']""", page.text)
        assets = {link: await client.get(link) for link in links if link.startswith("/")}
        return page, assets


def test_docs_page_names_no_external_url_and_its_assets_load() -> None:
    page, assets = asyncio.run(_fetch_all())
    assert page.status_code == 200 and "swagger-ui" in page.text
    links = re.findall(r"""(?:src|href)\s*=\s*["']([^"']+)["']""", page.text)
    assert len(links) >= 3  # favicon, CSS, JS
    for link in links:
        assert link.startswith("/") and not link.startswith("//"), link
    assert "http://" not in page.text and "https://" not in page.text
    for link, response in assets.items():
        assert response.status_code == 200, link
    js = assets["/v1/docs/assets/swagger-ui-bundle.js"]
    assert len(js.content) > 100_000 and "javascript" in js.headers["content-type"]
    assert assets["/v1/openapi.json"].json()["info"]["title"] == "infodp curator"


def _descriptions(node: object) -> list[str]:
    if isinstance(node, dict):
        own = [node["description"]] if isinstance(node.get("description"), str) else []
        return own + [d for v in node.values() for d in _descriptions(v)]
    if isinstance(node, list):
        return [d for v in node for d in _descriptions(v)]
    return []


def test_no_description_has_an_html_tag_outside_code() -> None:
    # Descriptions are CommonMark: a bare <key> is an HTML tag the page drops. Outside code
    # spans no '<' may start a tag (CommonMark 0.31, Sec. 6.6: '<' then a letter).
    doc = openapi_document()
    texts = _descriptions(doc)
    assert len(texts) > 10
    for text in texts:
        assert not re.search(r"<[A-Za-z/!?]", re.sub(r"`[^`]*`", "", text)), text
    info = doc["info"]["description"]
    assert "`Authorization: Bearer <key>`" in info
    # Both kinds of key the admin CLI prints, as they look (checked against real keys in
    # tests/server/test_auth.py::test_keys_look_as_documented).
    assert "`idp_<16 hex digits>.<43 characters>` from `infodp analyst key`" in info
    assert "43-character key `infodp analyst add` prints" in info


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """One service for the module's tests, which only read its pages."""
    d = tmp_path_factory.mktemp("docs-ui")
    db, _ = build_store(d, [("alice", "people", 1)], rows=8)
    with ServerProcess(db, log_path=d / "server.log") as server:
        yield server


@pytest.mark.slow  # real server processes
def test_root_and_unknown_paths_name_the_docs(served: ServerProcess) -> None:
    server = served
    status, root, _ = get_json(server.port, "GET", "/")
    assert status == 200
    assert root["docs"] == "/v1/docs" and root["openapi"] == "/v1/openapi.json"
    assert root["message"] == (
        "the HTTP API is under /v1: documentation at /v1/docs, OpenAPI document at /v1/openapi.json"
    )
    # The paths it names answer without a key.
    for path in (root["docs"], root["openapi"], root["health"]):
        with urllib.request.urlopen(server.url + path) as r:
            assert r.status == 200, path
    for path in ("/docs", "/v1", "/v1/nothing", "/index.html"):
        status, payload, _ = get_json(server.port, "GET", path)
        assert status == 404 and payload["error"]["code"] == "not_found", path
        assert payload["error"]["message"] == (
            "no such route; the API is described at /v1/docs (OpenAPI document: /v1/openapi.json)"
        )


@pytest.mark.slow  # a real server and a browser
def test_docs_page_renders_every_route_and_schema_in_chromium(served: ServerProcess) -> None:
    # What a person sees: Swagger UI must parse the server's OpenAPI document (3.1) and list
    # every operation with its schemas. A viewer that cannot read the document shows
    # "Unable to render this definition" (Swagger UI 4 did for 3.1), which fails here.
    server = served
    document = json.loads(urllib.request.urlopen(f"{server.url}/v1/openapi.json").read())
    n = sum(len(ops) for ops in document["paths"].values())
    # Wait until every operation is rendered expanded (its Responses heading shown), not
    # only the first block: Swagger UI renders the expanded blocks one after another.
    page = open_page(
        f"{server.url}/v1/docs",
        wait_for=(
            f"(document.querySelectorAll('.opblock').length >= {n} && "
            f"document.body.innerText.split('Responses').length - 1 >= {n}) || "
            "/Unable to render|Failed to load/.test(document.body.innerText)"
        ),
    )
    assert "Unable to render this definition" not in page.text
    assert "Failed to load API definition" not in page.text
    assert page.errors == []
    assert all(u.startswith((server.url, "data:")) for u in page.requested_urls), (
        page.requested_urls
    )
    text = page.text.replace("\u200b", "")  # Swagger UI breaks long paths with these
    # The description's <key> is shown, not swallowed as an HTML tag.
    assert "Authorization: Bearer <key>" in text
    assert "idp_<16 hex digits>.<43 characters>" in text
    operations = [(m.upper(), p) for p, ops in document["paths"].items() for m in ops]
    assert len(operations) >= 10
    for method, path in operations:
        assert re.search(rf"\b{method}\s*{re.escape(path)}\s", text), (method, path)
    # Every schema is listed (the Schemas section), and each operation's own schemas are
    # shown expanded (docExpansion=full): a request body's model name appears in its block.
    for name in document["components"]["schemas"]:
        assert name in text, name
    assert text.count("Responses") >= len(operations)
