"""The ``herald post`` commands for changing a post: edit, and schedule (a draft)."""

from __future__ import annotations

from typing import Annotated

import typer

from core.cli.output import JsonOpt, out, print_json, shown
from core.domain.errors import UserError


def register(post_app: typer.Typer) -> None:
    @post_app.command("edit")
    def post_edit(
        post_id: int,
        text: Annotated[str | None, typer.Option(help="The new text of a one-part post.")] = None,
        part: Annotated[list[str] | None, typer.Option(help="One part of the new thread; repeat in order.")] = None,
        channel: Annotated[
            list[str] | None,
            typer.Option(help="The channels after the edit; repeat for several. Those left out are taken off."),
        ] = None,
        channel_text: Annotated[
            list[str] | None,
            typer.Option(
                help="NAME=TEXT: that channel's own text; repeat for its parts in order. NAME= (nothing after '=') "
                "puts it back on the post's text."
            ),
        ] = None,
        at: Annotated[str | None, typer.Option(help="New slot: ISO 8601 with offset, or local with --zone.")] = None,
        in_: Annotated[str | None, typer.Option("--in", help="New slot from now: 30s, 5m, 2h, 1d.")] = None,
        zone: Annotated[str | None, typer.Option(help="IANA zone of --at, and to show the post in.")] = None,
        fold: Annotated[int | None, typer.Option(help="0 or 1: which of a repeated local time.", min=0, max=1)] = None,
        correct: Annotated[
            bool, typer.Option("--correct", help="The post has published: fix the record (platform copies stay).")
        ] = False,
        republish: Annotated[
            bool, typer.Option("--republish", help="The post has published: make a new post from the edited content.")
        ] = False,
        media: Annotated[
            list[str] | None,
            typer.Option(
                help="[PART:]FILE: the attachments after the edit, replacing the post's own; repeat, in order."
            ),
        ] = None,
        alt: Annotated[list[str] | None, typer.Option(help="Alt text of the n-th --media ('' for none).")] = None,
        no_media: Annotated[bool, typer.Option("--no-media", help="Take every attachment off.")] = False,
        as_json: JsonOpt = False,
    ) -> None:
        """Edit a post's text, parts, channels, per-channel text or slot. Before it has published
        anywhere its revision goes up, so every delivery key changes with it. Once it has
        published, choose --correct (fix the record) or --republish (a new post, which may
        appear twice). Refused while an attempt is in doubt: resolve it first."""
        from core.services.content import parse_channel_texts
        from core.services.editing import EditMode, PostEdit, edit_post
        from core.services.media import parse_attachments
        from core.services.slots import parse_slot

        if text is not None and part:
            raise UserError("give --text for a one-part post or --part for each part of a thread, not both")
        if correct and republish:
            raise UserError("give --correct or --republish, not both")
        if no_media and media:
            raise UserError("give --media for the new attachments or --no-media to take them all off, not both")
        attachments = () if no_media else tuple(parse_attachments(media, alt or [])) if media else None
        parts = (text,) if text is not None else tuple(part) if part else None
        slot = parse_slot(at=at, delay=in_, zone=zone, fold=fold) if at or in_ else None
        change = PostEdit(
            parts=parts,
            channels=tuple(channel) if channel else None,
            channel_texts=parse_channel_texts(channel_text or [], resets=True),
            at=slot.at if slot else None,
            media=attachments,
            zone=zone,
        )
        mode = EditMode.CORRECT if correct else EditMode.REPUBLISH if republish else None
        result = edit_post(post_id, change, mode=mode)
        if as_json:
            print_json(result)
            return
        if result.republished_from is not None:
            out.print(
                f"post {result.post_id} made from post {result.republished_from}'s edited content; "
                f"post {result.republished_from} stays as it is"
            )
        else:
            out.print(f"post {result.post_id} edited (revision {result.revision}, {result.status})")
        for label, names in (("added", result.added), ("taken off", result.removed), ("cancelled", result.cancelled)):
            if names:
                out.print(f"{label}: {', '.join(names)}")
        for copy in result.unchanged_copies:
            out.print(f"{copy.channel}: {copy.note} ({shown(copy.url)})", highlight=False)

    @post_app.command("schedule")
    def post_schedule(
        post_id: int,
        at: Annotated[str | None, typer.Option(help="ISO 8601 with offset, or local with --zone.")] = None,
        in_: Annotated[str | None, typer.Option("--in", help="From now: 30s, 5m, 2h, 1d.")] = None,
        zone: Annotated[str | None, typer.Option(help="IANA zone of --at, and to show the post in.")] = None,
        fold: Annotated[int | None, typer.Option(help="0 or 1: which of a repeated local time.", min=0, max=1)] = None,
        as_json: JsonOpt = False,
    ) -> None:
        """Schedule a draft: at --at or --in, else at the draft's own slot (now if that has passed)."""
        from core.services.editing import schedule_draft
        from core.services.slots import parse_slot

        slot = parse_slot(at=at, delay=in_, zone=zone, fold=fold) if at or in_ else None
        done = schedule_draft(post_id, slot.at if slot else None, zone)
        if as_json:
            print_json(done)
            return
        out.print(f"post {done.post_id} {done.status} for {shown(done.scheduled_at)} ({done.zone})")
