"""The error tree is closed: every exception herald defines is a HeraldError (§6 step 8)."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import adapters
import core
import reconciler
import threads
from core.domain import errors
from core.domain.errors import HeraldError

PACKAGES = (core, adapters, reconciler, threads)


def exception_classes() -> dict[str, type[BaseException]]:
    found: dict[str, type[BaseException]] = {}
    for package in PACKAGES:
        for info in pkgutil.walk_packages(package.__path__, f"{package.__name__}."):
            if ".migrations." in info.name or info.name.endswith(".__main__"):
                continue
            module = importlib.import_module(info.name)
            for name, obj in vars(module).items():
                if inspect.isclass(obj) and issubclass(obj, BaseException) and obj.__module__ == module.__name__:
                    found[f"{module.__name__}.{name}"] = obj
    return found


def test_every_exception_herald_defines_is_a_herald_error() -> None:
    classes = exception_classes()

    assert "threads.chain.ChainBroken" in classes and "core.domain.errors.AdapterError" in classes
    outside = sorted(name for name, cls in classes.items() if not issubclass(cls, HeraldError))
    assert outside == []


def test_the_tree_drawn_in_the_errors_module_names_every_error_it_defines() -> None:
    drawn = errors.__doc__ or ""
    for name, cls in vars(errors).items():
        if inspect.isclass(cls) and issubclass(cls, HeraldError):
            assert name in drawn, f"{name} is missing from the tree in core/domain/errors.py"
