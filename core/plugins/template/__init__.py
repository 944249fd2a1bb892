"""The starter package ``herald adapters new NAME`` writes for a new platform adapter.

Four files, from the templates in ``files/``: the adapter with its registration hook
(``herald_NAME/__init__.py``), a ``pyproject.toml`` naming it in the ``herald`` entry point
group, a conformance test subclassing ``AdapterContract`` (``tests/test_conformance.py``)
and a README. The adapter talks to the example API the plugin guide (docs/plugins.md)
builds step by step, so the package's conformance test passes as written; its author then
replaces each request and each answer with their platform's.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from string import Template

from core.domain.errors import ConfigError, UserError

#: An adapter's name: lower-case words of letters and digits joined by single dashes
#: (``pebble``, ``discord-webhook``). It is a ``[adapters.NAME]`` key of plugins.toml, an
#: entry point's name and, with its dashes as underscores, part of a Python package's.
ADAPTER_NAME = re.compile(r"[a-z][a-z0-9]*(?:-[a-z0-9]+)*")
MAX_NAME_CHARS = 40

#: Each file written, from its template in ``files/``; ``$package`` is the package's name.
_FILES = (
    ("pyproject.toml", "pyproject.toml.tmpl"),
    ("README.md", "README.md.tmpl"),
    ("$package/__init__.py", "adapter.py.tmpl"),
    ("tests/test_conformance.py", "test_conformance.py.tmpl"),
)


@dataclass(frozen=True)
class StarterPackage:
    """What ``herald adapters new`` wrote."""

    #: The adapter's name (``pebble``).
    name: str
    #: Its Python package (``herald_pebble``), also the entry point's value.
    package: str
    #: Its adapter class (``Pebble``).
    class_name: str
    #: The directory it made.
    directory: Path
    #: Every file written, relative to ``directory``, in the order written.
    files: tuple[Path, ...]


def check_adapter_name(name: str, taken: Collection[str] = ()) -> None:
    """Refuse a name that cannot be an adapter's, or that a loaded adapter already has.

    Raises:
        ConfigError: naming the rule and a name that keeps it.
    """
    if not ADAPTER_NAME.fullmatch(name) or len(name) > MAX_NAME_CHARS:
        suggestion = "-".join(re.findall(r"[a-z0-9]+", name.lower())).lstrip("0123456789-") or "my-platform"
        raise ConfigError(
            f"{name!r} is not an adapter name: use lower-case letters and digits, words joined by single "
            f"dashes, starting with a letter, at most {MAX_NAME_CHARS} characters (e.g. {suggestion[:MAX_NAME_CHARS]})"
        )
    if name in taken:
        raise ConfigError(
            f"an adapter named {name!r} is already loaded (`herald adapters` lists it): two plugins cannot "
            "register one name; choose another"
        )


def package_name(name: str) -> str:
    """The Python package of the adapter called ``name``: ``herald_`` and its words."""
    return "herald_" + name.replace("-", "_")


def class_name(name: str) -> str:
    """The adapter class of the adapter called ``name``: its words capitalised (``DiscordWebhook``)."""
    return "".join(word.capitalize() for word in name.split("-"))


def write_starter(name: str, directory: Path | None = None, *, taken: Collection[str] | None = None) -> StarterPackage:
    """Write the starter package of the adapter called ``name``.

    Args:
        name: the adapter's name (``pebble``).
        directory: where to make it; ``herald-NAME`` in the working directory when None.
        taken: the names of the adapters already loaded; None asks the plugin manager.

    Raises:
        ConfigError: ``name`` is not a valid adapter name, or one a loaded adapter has.
        UserError: ``directory`` exists already (nothing is written over).
    """
    check_adapter_name(name, _loaded_names() if taken is None else taken)
    target = directory if directory is not None else Path(f"herald-{name}")
    if target.exists() or target.is_symlink():
        what = "directory" if target.is_dir() else "file"
        raise UserError(f"{target} exists already ({what}): give a new directory with --dir, or move it away")
    values = {
        "name": name,
        "package": package_name(name),
        "class_name": class_name(name),
        "title": " ".join(word.capitalize() for word in name.split("-")),
    }
    templates = resources.files(__name__).joinpath("files")
    written = []
    for path, template in _FILES:
        relative = Path(Template(path).substitute(values))
        text = Template(templates.joinpath(template).read_text(encoding="utf-8")).substitute(values)
        destination = target / relative
        destination.parent.mkdir(parents=True, exist_ok=True)
        destination.write_text(text, encoding="utf-8")
        written.append(relative)
    return StarterPackage(name, values["package"], values["class_name"], target, tuple(written))


def _loaded_names() -> Collection[str]:
    """The adapters herald has loaded; none when plugins.toml cannot be read (that is not
    this command's business: `herald adapters` says what is wrong with it)."""
    from core.plugins import manager

    try:
        return set(manager.registered())
    except ConfigError:
        return set()
