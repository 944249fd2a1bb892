"""The ``herald post list`` command: find posts by status, channel, account, time and text."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table
from rich.text import Text

from core.cli.output import JsonOpt, out, print_json, shown


def register(post_app: typer.Typer) -> None:
    @post_app.command("list")
    def post_list(
        status: Annotated[
            str | None, typer.Option(help="A post status (scheduled, held, failed, ...) or needs-attention.")
        ] = None,
        needs_attention: Annotated[
            bool, typer.Option("--needs-attention", help="Only posts with a delivery held or failed, or partly sent.")
        ] = False,
        channel: Annotated[str | None, typer.Option(help="Only posts going to this channel.")] = None,
        account: Annotated[str | None, typer.Option(help="Only this account's posts.")] = None,
        from_: Annotated[
            str | None, typer.Option("--from", help="First slot: ISO 8601 with offset, or local with --zone.")
        ] = None,
        to: Annotated[str | None, typer.Option(help="Slots before this instant (the window is [from, to)).")] = None,
        zone: Annotated[str | None, typer.Option(help="IANA zone of a local --from/--to, and of --week.")] = None,
        week: Annotated[bool, typer.Option("--week", help="This week, Monday to Monday in --zone.")] = False,
        search: Annotated[str | None, typer.Option(help="Text any part contains (case-insensitive).")] = None,
        limit: Annotated[int, typer.Option(help="Posts per page (at most 500).")] = 50,
        cursor: Annotated[str | None, typer.Option(help="Where the previous page ended, as it printed.")] = None,
        as_json: JsonOpt = False,
    ) -> None:
        """List posts in slot order, a page at a time; filters combine. Slots are shown in
        each post's zone; a post that needs a person is marked."""
        from core.services.finding import list_posts, parse_query

        page = list_posts(
            parse_query(
                status=status,
                needs_attention=needs_attention,
                channel=channel,
                account=account,
                start=from_,
                end=to,
                tz=zone,
                week=week,
                search=search,
                limit=limit,
                cursor=cursor,
            )
        )
        if as_json:
            print_json(page)
            return
        if not page.rows:
            out.print("no posts match")
            return
        table = Table("id", "status", "slot", "zone", "account", "channels", "text", "attention")
        for row in page.rows:
            states = row.channels
            # Text cells, not markup: names and texts are people's, brackets and all.
            table.add_row(
                str(row.id),
                row.status,
                shown(row.scheduled_at),
                row.zone,
                Text(row.account),
                Text(", ".join(f"{c.channel} {c.status}" + (f" ({c.reason})" if c.reason else "") for c in states)),
                Text(row.text + (f" (+{row.parts - 1} parts)" if row.parts > 1 else "")),
                "needs attention" if row.needs_attention else "",
            )
        out.print(table)
        if page.next_cursor:
            out.print(f"more posts: run the same command with --cursor {page.next_cursor}", highlight=False)
