"""The service's CLI: ``infodp serve`` refusals and ``infodp analyst key/keys/revoke``.

Bad input gives one line on stderr and exit status 2 (the CLI contract of docs/architecture.md).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from infodp.cli import main
from infodp.errors import ParameterError
from infodp.server.auth import KeyStore, key_store_path


@pytest.fixture
def store(
    copied_store: Callable[..., tuple[str, dict[str, str]]], tmp_path: Path
) -> tuple[str, dict[str, str]]:
    """This test's own copy of a store (alice on people, 10 rows) built once per process."""
    return copied_store(tmp_path / "store", [("alice", "people", 1)], rows=10)


def _one_line(err: str) -> bool:
    return err.count("\n") == 1 and err.startswith("infodp: error:")


def test_serve_refuses_a_missing_store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "--db", str(tmp_path / "none.duckdb")]) == 2
    err = capsys.readouterr().err
    assert _one_line(err) and "--db" in err


@pytest.mark.slow
@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--rate", "0"], "--rate"),
        (["--rate", "nan"], "--rate"),
        (["--burst", "0"], "--burst"),
        (["--max-body", "-5"], "--max-body"),
        (["--port", "70000"], "--port"),
        (["--workers", "-1"], "--workers"),
        (["--duckdb-threads", "-1"], "--duckdb-threads"),
        (["--admin-token-file", "/nonexistent/token"], "--admin-token-file"),
    ],
)
def test_serve_refuses_bad_limits(
    store: tuple[str, dict[str, str]],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    args: list[str],
    fragment: str,
) -> None:
    db, _ = store
    assert main(["serve", "--db", db, *args]) == 2
    err = capsys.readouterr().err
    assert _one_line(err) and fragment in err


@pytest.mark.parametrize(("given", "setting"), [([], 1), (["--duckdb-threads", "0"], None)])
def test_serve_gives_each_query_the_duckdb_threads_asked_for(
    store: tuple[str, dict[str, str]],
    monkeypatch: pytest.MonkeyPatch,
    given: list[str],
    setting: int | None,
) -> None:
    import infodp.server.app as app

    seen: list[object] = []

    def stop_before_serving(settings: object) -> None:
        seen.append(settings)
        raise ParameterError("stopped by the test before serving")

    monkeypatch.setattr(app, "create_app", stop_before_serving)
    db, _ = store
    assert main(["serve", "--db", db, "--port", "0", "--workers", "0", *given]) == 2
    (settings,) = seen
    assert isinstance(settings, app.ServerSettings)
    assert settings.duckdb_threads == setting  # None: DuckDB's default, every core


