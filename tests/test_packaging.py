"""What a user installs and what the repository holds.

The wheel is built from a copy of the tracked sources (``pip wheel . --no-deps``) and must hold
exactly the package: every tracked module under ``src/infodp`` and ``py.typed``, nothing else
(no test harness, no stray files), with the metadata a user reads on the package index. The
repository itself holds no binaries.
"""

from __future__ import annotations

import email
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _tracked() -> list[str]:
    out = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
    ).stdout.decode()
    return [p for p in out.split("\0") if p and (ROOT / p).exists()]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> zipfile.ZipFile:
    src = tmp_path_factory.mktemp("checkout")
    for rel in _tracked():  # exactly what a fresh clone has
        dest = src / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / rel, dest)
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", ".", "--no-deps", "-q", "-w", str(out)],
        cwd=src,
        check=True,
        capture_output=True,
    )
    (path,) = out.glob("infodp-*.whl")
    return zipfile.ZipFile(path)


@pytest.mark.slow  # builds a wheel
def test_wheel_holds_exactly_the_package(wheel: zipfile.ZipFile) -> None:
    names = wheel.namelist()
    info = {n for n in names if n.split("/")[0].endswith(".dist-info")}
    package = set(names) - info
    expected = {p.removeprefix("src/") for p in _tracked() if p.startswith("src/infodp/")}
    assert package == expected
    assert "infodp/py.typed" in package
    assert not [n for n in names if "harness" in n or "__pycache__" in n or n.endswith(".pyc")]
    dist_info = {n.split("/", 1)[1] for n in info}
    assert dist_info == {
        "METADATA",
        "WHEEL",
        "RECORD",
        "entry_points.txt",
        "top_level.txt",
        "licenses/LICENSE",
    }


@pytest.mark.slow  # builds a wheel
def test_wheel_metadata_is_complete(wheel: zipfile.ZipFile) -> None:
    meta_name = next(n for n in wheel.namelist() if n.endswith(".dist-info/METADATA"))
    meta = email.message_from_bytes(wheel.read(meta_name))
    assert meta["License-Expression"] == "Apache-2.0"
    classifiers = meta.get_all("Classifier") or []
    assert "Typing :: Typed" in classifiers
    assert any(c.startswith("Programming Language :: Python :: 3.11") for c in classifiers)
    assert any(c.startswith("Topic :: ") for c in classifiers)
    urls = dict(u.split(", ", 1) for u in meta.get_all("Project-URL") or [])
    assert {"Homepage", "Documentation", "Source"} <= set(urls)
    assert meta["Author"] or meta["Author-email"]
    assert "differential privacy" in (meta["Keywords"] or "")
    # The licence shipped is the standard Apache 2.0 text, also at the repository root.
    text = wheel.read(next(n for n in wheel.namelist() if n.endswith("licenses/LICENSE")))
    assert text == (ROOT / "LICENSE").read_bytes()
    assert b"Apache License\n                           Version 2.0, January 2004" in text
    assert b"END OF TERMS AND CONDITIONS" in text


def test_repository_holds_no_binaries() -> None:
    binaries = []
    for rel in _tracked():
        data = (ROOT / rel).read_bytes()
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            binaries.append(rel)
            continue
        if b"\0" in data:
            binaries.append(rel)
    assert binaries == []
    ignored = (ROOT / ".gitignore").read_text().split()
    assert "*.whl" in ignored
