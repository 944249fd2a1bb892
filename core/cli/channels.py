"""The ``herald channel`` commands that change or retire a channel: edit, remove."""

from __future__ import annotations

from typing import Annotated

import typer

from core.cli.output import JsonOpt, out, print_json


def register(channel: typer.Typer) -> None:
    @channel.command("edit")
    def channel_edit(
        name: str,
        set_: Annotated[list[str] | None, typer.Option("--set", help="A setting to give or change, key=value.")] = None,
        unset: Annotated[list[str] | None, typer.Option(help="A setting to take away; repeatable.")] = None,
        as_json: JsonOpt = False,
    ) -> None:
        """Change a channel's settings (checked against its platform's); secrets are never printed."""
        from core.services.channels import edit_channel, parse_settings

        done = edit_channel(name, parse_settings(set_ or []), unset or [])
        if as_json:
            print_json(done)
            return
        changes = [f"set {', '.join(done.updated_settings)}"] if done.updated_settings else []
        changes += [f"unset {', '.join(done.removed_settings)}"] if done.removed_settings else []
        out.print(f"channel {done.channel.name}: {'; '.join(changes)}", highlight=False, markup=False, soft_wrap=True)

    @channel.command("remove")
    def channel_remove(
        name: str,
        cancel_pending: Annotated[
            bool, typer.Option(help="First cancel its deliveries that are not finished (never one in doubt).")
        ] = False,
        as_json: JsonOpt = False,
    ) -> None:
        """Remove a channel; refused while it has deliveries not finished, unless --cancel-pending.
        Posts it published keep their history."""
        from core.services.channels import remove_channel

        done = remove_channel(name, cancel_pending=cancel_pending)
        if as_json:
            print_json(done)
            return
        cancelled = f"; cancelled its deliveries of {len(done.cancelled)} post(s)" if done.cancelled else ""
        history = f"; its posts' history shows it as {done.kept_as!r}" if done.kept_as else ""
        out.print(f"channel {done.name} removed{cancelled}{history}", highlight=False, markup=False, soft_wrap=True)

    @channel.command("test")
    def channel_test(name: str, as_json: JsonOpt = False) -> None:
        """Check a channel's credentials with one read-only call to its platform; changes nothing."""
        from core.services.channels import check_credentials

        done = check_credentials(name)
        if as_json:
            print_json(done)
            return
        out.print(f"channel {done.name}: {done.who}", highlight=False, markup=False, soft_wrap=True)
