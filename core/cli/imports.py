"""``herald import FILE``: posts another system published, and posts to schedule in bulk."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn
from rich.table import Table

from core.cli.output import JsonOpt, out, print_json
from core.domain.errors import UserError
from core.services.import_file import Format

if TYPE_CHECKING:
    from core.services.imports import ImportReport
    from core.services.imports import Progress as Told


@contextmanager
def _progress() -> Iterator[Told | None]:
    """A progress bar per step on a terminal; nothing where the output is read by a script."""
    if not out.is_terminal:
        yield None
        return
    with Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=out
    ) as bars:
        tasks: dict[str, TaskID] = {}

        def tell(step: str, done: int, total: int) -> None:
            if step not in tasks:
                tasks[step] = bars.add_task(step, total=total)
            bars.update(tasks[step], completed=done)

        yield tell


def _said(report: ImportReport) -> str:
    kinds = f"{report.published} published post(s) to record, {report.scheduled} post(s) to schedule"
    if not report.written:
        return f"{report.file}: {report.rows} row(s) checked: {kinds}; nothing written (--dry-run)"
    ids = [r.post_id for r in report.posts]
    made = f" (posts {min(ids)}–{max(ids)})" if ids else ""
    return (
        f"{report.file}: {report.rows} row(s) imported: {report.published} published post(s) recorded, "
        f"{report.scheduled} post(s) scheduled{made}"
    )


def register(app: typer.Typer) -> None:
    @app.command("import")
    def import_file(
        file: Annotated[Path, typer.Argument(help="A .csv or .json file (docs/imports.md).", dir_okay=False)],
        dry_run: Annotated[bool, typer.Option("--dry-run", help="Check every row; write nothing.")] = False,
        fmt: Annotated[
            Format | None, typer.Option("--format", help="csv or json, where the file's extension does not say.")
        ] = None,
        as_json: JsonOpt = False,
    ) -> None:
        """Import posts from a file: published ones another system published (recorded, never
        sent) and ones to schedule (checked as `post create` checks them). Every bad row is
        named (row, field, why) and then nothing is written; exits 2. Rows are numbered as a
        spreadsheet numbers them: a CSV file's header is row 1."""
        from core.services.imports import import_posts

        with _progress() as tell:
            report = import_posts(file, dry_run=dry_run, fmt=fmt, progress=tell)
        if as_json:
            print_json(report)
        elif report.problems:
            table = Table("row", "field", "why", title=f"{report.file}: bad rows")
            for p in report.problems:
                table.add_row(str(p.row), p.field, p.why)
            out.print(table)
        else:
            out.print(_said(report), highlight=False, markup=False, soft_wrap=True)
        if report.problems:
            bad = len({p.row for p in report.problems})
            raise UserError(
                f"nothing was written: {bad} bad row(s) of {report.rows}; fix them and import again "
                "(--dry-run checks without writing)"
            )
