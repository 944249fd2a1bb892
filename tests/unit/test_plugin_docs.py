"""Every code block of the plugin guide runs (DESIGN §1: the docs' examples are executed).

docs/plugins.md is a page an adapter author copies from, so each block is run as they
would run it:

* **python**: the page's python blocks, in order, make one module – each block at its own
  line of the page, so a traceback names the page's line – which pytest (``pytester``)
  imports and then runs every test it defines: the tutorial's respx checks, and its
  ``AdapterContract`` subclass, the conformance kit. Nothing may fail, every test function
  must pass and every contract class must run.
* **toml**: parsed; each names its file on its first line (``# plugins.toml``,
  ``# pyproject.toml``). A plugins.toml block is read by ``core.plugins.plugins_toml`` and
  names only adapters herald or the page has; it is the plugins.toml of the page's later sh
  blocks. A pyproject.toml block names each adapter's package as ``herald adapters new``
  makes it.
* **sh**: every block passes ``bash -n``; a block that runs ``herald`` is run with bash, in
  order, in one temporary directory with its own ``HERALD_HOME`` and SQLite database. A
  package a block wrote there (``herald adapters new``) is installed before the next block
  the way ``pip install -e`` would, without pip: its directory on ``PYTHONPATH`` and a
  ``.dist-info`` naming its entry points.

Any other block is a defect of the page: the test cannot run it.
"""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
import tomllib
from dataclasses import dataclass, fields
from pathlib import Path

import pytest

import core.plugins
from core.domain.errors import PublishError
from core.domain.states import Reason
from core.plugins import (
    Adapter,
    Attachment,
    Limits,
    MediaFile,
    PublishContext,
    Published,
    Setting,
    UploadContext,
    Uploaded,
    VerifyContext,
)
from core.plugins import manager as plugin_manager
from core.plugins.conformance import AdapterContract
from core.plugins.plugins_toml import read as read_plugins_toml
from core.plugins.template import package_name

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "plugins.md"
LANGUAGES = ("python", "toml", "sh")


@dataclass(frozen=True)
class Block:
    """One fenced code block of a page."""

    lang: str
    code: str
    #: The page's line (1-based) of the block's first line of code.
    line: int

    def where(self) -> str:
        return f"{PAGE.relative_to(ROOT)}:{self.line}"


def blocks(page: Path = PAGE) -> list[Block]:
    """The page's fenced blocks, in order."""
    found: list[Block] = []
    lang: str | None = None
    start, lines = 0, list[str]()
    for number, text in enumerate(page.read_text().splitlines(), 1):
        if lang is None:
            opened = re.fullmatch(r"```(\S*)\s*", text)
            if opened:
                lang, start, lines = opened.group(1), number + 1, []
        elif text.strip() == "```":
            found.append(Block(lang, "\n".join(lines) + "\n", start))
            lang = None
        else:
            lines.append(text)
    assert lang is None, f"{page}: a code block opened at line {start - 1} is never closed"
    return found


def page_module(page: Path = PAGE) -> str:
    """The page's python blocks as one module whose line N is the page's line N."""
    lines = [""] * len(page.read_text().splitlines())
    for block in blocks(page):
        if block.lang == "python":
            for offset, text in enumerate(block.code.splitlines()):
                lines[block.line - 1 + offset] = text
    return "\n".join(lines) + "\n"


def page_adapter_names(source: str) -> set[str]:
    """The ``name`` every adapter class of the page's module declares."""
    names = set()
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.ClassDef):
            continue
        for statement in node.body:
            if isinstance(statement, ast.AnnAssign):
                targets: list[ast.expr] = [statement.target]
                value = statement.value
            elif isinstance(statement, ast.Assign):
                targets, value = statement.targets, statement.value
            else:
                continue
            named = any(isinstance(t, ast.Name) and t.id == "name" for t in targets)
            if named and isinstance(value, ast.Constant) and isinstance(value.value, str):
                names.add(value.value)
    return names


def names_file(block: Block) -> str:
    """The file a toml block is a piece of, from its first line (``# plugins.toml``)."""
    first = block.code.splitlines()[0] if block.code.strip() else ""
    named = re.fullmatch(r"#\s*(plugins\.toml|pyproject\.toml)\b.*", first)
    assert named, f"{block.where()}: a toml block starts with a comment naming its file (# plugins.toml)"
    return named.group(1)


def runs_herald(block: Block) -> bool:
    return re.search(r"^\s*herald\s", block.code, flags=re.M) is not None


