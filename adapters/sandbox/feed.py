"""The sandbox platform's pages for people: the feed at ``/`` and one post at ``/p/{id}``.

Each post shows its text and then its media in order, images with their alt text and
videos with controls, served from ``/media/{id}`` and kept within the page's width.
"""

from __future__ import annotations

import html
from urllib.parse import quote

from adapters.sandbox.media import PostMedia, is_video
from adapters.sandbox.store import StoredPost

_PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>{title}</title>
<style>body{{font:15px/1.4 system-ui,sans-serif;max-width:40rem;margin:2rem auto;padding:0 1rem}}
article{{border-bottom:1px solid #ddd;padding:.6rem 0}}small{{color:#666}}
p{{white-space:pre-wrap;margin:.3rem 0}}
img,video{{display:block;max-width:100%;max-height:24rem;height:auto;margin:.3rem 0}}</style></head>
<body><h1>{title}</h1>
{body}
</body></html>
"""


def _media_html(medium: PostMedia) -> str:
    src = html.escape(f"/media/{quote(medium.id, safe='')}")
    if is_video(medium.mime):
        label = f' aria-label="{html.escape(medium.alt)}"' if medium.alt else ""
        return f'<video controls src="{src}"{label}></video>'
    # An empty alt (not a missing one) tells a screen reader there is nothing to describe.
    return f'<img src="{src}" alt="{html.escape(medium.alt or "")}">'


def _post_html(post: StoredPost) -> str:
    def link(post_id: str) -> str:
        return f'<a href="/p/{html.escape(quote(post_id, safe=""))}">{html.escape(post_id)}</a>'

    reply = f" · reply to {link(post.reply_to)}" if post.reply_to else ""
    media = "".join(_media_html(medium) for medium in post.media)
    return (
        f"<article><small>{link(post.id)} · {html.escape(post.strategy)} · "
        f"{html.escape(post.created_at)}{reply}</small><p>{html.escape(post.text)}</p>{media}</article>"
    )


def render_feed(posts: list[StoredPost]) -> str:
    """The feed people look at: every post, newest first."""
    items = "\n".join(_post_html(post) for post in reversed(posts)) or "<p>No posts yet.</p>"
    return _PAGE.format(title="herald sandbox platform", body=items)


def render_post(post: StoredPost) -> str:
    return _PAGE.format(title=f"post {html.escape(post.id)}", body=_post_html(post))
