"""The ``herald`` command. Each command's docstring is its help."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, NoReturn

import typer
from redis.exceptions import RedisError
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from sqlalchemy.exc import DBAPIError

from core.cli import channels as cli_channels
from core.cli import editing as cli_editing
from core.cli import find as cli_find
from core.cli import imports as cli_imports
from core.cli import keys as cli_keys
from core.cli import media as cli_media
from core.cli import plugins as cli_plugins
from core.cli import sandbox as cli_sandbox
from core.cli import schedules as cli_schedules
from core.cli import slots as cli_slots
from core.cli import support as cli_support
from core.cli import watch as cli_watch
from core.cli.output import JsonOpt, out, print_json, shown
from core.domain.errors import HeraldError, UserError

app = typer.Typer(no_args_is_help=True, add_completion=False, help="Schedule a post once; herald publishes it.")
channel_app = typer.Typer(no_args_is_help=True, help="Channels: where posts go.")
post_app = typer.Typer(no_args_is_help=True, help="Posts: create, list, show, edit, schedule, move, cancel, approve.")
sandbox_app = typer.Typer(no_args_is_help=True, help="The sandbox platform: a local stand-in for a social network.")
account_app = typer.Typer(no_args_is_help=True, help="Accounts: who posts belong to, and their standing.")
media_app = typer.Typer(no_args_is_help=True, help="Media: the images and videos posts carry.")
keys_app = typer.Typer(no_args_is_help=True, help="API keys: who may use the HTTP API and the dashboard.")
secrets_app = typer.Typer(no_args_is_help=True, help="The key channel settings are sealed with at rest.")
app.add_typer(channel_app, name="channel")
app.add_typer(post_app, name="post")
app.add_typer(sandbox_app, name="sandbox")
app.add_typer(account_app, name="account")
app.add_typer(media_app, name="media")
app.add_typer(secrets_app, name="secrets")
app.add_typer(keys_app, name="keys")


@secrets_app.command("rotate")
def secrets_rotate() -> None:
    """Seal every channel's settings again under a new key (the key file's, or the first of
    HERALD_SECRET_KEY=NEW,OLD), and drop the old key from the file."""
    from core.services.secrets import rotate

    done = rotate()
    out.print(f"{done.channels} channel(s) sealed again; the key is in {done.where}", highlight=False, markup=False)
    if done.then:
        out.print(done.then, highlight=False, markup=False)


@app.command()
def init() -> None:
    """Create the database, or upgrade it to the newest schema, and the key channel
    settings are sealed with (unless HERALD_SECRET_KEY gives it)."""
    from core.config import masked_url, settings
    from core.domain.errors import ConfigError
    from core.store import schema, sealing
    from core.store.diagnosis import database_problem

    sealing.keys()  # before the schema: its migrations seal what they find
    where = sealing.ENV if sealing.keys_from_env() is not None else str(sealing.key_file())

    url = settings().database_url
    try:
        schema.upgrade()
    except DBAPIError as exc:
        raise ConfigError(database_problem(exc, url, initialising=True)) from None
    out.print(f"database ready: {masked_url(url)}", highlight=False, soft_wrap=True)
    out.print(f"channel settings sealed with the key in {where} (back it up)", highlight=False, soft_wrap=True)


@channel_app.command("add")
def channel_add(
    platform: Annotated[str, typer.Option(help="Adapter name, see `herald adapters`.")],
    name: Annotated[str, typer.Option(help="A unique name for the channel.")],
    set_: Annotated[list[str] | None, typer.Option("--set", help="A channel setting, key=value; repeatable.")] = None,
    account: Annotated[str, typer.Option(help="The account the channel belongs to.")] = "default",
) -> None:
    """Add a channel, e.g. --platform sandbox-native --name n1 --set base_url=http://127.0.0.1:8025"""
    from core.services.channels import add_channel, parse_settings

    add_channel(name, platform, parse_settings(set_ or []), account)
    out.print(f"channel {name} added ({platform})")


@channel_app.command("list")
def channel_list(as_json: JsonOpt = False) -> None:
    """List channels with their platform, account, connection and settings (secrets masked)."""
    from core.services.channels import show_channels

    rows = show_channels()
    if as_json:
        print_json(rows)
        return
    table = Table("name", "platform", "account", "connected", "settings")
    for r in rows:
        table.add_row(
            r.name,
            r.platform,
            r.account,
            "yes" if r.connected else "NO: reconnect it",
            " ".join(f"{key}={value}" for key, value in r.settings.items()),
        )
    out.print(table)