def test_every_block_is_one_the_test_can_run() -> None:
    found = blocks()
    assert found, "docs/plugins.md has no code blocks"
    for block in found:
        assert block.lang in LANGUAGES, (
            f"{block.where()}: a ```{block.lang or '(no language)'} block cannot be run; write it as one of "
            f"{', '.join(LANGUAGES)}, or as prose"
        )


def test_the_python_blocks_run_in_order_as_one_module_and_every_test_they_define_passes(
    pytester: pytest.Pytester,
) -> None:
    source = page_module()
    tree = ast.parse(source)
    functions = {n.name for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith("test_")}
    classes = {n.name for n in tree.body if isinstance(n, ast.ClassDef) and n.name.startswith("Test")}
    assert functions and classes, "the tutorial defines its tests and its conformance test class"
    # Written as is: makepyfile would strip the leading blank lines that keep the page's line numbers.
    (pytester.path / "test_plugins_md.py").write_text(source)
    # Warnings are errors, but for pytest's note that herald's packages, imported by the
    # suite before this run, are not rewritten again.
    recorder = pytester.inline_run(
        "-p", "no:cacheprovider", "-W", "error", "-W", "ignore::pytest.PytestAssertRewriteWarning"
    )
    broken = recorder.getfailedcollections()
    assert not broken, f"the page's python blocks do not run: {broken[0].longreprtext}"
    passed, _skipped, failed = recorder.listoutcomes()
    assert not failed, "\n\n".join(f"{report.nodeid}\n{report.longreprtext}" for report in failed)
    ran = {report.nodeid.split("::")[1].split("[")[0] for report in passed}
    assert functions <= ran, f"tests of the page that did not pass: {sorted(functions - ran)}"
    assert classes <= ran, f"conformance classes of the page that ran no test: {sorted(classes - ran)}"


def test_the_toml_blocks_parse_and_plugins_toml_ones_are_read_by_herald(tmp_path: Path) -> None:
    known = set(plugin_manager.registered()) | page_adapter_names(page_module())
    toml_blocks = [block for block in blocks() if block.lang == "toml"]
    assert {names_file(block) for block in toml_blocks} == {"plugins.toml", "pyproject.toml"}
    for block in toml_blocks:
        try:
            data = tomllib.loads(block.code)
        except tomllib.TOMLDecodeError as exc:
            pytest.fail(f"{block.where()}: not valid TOML: {exc}")
        if names_file(block) == "plugins.toml":
            path = tmp_path / f"plugins-{block.line}.toml"
            path.write_text(block.code)
            read = read_plugins_toml(str(path))
            assert not read.unknown(known), f"{block.where()}: names adapters nobody registers: {read.unknown(known)}"
        else:
            entry_points = data["project"]["entry-points"]["herald"]
            for name, module in entry_points.items():
                assert module == package_name(name), f"{block.where()}: {name} = {module!r}"


@pytest.fixture
def shell(tmp_path: Path) -> Shell:
    return Shell(tmp_path)


class Shell:
    """Where the page's sh blocks run: a working directory, a herald home and database of
    their own, and ``herald`` on PATH running this checkout."""

    def __init__(self, root: Path) -> None:
        self.work = root / "work"
        self.site = root / "site"
        for path in (self.work, self.site, root / "bin"):
            path.mkdir()
        herald = root / "bin" / "herald"
        herald.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m core.cli "$@"\n')
        herald.chmod(0o755)
        self.packages: list[Path] = []
        self.env = {k: v for k, v in os.environ.items() if not k.startswith(("HERALD_", "PYTHON"))}
        self.env.update(
            PATH=f"{root / 'bin'}{os.pathsep}{os.environ['PATH']}",
            HOME=str(root),
            HERALD_HOME=str(root / "home"),
            HERALD_DATABASE_URL=f"sqlite:///{root / 'herald.db'}",
            COLUMNS="200",
        )

    def install_written_packages(self) -> None:
        """Install, as ``pip install -e`` would, each package the blocks wrote with herald entry points."""
        for pyproject in sorted(self.work.glob("**/pyproject.toml")):
            if pyproject.parent in self.packages:
                continue
            project = tomllib.loads(pyproject.read_text()).get("project", {})
            entry_points = project.get("entry-points", {}).get("herald")
            if not entry_points:
                continue
            dist = self.site / f"{project['name'].replace('-', '_')}-{project['version']}.dist-info"
            dist.mkdir()
            (dist / "METADATA").write_text(
                f"Metadata-Version: 2.1\nName: {project['name']}\nVersion: {project['version']}\n"
            )
            lines = "".join(f"{name} = {module}\n" for name, module in entry_points.items())
            (dist / "entry_points.txt").write_text(f"[herald]\n{lines}")
            self.packages.append(pyproject.parent)
        paths = [str(ROOT), str(self.site), *map(str, self.packages)]
        self.env["PYTHONPATH"] = os.pathsep.join(paths)

    def run(self, script: str) -> subprocess.CompletedProcess[str]:
        self.install_written_packages()
        return subprocess.run(
            ["bash", "-c", f"set -euo pipefail\n{script}"],
            cwd=self.work,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=120,
        )

    def herald_json(self, *args: str) -> object:
        done = self.run(" ".join(["herald", *args, "--json"]))
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)


