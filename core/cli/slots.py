"""``herald channel slots``: a channel's posting slots, which `herald post create --queue` fills."""

from __future__ import annotations

from typing import Annotated

import typer

from core.cli.output import JsonOpt, out, print_json, shown


def register(channel: typer.Typer) -> None:
    @channel.command("slots")
    def channel_slots(
        name: str,
        add: Annotated[
            list[str] | None, typer.Option(help='Days and local times, e.g. "mon-fri 09:00,13:00"; repeatable.')
        ] = None,
        remove: Annotated[
            list[str] | None, typer.Option(help='Slots to take away, e.g. "sat 10:00"; repeatable.')
        ] = None,
        clear: Annotated[bool, typer.Option("--clear", help="Take every slot away first.")] = False,
        zone: Annotated[
            str | None,
            typer.Option(
                help="IANA zone of the times [default: the channel's slots' zone, else UTC]; alone, moves them."
            ),
        ] = None,
        as_json: JsonOpt = False,
    ) -> None:
        """List a channel's posting slots and the next free ones, or change them. Days: mon..sun,
        ranges (mon-fri), lists (mon,wed), daily, weekdays, weekends; times HH:MM in --zone.
        A slot stays at its local time when the clocks change."""
        from core.domain.posting_slots import parse_slots
        from core.services.posting_slots import change_posting_slots, show_posting_slots
        from core.services.queue import WINDOW

        if add or remove or clear or zone is not None:
            view = change_posting_slots(
                name,
                add=[slot for spec in add or [] for slot in parse_slots(spec)],
                remove=[slot for spec in remove or [] for slot in parse_slots(spec)],
                clear=clear,
                zone=zone,
            )
        else:
            view = show_posting_slots(name)
        if as_json:
            print_json(view)
            return
        if not view.rules:
            fix = f'herald channel slots {view.channel} --add "mon-fri 09:00"'
            _say(f"channel {view.channel} has no posting slots: add some with `{fix}`")
            return
        _say(f"channel {view.channel}: posting slots in {view.zone}")
        for rule in view.rules:
            _say(f"  {rule}")
        upcoming = ", ".join(shown(at) for at in view.next_free) or f"none in the next {WINDOW.days} days"
        _say(f"next free: {upcoming}")


def _say(line: str) -> None:
    """Print ``line`` as written: no markup read in a channel's name, no colours, never wrapped."""
    out.print(line, highlight=False, markup=False, soft_wrap=True)
