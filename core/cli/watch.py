"""The ``herald`` commands for watching and repairing: reconcile, health, timeline, alarms
(and resolving one)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

import typer
from rich.table import Table

from core.cli.output import JsonOpt, out, print_json, shown


def register(app: typer.Typer) -> None:
    @app.command()
    def reconcile(
        once: Annotated[bool, typer.Option(help="Run one tick and exit.")] = False,
        interval: Annotated[
            float | None, typer.Option(help="Seconds between ticks, 0.05 to 3600 (HERALD_TICK_SECONDS).")
        ] = None,
    ) -> None:
        """Re-arm what should be moving: due posts without a live job, stale leases, due retries."""
        from core.config import check_tick_seconds
        from reconciler.tick import run_forever, tick

        if interval is not None:
            check_tick_seconds(interval, "--interval")
        if once:
            report = tick()
            out.print(
                f"armed {report.armed} post(s); alarms raised {report.missed_raised + report.duplicates}, "
                f"resolved {report.resolved}; read back {report.seen} ({report.duration_ms:.0f} ms)"
            )
            return
        run_forever(interval)

    @app.command()
    def health(as_json: JsonOpt = False) -> None:
        """Last reconciler tick, queue depth, oldest unclaimed due slot, open alarms,
        the deliveries that need a person (held, failed, in doubt), any emergency stop.

        Exit codes, stable for monitoring:
        0 healthy;
        1 unhealthy: herald is not moving as it should (reconciler, sweep, workers, queue, alarms);
        2 an error (e.g. the database is unreachable);
        3 herald is moving, but deliveries need a person or an emergency stop is on."""
        from core.services.health import health as read_health

        report = read_health()
        if as_json:
            print_json(report)
        else:
            out.print(f"last reconciler tick: {_ago(report.last_tick_age)} ago")
            out.print(f"last read-back sweep: {_ago(report.last_sweep_age)} ago")
            out.print(f"queue: {report.queued} queued, {report.scheduled} armed for their time (within the horizon)")
            out.print(f"oldest unclaimed due slot: {_ago(report.oldest_unclaimed_due_age)}")
            out.print(f"open alarms: {report.open_alarms}")
            out.print(
                f"need a person: {report.needs_person} ({report.held} held, {report.failed} failed, "
                f"{report.in_doubt} in doubt)"
            )
            stops = ["everywhere"] if report.emergency_stop else []
            stops += [f"account {name}" for name in report.stopped_accounts]
            out.print(f"emergency stop: {'ON ' + ', '.join(stops) if stops else 'off'}")
            for problem in report.problems:
                out.print(f"[red]unhealthy:[/] {problem}", highlight=False)
            for work in report.attention:
                out.print(f"[yellow]needs a person:[/] {work}", highlight=False)
            if report.healthy:
                out.print("[green]healthy[/]")
        raise typer.Exit(HEALTH_EXIT[report.state])

    @app.command()
    def timeline(post_id: int, as_json: JsonOpt = False) -> None:
        """Per delivery: slot, claimed, confirmed, first seen, the gaps, and the attempts log."""
        from core.services.timeline import timeline as read_timeline

        line = read_timeline(post_id)
        if as_json:
            print_json(line)
            return
        out.print(f"post {line.post}  [bold]{line.status}[/]  (times in {line.zone})")
        for d in line.deliveries:
            out.print(f"\n[bold]{d.channel}[/]  {d.status}")
            table = Table("instant", "at", "gap from previous")
            table.add_row("slot", _at(d.slot), "")
            table.add_row("claimed", _at(d.claimed), _secs(d.slot_to_claimed))
            table.add_row("confirmed", _at(d.confirmed), _secs(d.claimed_to_confirmed))
            table.add_row("first seen", _at(d.first_seen), _secs(d.confirmed_to_first_seen))
            out.print(table)
            if len(d.parts) > 1:
                parts = Table("part", "state", "platform id", "url")
                for p in d.parts:
                    parts.add_row(str(p.index + 1), p.state, shown(p.platform_id), shown(p.url))
                out.print(parts)
            log = Table("part", "fence", "worker", "action", "started", "outcome", "error")
            for a in d.attempts:
                log.add_row(
                    str(a.part + 1),
                    str(a.fence),
                    a.worker,
                    a.action,
                    _at(a.started),
                    a.outcome or "…",
                    shown(a.error),
                )
            out.print(log)
            if d.actions:
                done = Table("what a person did", "part", "at", "detail")
                for act in d.actions:
                    done.add_row(act.action, "" if act.part is None else str(act.part + 1), _at(act.at), act.detail)
                out.print(done)

    alarms_app = typer.Typer(
        invoke_without_command=True, help="Alarms: missed slots, duplicates, empty release queues."
    )
    app.add_typer(alarms_app, name="alarms")

    @alarms_app.callback()
    def alarms(
        ctx: typer.Context,
        as_json: JsonOpt = False,
        all_: Annotated[bool, typer.Option("--all", help="Include resolved alarms.")] = False,
    ) -> None:
        """List open alarms (missed slots, duplicates); `herald alarms resolve ID` resolves one."""
        if ctx.invoked_subcommand is not None:
            return
        from core.services.alarms import list_alarms

        rows = list_alarms(include_resolved=all_)
        if as_json:
            print_json(rows)
            return
        table = Table("id", "kind", "state", "post", "channel", "slot", "detail")
        for r in rows:
            table.add_row(
                str(r.id), r.kind, r.state, _about(r.post_id, r.schedule_id), r.channel, _at(r.slot), r.detail
            )
        out.print(table)

    @alarms_app.command("resolve")
    def alarms_resolve(alarm_id: int, as_json: JsonOpt = False) -> None:
        """Resolve an open alarm (e.g. once the extra copy is deleted).
        One whose condition still holds (a slot still missed) is raised again by the next tick."""
        from core.services.alarms import resolve_alarm

        view = resolve_alarm(alarm_id)
        if as_json:
            print_json(view)
            return
        about = _about(view.post_id, view.schedule_id)
        out.print(f"alarm {view.id} ({view.kind}, {about} on {view.channel}) resolved", highlight=False)


#: `herald health`'s exit code for each state: stable, for monitoring (2 is every command's
#: "error:" exit, e.g. no database).
HEALTH_EXIT = {"healthy": 0, "unhealthy": 1, "needs_person": 3}


def _about(post_id: int | None, schedule_id: int | None) -> str:
    """What an alarm is about: a post, or a recurring schedule (an empty queue)."""
    return f"post {post_id}" if post_id is not None else f"schedule {schedule_id}"


def _at(instant: datetime | None) -> str:
    return shown(instant) or "-"


def _ago(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds:.0f}s"


def _secs(value: float | None) -> str:
    return "" if value is None else f"+{value:.3f}s"