def test_the_sh_blocks_parse_and_those_running_herald_run_in_order(shell: Shell) -> None:
    ran = 0
    for block in blocks():
        if block.lang == "toml" and names_file(block) == "plugins.toml":
            (shell.work / "plugins.toml").write_text(block.code)  # the page's plugins.toml from here on
        if block.lang != "sh":
            continue
        parsed = subprocess.run(["bash", "-n"], input=block.code, capture_output=True, text=True, timeout=30)
        assert parsed.returncode == 0, f"{block.where()}: not valid shell: {parsed.stderr}"
        if runs_herald(block):
            done = shell.run(block.code)
            assert done.returncode == 0, f"{block.where()} failed:\n{done.stdout}\n{done.stderr}"
            assert "Traceback" not in done.stdout + done.stderr, f"{block.where()}:\n{done.stderr}"
            ran += 1
    assert ran >= 3
    # What the blocks say they did: a package written and installed, the adapter listed and
    # enabled from the plugin it came from, a channel on it with its token masked.
    assert (shell.work / "herald-pebble" / "herald_pebble" / "__init__.py").is_file()
    adapters = {row["name"]: row for row in shell.herald_json("adapters")}  # type: ignore[attr-defined]
    assert adapters["pebble"]["enabled"] and adapters["pebble"]["plugin"] == "pebble"
    channels = {row["name"]: row for row in shell.herald_json("channel", "list")}  # type: ignore[attr-defined]
    assert channels["ada"]["platform"] == "pebble"
    assert "pbl_ada_5f2e" not in json.dumps(channels["ada"]["settings"])


def words(page: Path = PAGE) -> str:
    return page.read_text()


@pytest.mark.parametrize(
    "kind",
    [PublishContext, UploadContext, VerifyContext, MediaFile, Attachment, Uploaded, Published, Limits, Setting],
    ids=lambda kind: kind.__name__,
)
def test_the_reference_names_every_field_an_adapter_meets(kind: type) -> None:
    text = words()
    missing = [f.name for f in fields(kind) if f"`{f.name}`" not in text and f"`{f.name}(" not in text]
    assert not missing, f"docs/plugins.md does not describe {kind.__name__}.{', '.join(missing)}"


def test_the_reference_names_every_attribute_and_method_of_an_adapter() -> None:
    text = words()
    own = [name for name in vars(Adapter) if not name.startswith("_")]
    missing = [name for name in own if f"`{name}`" not in text and f"`{name}(" not in text]
    assert not missing, f"docs/plugins.md does not describe Adapter.{', Adapter.'.join(missing)}"


def test_the_reference_names_everything_core_plugins_offers_an_author() -> None:
    text = words()
    missing = [name for name in core.plugins.__all__ if not re.search(rf"`[^`\n]*\b{name}\b[^`\n]*`", text)]
    assert not missing, f"docs/plugins.md never names {', '.join(missing)} (core.plugins.__all__)"


def test_the_reason_table_and_its_neighbours_name_every_reason_and_every_error() -> None:
    text = words()
    assert not [r for r in Reason if f"`{r.value}`" not in text], "a Reason is missing from docs/plugins.md"
    errors = [
        cls.__name__ for cls in vars(core.plugins).values() if isinstance(cls, type) and issubclass(cls, PublishError)
    ]
    assert not [e for e in errors if f"`{e}" not in text], "a publish error is missing from docs/plugins.md"


def test_every_respond_method_of_the_conformance_kit_is_documented() -> None:
    text = words()
    respond = [name for name in vars(AdapterContract) if name.startswith("respond_")]
    assert respond
    missing = [name for name in respond if f"`{name}(" not in text]
    assert not missing, f"the conformance kit asks for {', '.join(missing)}, which docs/plugins.md does not describe"


def test_every_link_within_the_page_names_one_of_its_headings() -> None:
    text = words()
    prose = re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)
    slugs = set()
    for heading in re.findall(r"^#+ (.+)$", prose, flags=re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")
        slugs.add(slug)
    anchors = set(re.findall(r"\]\(#([^)]+)\)", prose))
    assert anchors and anchors <= slugs, f"links to no heading: {sorted(anchors - slugs)}"
