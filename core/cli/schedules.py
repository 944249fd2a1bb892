"""The ``herald schedule`` commands: recurring release schedules (§12) and their queues."""

from __future__ import annotations

import sys
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from core.cli.output import JsonOpt, out, print_json, shown


def register(app: typer.Typer) -> None:
    schedule = typer.Typer(
        no_args_is_help=True,
        help="Recurring releases: an RRULE in a zone on a channel, fed by a queue of ready posts.",
    )
    app.add_typer(schedule, name="schedule")

    @schedule.command("add")
    def schedule_add(
        channel: str,
        rrule: Annotated[
            str, typer.Option(help='An RFC 5545 RRULE, e.g. "FREQ=WEEKLY;BYDAY=TU;BYHOUR=10;BYMINUTE=0".')
        ],
        zone: Annotated[str, typer.Option(help="The IANA zone the rule's times are in, e.g. Europe/Berlin.")],
        catch_up: Annotated[
            str, typer.Option(help="Missed slots older than this are skipped, not released (30m, 24h, 2d).")
        ] = "24h",
        as_json: JsonOpt = False,
    ) -> None:
        """Add a recurring release schedule to CHANNEL and print its id; it starts now."""
        from core.domain.timing import parse_duration
        from core.services.schedules import add_schedule

        view = add_schedule(channel, rrule, zone, parse_duration(catch_up))
        if as_json:
            print_json(view)
            return
        sys.stdout.write(f"{view.id}\n")
        # The id alone on stdout, for `ID=$(herald schedule add ...)`; the rest for people.
        Console(stderr=True).print(f"next slot {shown(view.next_slot)} ({view.zone})", highlight=False, markup=False)

    @schedule.command("list")
    def schedule_list(as_json: JsonOpt = False) -> None:
        """List the schedules: channel, rule, zone, next slot, posts queued."""
        from core.services.schedules import list_schedules

        rows = list_schedules()
        if as_json:
            print_json(rows)
            return
        table = Table("id", "channel", "rrule", "zone", "next slot", "queued", "catch-up")
        for r in rows:
            table.add_row(
                str(r.id), r.channel, r.rrule, r.zone, shown(r.next_slot), str(r.queued), _hours(r.catch_up_seconds)
            )
        out.print(table)

    @schedule.command("show")
    def schedule_show(schedule_id: int, as_json: JsonOpt = False) -> None:
        """Show a schedule: its next slots in its zone, its queue, what became of its recent slots."""
        from core.services.schedules import show_schedule

        detail = show_schedule(schedule_id)
        if as_json:
            print_json(detail)
            return
        s = detail.schedule
        out.print(
            f"schedule {s.id} on {s.channel}: {s.rrule} in {s.zone}, catch-up {_hours(s.catch_up_seconds)}",
            highlight=False,
            markup=False,
        )
        out.print("next slots: " + (", ".join(shown(u) for u in detail.upcoming) or "none (the rule has ended)"))
        queue = Table("post", "text", "queued at", title=f"queue ({len(detail.queue)})")
        for q in detail.queue:
            queue.add_row(str(q.post_id), q.text, shown(q.queued_at))
        out.print(queue)
        history = Table("slot", "outcome", "post", "goes out at", "published at", title="recent slots")
        for h in detail.history:
            what = f"{h.outcome} ({h.slots} slots, to {shown(h.through)})" if h.slots > 1 else str(h.outcome)
            history.add_row(shown(h.slot), what, shown(h.post_id), shown(h.released_at), shown(h.published_at))
        out.print(history)

    @schedule.command("queue")
    def schedule_queue(
        schedule_id: int,
        text: Annotated[str | None, typer.Option(help="The text of a one-part post.")] = None,
        part: Annotated[list[str] | None, typer.Option(help="One part of a thread; repeat in order.")] = None,
        media: Annotated[
            list[str] | None, typer.Option(help="[PART:]FILE: an image or video for part 1 (or PART); repeat.")
        ] = None,
        alt: Annotated[list[str] | None, typer.Option(help="Alt text of the --media before it, in order.")] = None,
    ) -> None:
        """Queue a post on a schedule (checked as `post create` checks it) and print its id;
        it stays a draft until a slot releases it."""
        from core.services.media import parse_attachments
        from core.services.parts import gather_parts
        from core.services.schedules import queue_post

        created = queue_post(
            schedule_id, gather_parts(text, part or []), media=parse_attachments(media or [], alt or [])
        )
        sys.stdout.write(f"{created.post_id}\n")

    @schedule.command("release")
    def schedule_release(schedule_id: int, as_json: JsonOpt = False) -> None:
        """Release the schedule's due slot now, as its timer would: the most recent slot inside
        the catch-up window since the last release, once (older ones are skipped)."""
        from core.services.schedules import release_schedule

        done = release_schedule(schedule_id)
        if as_json:
            print_json(done)
            return
        skipped = f"; {done.skipped} older slot(s) skipped" if done.skipped else ""
        following = f"; next slot {shown(done.next_slot)}" if done.next_slot else ""
        lines = {
            "released": f"slot {shown(done.slot)} released post {done.post_id}, going out at {shown(done.at)}",
            "empty": f"slot {shown(done.slot)} came with nothing queued (alarm raised)",
            "skipped": "every slot that came was older than the catch-up window",
            "nothing_due": "no slot has come since the last release",
            "lost": "another release took the slot at the same moment",
            "ended": "the schedule's rule has no slot left",
        }
        out.print(f"schedule {schedule_id}: {lines[done.result]}{skipped}{following}", highlight=False, markup=False)

    @schedule.command("remove")
    def schedule_remove(schedule_id: int, as_json: JsonOpt = False) -> None:
        """Remove a schedule: nothing more is released; its queued posts stay drafts."""
        from core.services.schedules import remove_schedule

        done = remove_schedule(schedule_id)
        if as_json:
            print_json(done)
            return
        kept = (
            f"; its queued post(s) {', '.join(map(str, done.drafts))} stay drafts (`herald post schedule ID`)"
            if done.drafts
            else ""
        )
        out.print(f"schedule {done.id} removed{kept}", highlight=False, markup=False)


def _hours(seconds: float) -> str:
    return f"{seconds / 3600:g}h"