@channel_app.command("reconnect")
def channel_reconnect(
    name: str,
    set_: Annotated[list[str] | None, typer.Option("--set", help="New settings, key=value.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Mark a channel connected again (after new credentials); held deliveries go out."""
    from core.services.channels import parse_settings, reconnect_channel

    done = reconnect_channel(name, parse_settings(set_ or []))
    if as_json:
        print_json(done)
        return
    out.print(f"channel {done.channel.name} connected; {len(done.armed)} post(s) armed again")


@post_app.command("create")
def post_create(
    channel: Annotated[list[str], typer.Option(help="Channel name; repeat for several.")],
    text: Annotated[str | None, typer.Option(help="The text of a one-part post.")] = None,
    part: Annotated[list[str] | None, typer.Option(help="One part of a thread; repeat in order.")] = None,
    parts_file: Annotated[
        Path | None, typer.Option(help="A file of parts separated by a line '---'.", exists=True, dir_okay=False)
    ] = None,
    at: Annotated[str | None, typer.Option(help="ISO 8601 with offset, or local with --zone.")] = None,
    in_: Annotated[str | None, typer.Option("--in", help="From now: 30s, 5m, 2h, 1d.")] = None,
    now: Annotated[bool, typer.Option("--now", help="Publish at once (the default when no slot is given).")] = False,
    zone: Annotated[str | None, typer.Option(help="IANA zone of --at and for display.")] = None,
    fold: Annotated[int | None, typer.Option(help="0 or 1: which of a repeated local time.", min=0, max=1)] = None,
    not_before: Annotated[str | None, typer.Option(help="Embargo: never before this instant.")] = None,
    needs_approval: Annotated[bool, typer.Option(help="Hold until `herald post approve`.")] = False,
    channel_text: Annotated[
        list[str] | None,
        typer.Option(help="NAME=TEXT: that channel's own text instead of the post's; repeat for its parts in order."),
    ] = None,
    draft: Annotated[bool, typer.Option(help="Save a draft, never sent until `herald post schedule ID`.")] = False,
    idempotency_key: Annotated[
        str | None, typer.Option(help="Repeating a create with this key and the same content makes no second post.")
    ] = None,
    media: Annotated[
        list[str] | None,
        typer.Option(help="[PART:]FILE: an image or video for part 1 (or PART); repeat, in order."),
    ] = None,
    alt: Annotated[
        list[str] | None, typer.Option(help="Alt text of the --media before it, in order ('' for none).")
    ] = None,
    queue: Annotated[
        bool, typer.Option("--queue", help="Add to queue: the channels' next free slot (`herald channel slots`).")
    ] = False,
) -> None:
    """Schedule a post (--now, --at an instant, --in a delay, or --queue: the next free posting
    slot) and print its id."""
    from core.services.content import parse_channel_texts
    from core.services.media import parse_attachments
    from core.services.parts import gather_parts
    from core.services.posts import submit_post
    from core.services.slots import parse_slot

    texts = gather_parts(text, part or [], parts_file.read_text() if parts_file is not None else None)
    slot = parse_slot(at=at, delay=in_, now=now, zone=zone, fold=fold, not_before=not_before, queue=queue)
    created = submit_post(
        channels=channel,
        parts=texts,
        at=slot.at,
        # Queued: shown in the zone given, else in the channel's slots' own.
        zone=zone if queue else slot.zone,
        not_before=slot.not_before,
        needs_approval=needs_approval,
        channel_texts=parse_channel_texts(channel_text or []),
        draft=draft,
        idempotency_key=idempotency_key,
        media=parse_attachments(media or [], alt or []),
        queue=queue,
    )
    if queue and not created.existed:
        from core.services.posts import show_post

        queued = show_post(created.post_id)
        Console(stderr=True).print(
            f"post {created.post_id} queued for {shown(queued.scheduled_at)} ({queued.zone})", highlight=False
        )
    if created.existed:
        Console(stderr=True).print(
            f"post {created.post_id} already existed (idempotency key {idempotency_key!r}); nothing new was made",
            highlight=False,
            markup=False,
        )
    sys.stdout.write(f"{created.post_id}\n")


@post_app.command("show")
def post_show(post_id: int, as_json: JsonOpt = False) -> None:
    """Show a post: the text of every part, its status, each delivery's status, reason,
    platform id and url, when a waiting one tries next and a channel's own text where it
    differs, attempts; for a thread, how far it got on each channel and every part's state."""
    from core.services.posts import show_post

    post = show_post(post_id)
    if as_json:
        print_json(post)
        return
    out.print(f"post {post.id}  [bold]{post.status}[/]  slot {shown(post.scheduled_at)} ({post.zone})")
    if post.imported_at is not None:
        out.print(
            f"imported {shown(post.imported_at)}: another system published it at its slot; herald keeps the "
            "record and never sends it",
            highlight=False,
        )
    for i, text in enumerate(post.texts, 1):
        out.print(f"part {i}/{len(post.texts)}: {text}", highlight=False, markup=False)
        for n, a in enumerate(post.media[i - 1] if i <= len(post.media) else (), 1):
            alt = f" – alt: {a.alt}" if a.alt else " – no alt text"
            out.print(
                f"  attachment {n}: {a.filename} ({a.mime}, media {a.media_id}){alt}", highlight=False, markup=False
            )
    table = Table("channel", "status", "parts", "reason", "platform id", "url", "attempts")
    for d in post.deliveries:
        table.add_row(
            d.channel, d.status, d.progress, shown(d.reason), shown(d.platform_id), shown(d.url), str(d.attempts)
        )
    out.print(table)
    # Why a channel stopped, in sentences a table would wrap: the reason's explanation and
    # the action that fixes it, then the platform's or the adapter's own words.
    for d in post.deliveries:
        if d.reason:
            out.print(f"{d.channel}: [bold]{d.reason}[/]: {d.explanation} {d.action}", highlight=False)
        if d.detail:
            out.print(f"{d.channel}: {d.detail}", highlight=False, markup=False)
        if d.next_attempt_at:
            out.print(f"{d.channel}: next attempt at {shown(d.next_attempt_at)}", highlight=False)
        for p in d.parts:
            if p.text is not None:
                out.print(f"{d.channel}: part {p.index + 1} reads: {p.text}", highlight=False, markup=False)
        for u in d.uploads:
            out.print(
                f"{d.channel}: part {u.part + 1} attachment {u.position + 1} ({u.filename}) uploaded as "
                f"{u.platform_id}, {u.state}",
                highlight=False,
                markup=False,
            )
    for d in post.deliveries:
        if len(d.parts) < 2:
            continue
        thread = Table("part", "state", "platform id", "url", title=f"{d.channel}: thread {d.progress} published")
        for p in d.parts:
            thread.add_row(f"{p.index + 1}/{len(d.parts)}", p.state, shown(p.platform_id), shown(p.url))
        out.print(thread)


@post_app.command("cancel")
def post_cancel(post_id: int, as_json: JsonOpt = False) -> None:
    """Cancel what has not been published yet (on a partly published post, the rest)."""
    from core.services.posts import cancel_post

    done = cancel_post(post_id)
    if as_json:
        print_json(done)
        return
    line = f"post {post_id} cancelled on {len(done.cancelled)} channel(s) ({', '.join(done.cancelled)})"
    if done.kept_parts:
        line += f", where {done.kept_parts} thread part(s) had published and stay"
    if done.published:
        line += f"; {len(done.published)} channel(s) had published and keep it ({', '.join(done.published)})"
    if done.ended:
        line += f"; {len(done.ended)} had ended before ({', '.join(done.ended)})"
    out.print(f"{line}; now {done.status}", highlight=False, markup=False)


@post_app.command("reschedule")
def post_reschedule(
    post_id: int,
    at: Annotated[str | None, typer.Option(help="ISO 8601 with offset, or local with --zone.")] = None,
    in_: Annotated[str | None, typer.Option("--in", help="From now: 30s, 5m, 2h.")] = None,
    now: Annotated[bool, typer.Option("--now", help="Publish at once.")] = False,
    zone: Annotated[str | None, typer.Option(help="IANA zone of --at.")] = None,
    fold: Annotated[int | None, typer.Option(help="0 or 1: which of a repeated local time.", min=0, max=1)] = None,
) -> None:
    """Move a post that has not started publishing to a new slot (--at, --in, or --now)."""
    from core.services.posts import reschedule_post
    from core.services.slots import parse_slot

    slot = parse_slot(at=at, delay=in_, now=now, zone=zone, fold=fold, required=True)
    reschedule_post(post_id, slot.at, slot.zone)
    out.print(f"post {post_id} moved{' to now' if slot.at is None else ''}")


@post_app.command("approve")
def post_approve(post_id: int) -> None:
    """Approve a post held for approval."""
    from core.services.posts import approve_post

    approve_post(post_id)
    out.print(f"post {post_id} approved")


@app.command()
def stop(account: Annotated[str | None, typer.Option(help="Only this account.")] = None) -> None:
    """Emergency stop: hold every post from now on (everywhere, or for one account)."""
    from core.services.controls import set_emergency_stop

    set_emergency_stop(True, account)
    out.print(f"emergency stop ON{' for ' + account if account else ''}: nothing will be sent")


@app.command()
def resume(account: Annotated[str | None, typer.Option(help="Only this account.")] = None) -> None:
    """Lift the emergency stop; held posts are armed again."""
    from core.services.controls import set_emergency_stop

    armed = set_emergency_stop(False, account)
    out.print(f"emergency stop off; {len(armed)} post(s) armed again")


@account_app.command("status")
def account_status(name: str, status: Annotated[str, typer.Argument(help="active, unpaid or suspended")]) -> None:
    """Set an account's standing; unpaid or suspended accounts' posts are held."""
    from core.services.controls import set_account_status
    from core.store.models import AccountStatus

    try:
        standing = AccountStatus(status)
    except ValueError:
        raise UserError(f"{status!r}: use active, unpaid or suspended") from None
    set_account_status(name, standing)
    out.print(f"account {name}: {standing}")


@app.command()
def worker(
    burst: Annotated[bool, typer.Option(help="Stop when the queue is empty.")] = False,
    scheduler: Annotated[bool, typer.Option(help="Also run rq's scheduler (timers for due posts).")] = True,
) -> None:
    """Run a worker that publishes posts (with rq's scheduler)."""
    from core.runtime.worker import run_worker

    run_worker(burst=burst, with_scheduler=scheduler)


@app.command()
def api(
    host: Annotated[str, typer.Option(help="Address to bind.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8026,
) -> None:
    """Serve the HTTP API (/openapi.json, docs at /docs) and the dashboard (/)."""
    import uvicorn

    from core.api.app import create_app

    # No logging config of uvicorn's own: its loggers go through herald's (HERALD_LOG_FORMAT).
    uvicorn.run(create_app(), host=host, port=port, log_level="warning", log_config=None)


@app.command()
def run(
    demo: Annotated[bool, typer.Option(help="Seed demo channels and posts on the sandbox.")] = True,
    sandbox_port: Annotated[int, typer.Option(help="Port of the sandbox platform.")] = 8025,
    workers: Annotated[int, typer.Option(help="Worker processes.", min=1)] = 2,
    api_port: Annotated[int, typer.Option(help="Port of the API and the dashboard.")] = 8026,
) -> None:
    """Run everything for the embedded default: database, queue, sandbox, workers, reconciler,
    and the API with the dashboard (printing a one-time login link to it)."""
    from core.cli.run import run_all

    run_all(demo=demo, sandbox_port=sandbox_port, workers=workers, api_port=api_port)


@sandbox_app.command("serve")
def sandbox_serve(
    port: Annotated[int, typer.Option(help="Port to listen on (0: any free one).")] = 8025,
    host: Annotated[str, typer.Option(help="Address to bind.")] = "127.0.0.1",
    state: Annotated[
        Path | None, typer.Option(help="File to keep the posts in [default: HERALD_HOME/sandbox/posts.jsonl].")
    ] = None,
    no_state: Annotated[bool, typer.Option("--no-state", help="Keep the posts in memory only.")] = False,
) -> None:
    """Serve the sandbox platform (its feed at /, its admin API under /sandbox); its posts
    survive a restart."""
    from adapters.sandbox.server import serve
    from core.config import settings

    if state is not None and no_state:
        raise UserError("give --state FILE or --no-state, not both")
    serve(host, port, None if no_state else state or settings().sandbox_state)


cli_watch.register(app)
cli_plugins.register(app)
cli_editing.register(post_app)
cli_find.register(post_app)
cli_support.register(post_app)
cli_sandbox.register(sandbox_app)
cli_channels.register(channel_app)
cli_slots.register(channel_app)
cli_media.register(media_app)
cli_keys.register(keys_app)
cli_imports.register(app)
cli_schedules.register(app)


def main() -> None:
    """Entry point: errors reach people as one line that names the fix, never a traceback."""
    _configure_logging()
    try:
        # Outside standalone mode click returns an Exit's code instead of exiting.
        code = app(standalone_mode=False)
        if isinstance(code, int) and code:
            raise SystemExit(code)
    except HeraldError as exc:
        _refuse(str(exc))
    except DBAPIError as exc:
        from core.config import settings
        from core.store.diagnosis import database_problem

        _refuse(database_problem(exc, settings().database_url))
    except RedisError as exc:
        _refuse(f"Redis is unreachable ({exc}); check HERALD_REDIS_URL")
    except (typer.Abort, KeyboardInterrupt):
        raise SystemExit(130) from None
    except typer.Exit as exc:
        raise SystemExit(exc.exit_code) from None
    except typer.TyperException as exc:  # usage errors, from the click typer carries
        if not hasattr(exc, "show"):
            raise
        exc.show()
        raise SystemExit(getattr(exc, "exit_code", 2)) from None


def _configure_logging() -> None:
    """Every herald process logs as HERALD_LOG_FORMAT says, from its first line on."""
    from core.cli import logs
    from core.config import settings

    try:
        log_format = settings().log_format
    except HeraldError:  # the command names the mistake when it reads its settings
        log_format = "text"
    logs.configure(log_format)


def _refuse(message: str) -> NoReturn:
    """Print ``error: MESSAGE`` on one line (never wrapped, brackets shown as written); exit 2."""
    Console(stderr=True, soft_wrap=True).print(f"[red]error:[/] {escape(message)}", highlight=False)
    raise SystemExit(2) from None


if __name__ == "__main__":
    main()
