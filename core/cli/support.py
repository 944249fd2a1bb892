"""The ``herald post`` commands support staff use (§18): retry what failed, resolve an
attempt in doubt or a copy found before the first send."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

import typer

from core.cli.output import JsonOpt, out, print_json
from core.domain.errors import UserError


class Outcome(StrEnum):
    #: It is on the platform: give its --url.
    LANDED = "landed"
    #: It is not: send it once more, accepting that a second copy may appear (for a copy
    #: found before the first send: publish anyway, beside it).
    SEND_AGAIN = "send-again"
    #: The copy found before the first send is herald's: recorded published where it is.
    ADOPT = "adopt"


def register(post_app: typer.Typer) -> None:
    @post_app.command("retry")
    def post_retry(
        post_id: int,
        channel: Annotated[str | None, typer.Option(help="Only this channel's delivery.")] = None,
        as_json: JsonOpt = False,
    ) -> None:
        """Send again what failed or was held for a reason a retry fixes, with a fresh attempt
        budget; never what published. Other holds are named with the command that lifts them.
        Exits 2 when there is nothing to retry."""
        from core.services.support import retry_post

        done = retry_post(post_id, channel)
        if as_json:
            print_json(done)
            return
        for r in done.retried:
            was = f"{r.was} {r.reason}" if r.reason else str(r.was)
            out.print(f"post {post_id} on {r.channel}: retrying (was {was})", highlight=False)
        for left in done.refused:
            said = f"post {post_id} on {left.channel}: left {left.status} {left.reason}: {left.fix}"
            out.print(said, highlight=False, markup=False)

    @post_app.command("resolve")
    def post_resolve(
        post_id: int,
        outcome: Annotated[Outcome, typer.Argument(help="landed (with --url), send-again or adopt.")],
        channel: Annotated[str, typer.Option(help="The channel whose delivery is held.")],
        url: Annotated[str | None, typer.Option(help="landed: the post's address on the platform.")] = None,
        platform_id: Annotated[
            str | None, typer.Option(help="landed: the platform's id of the post (default: the URL's last segment).")
        ] = None,
        as_json: JsonOpt = False,
    ) -> None:
        """Resolve a delivery held ambiguous_outcome: `landed --url URL` records it published
        there; `send-again` sends it once more, accepting that a second copy may appear.
        Held duplicate_suspected (a copy herald did not send was there before its first
        send): `adopt` records that copy as herald's; `send-again` publishes anyway."""
        from core.services.support import Adopt, Landed, ResolveOutcome, SendAgain, resolve_post

        decided: ResolveOutcome
        if outcome is Outcome.LANDED:
            if not url:
                raise UserError("landed needs the post's address: add --url URL (and --platform-id if it is not in it)")
            decided = Landed(url, platform_id)
        else:
            if url or platform_id:
                raise UserError(f"--url and --platform-id go with landed; {outcome} takes neither")
            decided = Adopt() if outcome is Outcome.ADOPT else SendAgain()
        done = resolve_post(post_id, channel, decided)
        if as_json:
            print_json(done)
            return
        if done.outcome == "landed":
            said = f"recorded as landed at {done.url} (platform id {done.platform_id})"
        elif done.outcome == "adopt":
            said = f"adopted: recorded as published at {done.url} (platform id {done.platform_id})"
        else:
            said = "will be sent once more (resend accepted)"
        out.print(
            f"post {post_id} on {channel}: part {done.part + 1} {said}; the delivery is {done.delivery_status}, "
            f"the post {done.post_status}",
            highlight=False,
        )
