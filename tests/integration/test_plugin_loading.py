"""A broken plugin never takes herald down (§9): installed packages that raise at import
or while registering are named in one line and left out; `[plugins.NAME] enabled = false`
keeps one from being imported at all. Real installed distributions (entry points read
from their dist-info), `herald adapters` as a process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration.conftest import ROOT

pytestmark = pytest.mark.integration

PLUGINS = {
    # name: the module's source
    "broken_at_import": "open({marker!r}, 'w').write('imported')\nraise RuntimeError('boom at import')\n",
    "broken_at_register": (
        "from core.plugins import hookimpl\n\n"
        "@hookimpl\ndef herald_register_adapters(register):\n    raise KeyError('settings')\n"
    ),
    "alarms_only": "from core.plugins import hookimpl\n\n@hookimpl\ndef herald_alarm(alarm):\n    pass\n",
}


def install(site: Path, name: str, source: str) -> None:
    """``name`` as an installed distribution: its module and a dist-info naming its entry point."""
    (site / f"{name}.py").write_text(source)
    info = site / f"{name}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[herald]\n{name} = {name}\n")


@pytest.fixture
def site(tmp_path: Path) -> Path:
    site = tmp_path / "site"
    site.mkdir()
    for name, source in PLUGINS.items():
        install(site, name, source.format(marker=str(tmp_path / "imported")))
    return site


def adapters(site: Path, toml: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": f"{site}{os.pathsep}{ROOT}", "HERALD_PLUGINS_TOML": str(toml), "COLUMNS": "300"}
    return subprocess.run(
        [sys.executable, "-m", "core.cli", "adapters"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )


def test_plugins_that_raise_are_named_and_left_out_and_the_rest_works(site: Path, tmp_path: Path) -> None:
    toml = tmp_path / "plugins.toml"
    toml.write_text((ROOT / "plugins.toml").read_text())
    done = adapters(site, toml)
    assert done.returncode == 0, done.stderr
    said = done.stdout + done.stderr
    assert "plugin broken_at_import left out (import): RuntimeError: boom at import" in said
    assert "plugin broken_at_register left out (register): KeyError: 'settings'" in said
    assert "sandbox-native" in done.stdout  # the others are all there
    assert "alarms_only" in done.stdout and "herald_alarm" in done.stdout  # a plugin of other hooks, listed
    assert "Traceback" not in said


def test_a_plugin_turned_off_in_plugins_toml_is_not_even_imported(site: Path, tmp_path: Path) -> None:
    toml = tmp_path / "plugins.toml"
    toml.write_text((ROOT / "plugins.toml").read_text() + "\n[plugins.broken_at_import]\nenabled = false\n")
    done = adapters(site, toml)
    assert done.returncode == 0, done.stderr
    assert "boom at import" not in done.stdout + done.stderr
    assert "plugin broken_at_import left out (off)" in done.stdout
    assert not (tmp_path / "imported").exists()
