"""The calendar (``/``): the account's posts by week or month in the viewer's zone, or as a
list; a scheduled post dragged to another day or hour is rescheduled
(``POST /posts/{id}/reschedule``). A post that is sending cannot move; one that has
published can only be published again, as a new post at the new slot (``republish``)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import replace
from datetime import date, datetime, timedelta
from typing import Annotated

from fastapi import APIRouter, Form, Request, Response

from core.domain.errors import Conflict, UserError
from core.domain.states import PostStatus
from core.domain.timing import parse_instant
from core.domain.timing import zone as named_zone
from core.services.calendar import VIEWS, calendar, window
from core.services.editing import EditMode, PostEdit, edit_post
from core.services.finding import PostQuery, PostRow, list_posts
from core.services.posts import reschedule_post, show_post
from core.services.scope import own_post
from core.services.views import shown_in
from core.web.rendering import PageRoute, back_to, done, render
from core.web.session import Csrf, Scheduler, Viewer

router = APIRouter(route_class=PageRoute)

#: Posts that may be dragged to another slot: nothing of them has gone out.
MOVABLE = frozenset({PostStatus.SCHEDULED, PostStatus.HELD, PostStatus.DRAFT})
#: Posts a drag publishes again, as a new post (``republish``).
REPUBLISHABLE = frozenset({PostStatus.PUBLISHED, PostStatus.PARTIALLY_PUBLISHED})


def viewer_zone(request: Request, tz: str | None) -> str:
    """The zone the viewer chose (``?tz=``, remembered in the session), UTC until then.

    Raises:
        UserError: an unknown zone.
    """
    if tz:
        named_zone(tz)
        request.session["tz"] = tz
    chosen = request.session.get("tz")
    return chosen if isinstance(chosen, str) else "UTC"


@router.get("/")
def calendar_page(
    request: Request,
    who: Viewer,
    view: str = "week",
    day: str | None = None,
    tz: str | None = None,
    cursor: str | None = None,
) -> Response:
    where = viewer_zone(request, tz)
    try:
        around = date.fromisoformat(day) if day else datetime.now(named_zone(where)).date()
    except ValueError:
        raise UserError(f"day {day!r} is not a date: give YYYY-MM-DD") from None
    if view not in VIEWS:
        raise UserError(f"no calendar view {view!r}: one of {', '.join(VIEWS)}")
    step = timedelta(days=31 if view == "month" else 7)
    nav = {"previous": (around - step).isoformat(), "next": (around + step).isoformat(), "day": around.isoformat()}
    if view == "list":
        start, _end, _days = window("week", around, where)
        page = list_posts(PostQuery(account=who.account, start=start, cursor=cursor))
        rows = tuple(_in_zone(row, where) for row in page.rows)
        return render(request, "list.html", who, view=view, rows=rows, next_cursor=page.next_cursor, nav=nav)
    shown = calendar(who.account_id, view, around, where)
    by_day: dict[date, list[PostRow]] = defaultdict(list)
    for row in shown.posts:
        by_day[row.scheduled_at.date()].append(row)
    return render(
        request,
        "calendar.html",
        who,
        view=view,
        window=shown,
        by_day=by_day,
        nav=nav,
        movable=MOVABLE,
        republishable=REPUBLISHABLE,
        today=datetime.now(named_zone(where)).date(),
    )


def _in_zone(row: PostRow, tz: str) -> PostRow:
    return replace(row, scheduled_at=shown_in(row.scheduled_at, tz))


@router.post("/posts/{post_id}/reschedule", dependencies=[Csrf])
def reschedule(
    request: Request,
    post_id: int,
    who: Scheduler,
    at: Annotated[str, Form(description="the new slot, a local time in the viewer's zone")],
    mode: Annotated[str, Form()] = "",
) -> Response:
    own_post(who.account_id, post_id)
    where = viewer_zone(request, None)
    instant, _ = parse_instant(at, where, 0)
    post = show_post(post_id)
    shown = shown_in(instant, post.zone).strftime("%Y-%m-%d %H:%M %Z")
    if post.status in REPUBLISHABLE:
        if mode != EditMode.REPUBLISH.value:
            raise Conflict(
                f"post {post_id} has published: its slot cannot move (a correction keeps the slot); "
                "republish it as a new post at the new slot"
            )
        made = edit_post(post_id, PostEdit(at=instant), mode=EditMode.REPUBLISH)
        return done(request, f"/posts/{made.post_id}", f"post {post_id} republished as post {made.post_id} at {shown}")
    reschedule_post(post_id, instant, post.zone)
    return done(request, back_to(request), f"post {post_id} moved to {shown}")
