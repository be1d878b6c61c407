"""docs/deployment.md's nginx configuration, run on loopback in front of a fleet.

The configuration is read from the document itself (its ``nginx`` block), with the
upstream and listening ports replaced by free loopback ones: two servers on one PostgreSQL
ledger and a third upstream that is down. The oracle: every query through nginx is
answered (the down upstream and, later, a killed server are skipped), and the ledger's
spend is exactly one charge per answer received (nginx never sent a query twice).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from _server_harness import ServerProcess, build_store, free_port, get_json
from infodp.curator.ledger import Ledger

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

DOC = Path(__file__).resolve().parents[2] / "docs" / "deployment.md"
SQL = "SELECT COUNT(*) FROM people"


def _nginx() -> str | None:
    return shutil.which("nginx") or (
        "/usr/sbin/nginx" if os.path.exists("/usr/sbin/nginx") else None
    )


def _config(upstreams: list[int], listen: int) -> str:
    (block,) = re.findall(r"```nginx\n(.*?)```", DOC.read_text(encoding="utf-8"), re.DOTALL)
    documented = re.findall(r"server 127\.0\.0\.1:(\d+)", block)
    assert len(documented) == len(upstreams) == 3
    for old, new in zip(documented, upstreams, strict=True):
        block = block.replace(f"127.0.0.1:{old} ", f"127.0.0.1:{new} ")
    return block.replace("listen 127.0.0.1:8080;", f"listen 127.0.0.1:{listen};")


def test_the_documented_nginx_config_fronts_a_fleet(
    tmp_path: Path, pg_cluster: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    nginx = _nginx()
    if nginx is None:
        if os.environ.get("CI"):
            pytest.fail("nginx is missing: scripts/test.sh installs it")
        pytest.skip("nginx is not installed")
    import infodp.curator.store.database as store

    url = pg_cluster.new_schema()
    monkeypatch.setattr(store, "default_ledger", lambda db: url)
    db, keys = build_store(tmp_path, [("alice", "people", 10)], rows=50)
    servers = [ServerProcess(db, workers=0, log_path=tmp_path / f"s{i}.log") for i in range(2)]
    for s in servers:
        s.start()
    listen = free_port()
    (tmp_path / "nginx.conf").write_text(
        _config([servers[0].port, free_port(), servers[1].port], listen)
    )
    proc = subprocess.Popen(
        [
            nginx,
            "-p",
            str(tmp_path),
            "-c",
            str(tmp_path / "nginx.conf"),
            "-g",
            f"daemon off; pid {tmp_path}/nginx.pid; error_log {tmp_path}/error.log;",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                status, body, _ = get_json(listen, "GET", "/v1/health", timeout=5)
                break
            except OSError:
                assert proc.poll() is None and time.monotonic() < deadline
                time.sleep(0.1)
        assert status == 200 and body["status"] == "ok"
        received = 0
        for i in range(40):
            if i == 20:
                servers[0].kill()  # the balancer goes on with the other
            status, payload, _ = get_json(
                listen, "POST", "/v1/query", {"sql": SQL, "epsilon": "0.01"}, key=keys["alice"]
            )
            assert status == 200, payload
            received += 1
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        for s in servers:
            s.stop()
    led = Ledger(url, create=False)
    assert led.budget("alice", "people").spent_epsilon == received * Fraction(1, 100)
    assert led.verify() == []
    led.close()
