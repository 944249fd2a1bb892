"""The ``herald media`` commands: the files posts carry."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from core.cli.output import JsonOpt, out, print_json, shown


def _size(size: int) -> str:
    if size < 1024:
        return f"{size} B"
    return f"{size / 1024:.1f} KB" if size < 1024 * 1024 else f"{size / 1024 / 1024:.1f} MB"


def describe(mime: str, size: int, width: int | None, height: int | None, duration: float | None) -> str:
    """``image/png, 1.2 MB, 1200×800`` – what people need to know of a file."""
    said = [mime, _size(size)]
    if width and height:
        said.append(f"{width}×{height}")
    if mime.startswith("video/"):
        said.append(f"{duration:g} s" if duration is not None else "length unknown (no ffprobe)")
    return ", ".join(said)


def register(media: typer.Typer) -> None:
    @media.command("add")
    def media_add(
        file: Annotated[Path, typer.Argument(help="An image or a video.")],
        alt: Annotated[
            str | None, typer.Option(help="Alt text: what the picture shows, for people who cannot see it.")
        ] = None,
        account: Annotated[
            str | None,
            typer.Option(help="The account whose posts may carry it; default: the only account there is."),
        ] = None,
        as_json: JsonOpt = False,
    ) -> None:
        """Keep a file for an account's posts (the same bytes are kept once) and print its id;
        its type, size, dimensions and a video's length are read from it now, and checked
        against each channel's limits when a post carries it."""
        from core.services.media import add_media, media_account

        added = add_media(file, alt, account_id=media_account(account))
        if as_json:
            print_json(added)
            return
        m = added.media
        again = " (already kept)" if added.existed else ""
        out.print(
            f"media {m.id}: {m.filename} – {describe(m.mime, m.size, m.width, m.height, m.duration)}{again}",
            highlight=False,
            markup=False,
            soft_wrap=True,
        )

    @media.command("list")
    def media_list(
        account: Annotated[str | None, typer.Option(help="Only this account's files.")] = None,
        as_json: JsonOpt = False,
    ) -> None:
        """The kept files of every account (or one), oldest first."""
        from core.services.media import list_media, media_account

        kept = list_media(account_id=media_account(account) if account is not None else None)
        if as_json:
            print_json(kept)
            return
        table = Table("id", "file", "account", "type", "alt", "added")
        for m in kept:
            table.add_row(
                str(m.id),
                m.filename,
                m.account,
                describe(m.mime, m.size, m.width, m.height, m.duration),
                shown(m.alt),
                shown(m.created_at),
            )
        out.print(table)

    @media.command("remove")
    def media_remove(media_id: int, as_json: JsonOpt = False) -> None:
        """Forget a kept file; refused while a post that is not published or cancelled carries it."""
        from core.services.media import remove_media

        removed = remove_media(media_id)
        if as_json:
            print_json(removed)
            return
        out.print(f"media {removed.id} ({removed.filename}) removed", highlight=False, markup=False)
