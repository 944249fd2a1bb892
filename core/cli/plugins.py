"""``herald adapters``: the adapters and plugins loaded; ``herald adapters new``: a starter
package for a new platform adapter."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from core.cli.output import JsonOpt, out, print_json
from core.domain.errors import UserError


def register(app: typer.Typer) -> None:
    adapters_app = typer.Typer(add_completion=False)
    app.add_typer(adapters_app, name="adapters")

    @adapters_app.callback(invoke_without_command=True)
    def adapters(ctx: typer.Context, as_json: JsonOpt = False) -> None:
        """List the platform adapters (name, version, strategy, key TTL, plugin, enabled), then
        every plugin with the hooks it implements, and the plugins left out and why.
        `herald adapters new NAME` starts a new adapter."""
        if ctx.invoked_subcommand is not None:
            if as_json:
                raise UserError(f"--json is for the list: write `herald adapters {ctx.invoked_subcommand} ...` alone")
            return
        from core.plugins.manager import describe, plugins, problems

        rows = describe()
        if as_json:
            print_json(rows)
            return
        table = Table("name", "version", "strategy", "key_ttl", "plugin", "enabled")
        for r in rows:
            # A native key without a window (Bluesky's record key) dedupes for good.
            forever = r.strategy == "native_key"
            ttl = f"{r.key_ttl:g}s" if r.key_ttl is not None else "forever" if forever else "-"
            table.add_row(r.name, r.version, r.strategy, ttl, r.plugin, "yes" if r.enabled else "no")
        out.print(table)
        loaded = Table("plugin", "hooks", title="plugins")
        for p in plugins():
            loaded.add_row(p.name, ", ".join(p.hooks) or "-")
        out.print(loaded)
        for problem in problems():
            out.print(
                f"plugin {problem.name} left out ({problem.stage}): {problem.error}", highlight=False, markup=False
            )

    @adapters_app.command("new")
    def new(
        name: Annotated[str, typer.Argument(help="The adapter's name: lower-case words joined by dashes (pebble).")],
        directory: Annotated[
            Path | None, typer.Option("--dir", help="The directory to make [default: herald-NAME].")
        ] = None,
    ) -> None:
        """Write a starter package for a new platform adapter: the adapter and its hook, a
        pyproject.toml with its entry point, a conformance test that passes as written, a README."""
        from core.plugins.template import write_starter

        made = write_starter(name, directory)
        out.print(
            f"wrote {made.directory}: the {made.name} adapter ({made.package}.{made.class_name})",
            highlight=False,
            markup=False,
            soft_wrap=True,
        )
        for path in made.files:
            out.print(f"  {made.directory / path}", highlight=False, markup=False, soft_wrap=True)
        out.print(
            f"next: cd {made.directory} && pip install -e '.[test]' && pytest",
            highlight=False,
            markup=False,
            soft_wrap=True,
        )
