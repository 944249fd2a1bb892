"""``herald adapters new``: a starter package whose conformance test passes as written.

Run as people run it – ``herald`` as a process in a directory of their own – and the
package it writes tested as its author would: pytest, ruff and mypy in that directory,
with the package and herald on ``PYTHONPATH`` (a ``pip install -e`` would take longer than
the rest of the test).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from core.domain.errors import ConfigError
from core.plugins.template import check_adapter_name, write_starter
from tests.integration.conftest import ROOT

pytestmark = pytest.mark.integration


def run(cwd: Path, *args: str, pythonpath: tuple[Path, ...] = ()) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HERALD_", "PYTHONPATH"))}
    env.update(PYTHONPATH=os.pathsep.join(map(str, (*pythonpath, ROOT))), COLUMNS="200", HOME=str(cwd))
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=180)


def herald(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run(cwd, "-m", "core.cli", *args)


@pytest.mark.parametrize(
    ("name", "package", "class_name"),
    [("pebble", "herald_pebble", "Pebble"), ("example-social", "herald_example_social", "ExampleSocial")],
)
def test_adapters_new_writes_a_package_whose_conformance_test_passes_as_written(
    tmp_path: Path, name: str, package: str, class_name: str
) -> None:
    made = herald(tmp_path, "adapters", "new", name)
    assert made.returncode == 0, made.stderr
    where = tmp_path / f"herald-{name}"
    written = sorted(str(p.relative_to(where)) for p in where.rglob("*") if p.is_file())
    assert written == sorted(["README.md", "pyproject.toml", f"{package}/__init__.py", "tests/test_conformance.py"])
    assert f"wrote herald-{name}" in made.stdout and f"cd herald-{name}" in made.stdout

    project = tomllib.loads((where / "pyproject.toml").read_text())
    assert project["project"]["name"] == f"herald-{name}"
    assert project["project"]["entry-points"]["herald"] == {name: package}

    tested = run(where, "-m", "pytest", "-p", "no:cacheprovider", "-W", "error", "-rs", pythonpath=(where,))
    assert tested.returncode == 0, tested.stdout + tested.stderr
    passed = int(re.search(r"(\d+) passed", tested.stdout).group(1))  # type: ignore[union-attr]
    assert passed >= 14, tested.stdout
    assert "failed" not in tested.stdout and "error" not in tested.stdout.lower()
    # Skipped only what concerns attachments: the starter takes none until its author adds upload().
    skips = re.findall(r"SKIPPED \[\d+\] \S+:\d+: (.*)", tested.stdout)
    assert skips and all(re.search(r"attachment|media", why) for why in skips), skips

    registered = run(
        where,
        "-c",
        f"import {package} as p; found = []; p.herald_register_adapters(found.append); "
        "print(found[0].__name__, found[0].name)",
        pythonpath=(where,),
    )
    assert registered.stdout.split() == [class_name, name], registered.stderr


def test_the_starter_package_is_clean_under_its_own_ruff_and_mypy_settings(tmp_path: Path) -> None:
    assert herald(tmp_path, "adapters", "new", "pebble").returncode == 0
    where = tmp_path / "herald-pebble"
    for check in (("check", "."), ("format", "--check", ".")):
        linted = run(where, "-m", "ruff", *check)
        assert linted.returncode == 0, linted.stdout + linted.stderr
    typed = run(where, "-m", "mypy", "--cache-dir", str(tmp_path / "mypy"), ".", pythonpath=(where,))
    assert typed.returncode == 0, typed.stdout + typed.stderr


def test_adapters_new_writes_where_dir_says(tmp_path: Path) -> None:
    made = herald(tmp_path, "adapters", "new", "pebble", "--dir", "src/pebble-adapter")
    assert made.returncode == 0, made.stderr
    assert (tmp_path / "src" / "pebble-adapter" / "herald_pebble" / "__init__.py").is_file()
    assert not (tmp_path / "herald-pebble").exists()


def test_adapters_new_refuses_a_directory_that_exists_and_writes_nothing(tmp_path: Path) -> None:
    (tmp_path / "herald-pebble").mkdir()
    (tmp_path / "herald-pebble" / "notes.txt").write_text("mine")
    refused = herald(tmp_path, "adapters", "new", "pebble")
    assert refused.returncode == 2
    assert "herald-pebble exists already" in refused.stderr and "--dir" in refused.stderr
    assert [p.name for p in (tmp_path / "herald-pebble").iterdir()] == ["notes.txt"]
    (tmp_path / "a-file").write_text("")
    assert "a-file exists already (file)" in herald(tmp_path, "adapters", "new", "pebble", "--dir", "a-file").stderr


def test_adapters_new_refuses_a_name_that_cannot_be_an_adapters_in_one_line(tmp_path: Path) -> None:
    refused = herald(tmp_path, "adapters", "new", "Pebble_Social")
    assert refused.returncode == 2, refused.stdout
    assert refused.stderr.count("\n") == 1 and "Traceback" not in refused.stderr
    assert "'Pebble_Social' is not an adapter name" in refused.stderr and "(e.g. pebble-social)" in refused.stderr
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("name", "suggested"),
    [
        ("Pebble", "pebble"),
        ("pebble_social", "pebble-social"),
        ("2pebble", "pebble"),
        ("pebble--social", "pebble-social"),
        ("-pebble", "pebble"),
        ("pebble-", "pebble"),
        ("pebble.social", "pebble-social"),
        ("", "my-platform"),
        ("x" * 41, "x" * 40),
    ],
)
def test_a_name_that_cannot_be_an_adapters_is_refused_with_one_that_can(
    tmp_path: Path, name: str, suggested: str
) -> None:
    with pytest.raises(ConfigError, match="is not an adapter name") as refused:
        write_starter(name, tmp_path / "out", taken=())
    assert f"(e.g. {suggested})" in str(refused.value)
    check_adapter_name(suggested)  # the suggestion keeps the rule
    assert list(tmp_path.iterdir()) == []


def test_adapters_new_refuses_the_name_of_an_adapter_herald_has_loaded(tmp_path: Path) -> None:
    refused = herald(tmp_path, "adapters", "new", "telegram")
    assert refused.returncode == 2
    assert "an adapter named 'telegram' is already loaded" in refused.stderr
    assert list(tmp_path.iterdir()) == []


def test_plain_adapters_still_lists_and_json_is_only_for_the_list(tmp_path: Path) -> None:
    listed = herald(tmp_path, "adapters")
    assert listed.returncode == 0, listed.stderr
    assert "sandbox-native" in listed.stdout and "herald_register_adapters" in listed.stdout
    cells = [[c.strip() for c in line.split("│")[1:-1]] for line in listed.stdout.splitlines() if "│" in line]
    windows = {row[0]: row[3] for row in cells if len(row) == 6}
    # A key window per native_key adapter; Bluesky's record key dedupes for good; none has none.
    assert (windows["bluesky"], windows["mastodon"], windows["telegram"]) == ("forever", "3600s", "-")
    rows = json.loads(herald(tmp_path, "adapters", "--json").stdout)
    assert {row["name"] for row in rows} >= {"sandbox-native", "telegram", "webhook"}
    assert set(rows[0]) == {"name", "version", "strategy", "key_ttl", "plugin", "enabled"}
    helped = herald(tmp_path, "adapters", "--help")
    assert helped.returncode == 0 and "new" in helped.stdout and "--json" in helped.stdout
    mixed = herald(tmp_path, "adapters", "--json", "new", "pebble")
    assert mixed.returncode == 2 and "--json is for the list" in mixed.stderr
    assert list(tmp_path.iterdir()) == []