@pytest.mark.slow
def test_serve_refuses_a_short_admin_token(
    store: tuple[str, dict[str, str]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db, _ = store
    token = tmp_path / "t"
    token.write_text("short")
    assert main(["serve", "--db", db, "--admin-token-file", str(token)]) == 2
    assert "16 characters" in capsys.readouterr().err


@pytest.mark.slow
def test_key_issue_list_and_revoke(
    store: tuple[str, dict[str, str]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db, _ = store
    assert main(["analyst", "key", "--db", db, "--name", "alice", "--json"]) == 0
    issued = json.loads(capsys.readouterr().out)
    assert issued["api_key"].startswith("idp_" + issued["key_id"] + ".")
    assert KeyStore(key_store_path(db)).verify(issued["api_key"]) is not None
    assert main(["analyst", "keys", "--db", db, "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)["keys"]
    assert [k["key_id"] for k in listed] == [issued["key_id"]]
    assert issued["api_key"] not in json.dumps(listed)  # ids only, never secrets
    assert main(["analyst", "revoke", "--db", db, "--name", "alice"]) == 0
    assert "revoked 1 server key(s) of alice and their ledger key" in capsys.readouterr().out
    assert KeyStore(key_store_path(db)).verify(issued["api_key"]) is None
    assert main(["analyst", "keys", "--db", db, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["keys"][0]["revoked"] is not None
    # The human-readable key line.
    assert main(["analyst", "key", "--db", db, "--name", "alice"]) == 0
    assert "shown once" in capsys.readouterr().out


@pytest.mark.slow
def test_key_for_unknown_analyst_is_refused(
    store: tuple[str, dict[str, str]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db, _ = store
    assert main(["analyst", "key", "--db", db, "--name", "mallory"]) == 2
    err = capsys.readouterr().err
    assert _one_line(err) and "--name" in err
    assert KeyStore(key_store_path(db)).keys() == []


@pytest.mark.slow  # ~2.7 CPU-s (measured)
def test_serve_json_prints_one_object_then_serves(
    store: tuple[str, dict[str, str]], tmp_path: Path
) -> None:
    import subprocess
    import sys
    import time

    from _server_harness import free_port, get_json

    db, keys = store
    port = free_port()
    cmd = [sys.executable, "-m", "infodp.cli", "serve", "--db", db, "--port", str(port), "--json"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 90
        ready = False
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                ready = get_json(port, "GET", "/v1/health", timeout=2)[0] == 200
            except OSError:
                ready = False
            if ready:
                break
            time.sleep(0.1)
        assert ready
        # A few requests: with --json the access log must not reach stdout.
        for _ in range(3):
            assert get_json(port, "GET", "/v1/budget", key=keys["alice"])[0] == 200
    finally:
        proc.terminate()
        out, _ = proc.communicate(timeout=30)
    lines = out.decode().splitlines()
    assert len(lines) == 1
    payload = json.loads(lines[0])
    assert payload["url"] == f"http://127.0.0.1:{port}"
    assert payload["db"] == db and payload["pid"] == proc.pid and payload["keep_open"] is True
    assert payload["workers"] >= 1  # worker processes by default (one per core)


@pytest.mark.slow
def test_serve_on_a_port_in_use_exits_2_with_a_clear_message(
    store: tuple[str, dict[str, str]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Regression: uvicorn's start-up failure exited 3, the over-budget status."""
    import socket

    db, _ = store
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen(1)
        port = holder.getsockname()[1]
        code = main(["serve", "--db", db, "--host", "127.0.0.1", "--port", str(port)])
        err = capsys.readouterr().err
        assert code == 2
        assert _one_line(err) and "--port" in err and "free TCP port" in err and str(port) in err
        code = main(["serve", "--db", db, "--port", str(port), "--json"])
        out, _ = capsys.readouterr()
        assert code == 2 and json.loads(out)["error"]["argument"] == "--port"


@pytest.mark.slow
@pytest.mark.parametrize(
    "token",
    [
        "a" * 16,  # the reported one
        "a" * 64,
        "admin-" + "x" * 30,
        "abcd" * 8,
        "0123456789abcdef",  # 16 distinct characters once each: 64 bits
    ],
)
def test_serve_refuses_a_low_entropy_admin_token(
    store: tuple[str, dict[str, str]],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    token: str,
) -> None:
    from infodp.server.app import ADMIN_TOKEN_ENV

    db, _ = store
    path = tmp_path / "t"
    path.write_text(token + "\n")
    path.chmod(0o600)
    assert main(["serve", "--db", db, "--admin-token-file", str(path)]) == 2
    err = capsys.readouterr().err
    assert _one_line(err) and "bits of entropy" in err and "token_urlsafe" in err
    assert token not in err  # the refusal never shows the token
    monkeypatch.setenv(ADMIN_TOKEN_ENV, token)
    assert main(["serve", "--db", db]) == 2
    assert "bits of entropy" in capsys.readouterr().err


def test_admin_token_entropy_estimate_and_random_tokens_pass(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import math
    import secrets

    from infodp.server.app import ADMIN_TOKEN_BITS, admin_token_hash_from_env, token_entropy_bits

    # Shannon (1948): n equally frequent symbols carry log2(n) bits each.
    assert token_entropy_bits("abcdefgh" * 4) == pytest.approx(32 * math.log2(8))
    assert token_entropy_bits("aab") == pytest.approx(-(2 * math.log2(2 / 3) + math.log2(1 / 3)))
    # Tokens made as the message advises pass (and the 16-byte ones too).
    for _ in range(200):
        assert token_entropy_bits(secrets.token_urlsafe(32)) >= ADMIN_TOKEN_BITS
        assert token_entropy_bits(secrets.token_hex(16)) >= ADMIN_TOKEN_BITS
    monkeypatch.setenv("INFODP_ADMIN_TOKEN", secrets.token_urlsafe(32))
    assert len(admin_token_hash_from_env() or "") == 64
