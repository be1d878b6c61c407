"""``/v1/docs`` works offline: every src/href on the page is local and every asset loads."""

from __future__ import annotations

import asyncio
import re

import httpx

from infodp.server.app import create_app


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
