"""Media herald keeps (§16): probed from their bytes when added, kept once per content,
checked against each channel's limits when a post is written, removed only when no
unfinished post carries them. Real files, real SQL; the CLI as a process where people
type it."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
import sqlalchemy as sa
from alembic import command
from sqlalchemy import func, select

from adapters.sandbox.adapters import SandboxNative, SandboxNone
from core import config
from core.config import Settings
from core.domain.errors import Conflict, NotFound, UserError
from core.plugins import IMAGE_TYPES, MB, Limits
from core.runtime.clock import ManualClock
from core.services.channels import add_channel
from core.services.editing import PostEdit, edit_post
from core.services.media import (
    AttachmentSpec,
    add_media,
    list_media,
    media_account,
    parse_attachments,
    remove_media,
)
from core.services.posts import cancel_post, create_post, show_post
from core.store import db, schema
from core.store.models import Media, Post
from tests.integration.media_files import jpeg, mp4, noise_png, png
from tests.integration.test_cli import herald_cmd
from tests.integration.test_cli_input import refused
from tests.integration.test_migrations import empty_engine  # noqa: F401 (a fixture)

pytestmark = pytest.mark.integration

#: What the sandbox adapters take (asserted by tests/unit/test_sandbox_adapters.py).
MEDIA_LIMITS = Limits(
    max_chars=500,
    max_media=4,
    media_types=IMAGE_TYPES | {"video/mp4"},
    max_image_bytes=8 * MB,
    max_video_bytes=40 * MB,
    max_video_seconds=140.0,
    alt_text=True,
)


@pytest.fixture
def media_channels(channels: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The sandbox channels, n1 taking media with alt text and x1 taking one image and no alt text."""
    monkeypatch.setattr(SandboxNative, "limits", MEDIA_LIMITS)
    monkeypatch.setattr(SandboxNone, "limits", replace(MEDIA_LIMITS, max_media=1, alt_text=False))
    return channels


def kept_files(herald: Settings) -> list[Path]:
    return [p for p in (Path(herald.home) / "media").rglob("*") if p.is_file() and not p.name.startswith(".")]


# -- adding a file ------------------------------------------------------------------------------------


def test_a_file_is_probed_from_its_bytes_and_kept_once_per_content(herald: Settings, tmp_path: Path) -> None:
    photo = jpeg(tmp_path / "photo.jpg", (40, 30))
    same = tmp_path / "copy-named.png"  # the same bytes under another name (and extension)
    same.write_bytes(photo.read_bytes())

    first = add_media(photo, "a blue square")
    again = add_media(same)

    assert (first.existed, again.existed) == (False, True)
    assert again.media.id == first.media.id
    m = first.media
    assert (m.mime, m.size, m.width, m.height, m.filename) == ("image/jpeg", photo.stat().st_size, 40, 30, "photo.jpg")
    assert again.media.alt == "a blue square"  # kept, as no new alt text was given
    assert len(kept_files(herald)) == 1
    assert kept_files(herald)[0].read_bytes() == photo.read_bytes()
    with db.reading() as s:
        assert s.execute(select(func.count()).select_from(Media)).scalar_one() == 1


def test_a_video_is_probed_for_its_length_where_ffprobe_is_installed(herald: Settings, tmp_path: Path) -> None:
    clip = mp4(tmp_path / "clip.mp4", seconds=2)
    m = add_media(clip).media
    assert (m.mime, m.width, m.height) == ("video/mp4", 64, 48)
    assert m.duration == pytest.approx(2.0, abs=0.2)


def test_without_ffprobe_a_video_is_accepted_with_an_unknown_length(herald: Settings, tmp_path: Path) -> None:
    clip = mp4(tmp_path / "clip.mp4")
    config.use(replace(herald, ffprobe=str(tmp_path / "no-ffprobe-here")))
    m = add_media(clip).media
    assert (m.mime, m.duration, m.width) == ("video/mp4", None, None)


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda d: _write(d / "notes.png", b"just some text, renamed"), r"notes.png is not an image or a video"),
        (lambda d: _cut(jpeg(d / "cut.jpg", (64, 64))), r"cut.jpg is a damaged image/jpeg image"),
        (lambda d: d / "nowhere.png", r"no file at .*nowhere.png: check the path"),
        (lambda d: _folder(d / "album"), r"album is a folder: give an image or a video file"),
        (lambda d: _write(d / "empty.jpg", b""), r"empty.jpg is empty"),
    ],
    ids=["text-renamed-png", "truncated-jpeg", "missing-path", "directory", "empty-file"],
)
def test_bad_files_are_refused_with_a_clear_message_and_nothing_kept(
    herald: Settings, tmp_path: Path, make, message: str
) -> None:
    with pytest.raises(UserError, match=message):
        add_media(make(tmp_path))
    assert list_media() == [] and kept_files(herald) == []


def test_a_cut_off_video_is_refused_where_ffprobe_can_tell(herald: Settings, tmp_path: Path) -> None:
    clip = mp4(tmp_path / "clip.mp4")
    cut = _write(tmp_path / "cut.mp4", clip.read_bytes()[:600])
    with pytest.raises(UserError, match=r"cut.mp4 is a damaged video/mp4 video"):
        add_media(cut)


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def _cut(path: Path) -> Path:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    return path


def _folder(path: Path) -> Path:
    path.mkdir()
    return path


# -- limits, checked when the post is written -----------------------------------------------------------


def test_a_50_mb_image_to_a_channel_taking_8_mb_is_refused_at_create_naming_both(
    media_channels: dict[str, str], clock: ManualClock, tmp_path: Path
) -> None:
    big = noise_png(tmp_path / "poster.png", megabytes=50)
    with pytest.raises(UserError) as refusal:
        create_post(channels=["n1"], parts=["launch"], media=[AttachmentSpec(0, str(big))])
    message = str(refusal.value)
    assert "poster.png" in message and "n1 (sandbox-native)" in message
    assert "is 50.0 MB" in message and "up to 8.0 MB" in message
    assert _posts() == 0


def test_more_attachments_than_a_channel_takes_are_refused(
    media_channels: dict[str, str], clock: ManualClock, tmp_path: Path
) -> None:
    two = [AttachmentSpec(0, str(png(tmp_path / f"{i}.png", color=c))) for i, c in enumerate(("red", "green"))]
    with pytest.raises(UserError, match=r"part 1 has 2 attachments; x1 \(sandbox-none\) takes at most 1 per part"):
        create_post(channels=["n1", "x1"], parts=["two pictures"], media=two)
    assert create_post(channels=["n1"], parts=["two pictures"], media=two) > 0


def test_alt_text_on_a_platform_without_it_is_refused(
    media_channels: dict[str, str], clock: ManualClock, tmp_path: Path
) -> None:
    photo = str(png(tmp_path / "kite.png"))
    with pytest.raises(UserError, match=r"x1 \(sandbox-none\) takes no alt text, and part 1 gives kite.png some"):
        create_post(channels=["x1"], parts=["look"], media=[AttachmentSpec(0, photo, "a red kite")])
    # The file's kept alt text is not the part's own: where alt text is not taken, it is left out.
    add_media(photo, "a red kite")
    assert create_post(channels=["x1"], parts=["look"], media=[AttachmentSpec(0, photo)]) > 0


def test_a_type_or_a_video_length_the_platform_does_not_take_is_refused(
    media_channels: dict[str, str], clock: ManualClock, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bmp = tmp_path / "scan.bmp"
    from PIL import Image

    Image.new("RGB", (4, 4)).save(bmp, "BMP")
    with pytest.raises(
        UserError, match=r"scan.bmp \(media \d+\) is image/bmp, which n1 \(sandbox-native\) does not take"
    ):
        create_post(channels=["n1"], parts=["scan"], media=[AttachmentSpec(0, str(bmp))])
    monkeypatch.setattr(SandboxNative, "limits", replace(MEDIA_LIMITS, max_video_seconds=1.0))
    clip = mp4(tmp_path / "clip.mp4", seconds=2)
    with pytest.raises(
        UserError, match=r"clip.mp4 \(media \d+\) is 2 s long; n1 \(sandbox-native\) takes videos up to 1 s"
    ):
        create_post(channels=["n1"], parts=["clip"], media=[AttachmentSpec(0, str(clip))])


def test_a_channel_without_media_refuses_attachments(
    channels: dict[str, str], clock: ManualClock, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(SandboxNone, "limits", Limits(max_chars=500))
    with pytest.raises(UserError, match=r"x1 \(sandbox-none\) takes no attachments"):
        create_post(channels=["x1"], parts=["look"], media=[AttachmentSpec(0, str(png(tmp_path / "a.png")))])


def test_an_edit_adding_a_channel_checks_the_attachments_against_it(
    media_channels: dict[str, str], clock: ManualClock, tmp_path: Path
) -> None:
    two = [AttachmentSpec(0, str(png(tmp_path / f"{i}.png", color=c))) for i, c in enumerate(("red", "green"))]
    post_id = create_post(channels=["n1"], parts=["two pictures"], media=two)
    with pytest.raises(UserError, match=r"x1 \(sandbox-none\) takes at most 1 per part"):
        edit_post(post_id, PostEdit(channels=("n1", "x1")))
    edited = edit_post(post_id, PostEdit(parts=("two pictures, reworded",)))
    assert [a.filename for a in show_post(edited.post_id).media[0]] == ["0.png", "1.png"]  # kept by the edit


def test_attachments_go_to_the_parts_named_in_order_with_their_alt_text(
    media_channels: dict[str, str], clock: ManualClock, tmp_path: Path
) -> None:
    a, b, c = (str(png(tmp_path / f"{n}.png", color=col)) for n, col in (("a", "red"), ("b", "green"), ("c", "blue")))
    specs = parse_attachments([a, f"2:{b}", f"2:{c}"], ["first", "", "third"])
    post_id = create_post(channels=["n1"], parts=["one", "two"], media=specs)
    shown = show_post(post_id).media
    assert [[(x.filename, x.alt) for x in part] for part in shown] == [
        [("a.png", "first")],
        [("b.png", None), ("c.png", "third")],
    ]
    with pytest.raises(UserError, match="names part 3, and the post has 2 part"):
        create_post(channels=["n1"], parts=["one", "two"], media=parse_attachments([f"3:{a}"], []))
    with pytest.raises(UserError, match="2 --alt for 1 --media"):
        parse_attachments([a], ["x", "y"])


# -- removing -------------------------------------------------------------------------------------------


def test_a_file_is_removed_only_when_no_unfinished_post_carries_it(
    media_channels: dict[str, str], clock: ManualClock, herald: Settings, tmp_path: Path
) -> None:
    photo = png(tmp_path / "kite.png")
    post_id = create_post(channels=["n1"], parts=["look"], media=[AttachmentSpec(0, str(photo))], at=clock.now())
    media_id = list_media()[0].id
    with pytest.raises(
        Conflict, match=rf"media {media_id} \(kite.png\) is on post\(s\) {post_id}, which are not published"
    ):
        remove_media(media_id)
    assert len(kept_files(herald)) == 1

    cancel_post(post_id)
    assert remove_media(media_id).removed
    assert kept_files(herald) == [] and list_media() == []
    with pytest.raises(NotFound):
        remove_media(media_id)
    # The cancelled post's history still names the file.
    assert show_post(post_id).media[0][0].filename == "kite.png"
    # Added again, the same bytes are kept again under the same id.
    assert add_media(photo).media.id == media_id and len(kept_files(herald)) == 1


def _posts() -> int:
    with db.reading() as s:
        return s.execute(select(func.count()).select_from(Post)).scalar_one()


# -- the CLI --------------------------------------------------------------------------------------------


def test_media_add_list_remove_from_the_command_line(herald: Settings, tmp_path: Path) -> None:
    photo = png(tmp_path / "kite.png", (30, 20))
    added = herald_cmd("media", "add", str(photo), "--alt", "a red kite")
    assert added.returncode == 0, added.stderr
    assert "media 1: kite.png – image/png" in added.stdout and "30×20" in added.stdout
    assert list_media()[0].account == "default"  # the only account, made for it: there was none
    listed = herald_cmd("media", "list")
    assert "kite.png" in listed.stdout and "a red kite" in listed.stdout
    assert herald_cmd("media", "remove", "1").returncode == 0
    assert "kite.png" not in herald_cmd("media", "list").stdout


def test_media_add_asks_which_account_when_there_are_several(
    herald: Settings, sandbox_url: str, tmp_path: Path
) -> None:
    photo = png(tmp_path / "kite.png")
    add_media(photo)  # no account yet: "default" is made, as `herald channel add` makes it
    add_channel("c1", "sandbox-native", {"base_url": sandbox_url}, "acme")
    ambiguous = herald_cmd("media", "add", str(photo))
    assert ambiguous.returncode == 2
    assert "give --account NAME (accounts: acme, default)" in ambiguous.stderr and "Traceback" not in ambiguous.stderr
    named = herald_cmd("media", "add", str(photo), "--account", "acme", "--json")
    assert named.returncode == 0, named.stderr
    assert (json.loads(named.stdout)["media"]["account"], json.loads(named.stdout)["existed"]) == ("acme", False)
    assert [(m.account, m.filename) for m in list_media()] == [("default", "kite.png"), ("acme", "kite.png")]
    assert [m.account for m in list_media(account_id=media_account("acme"))] == ["acme"]


def test_bad_media_from_the_command_line_is_one_line_and_exit_2(channels: dict[str, str], tmp_path: Path) -> None:
    notes = _write(tmp_path / "notes.png", b"plain text")
    assert "notes.png is not an image or a video" in refused("media", "add", str(notes))
    assert "album is a folder" in refused("media", "add", str(_folder(tmp_path / "album")))
    message = refused("post", "create", "--channel", "n1", "--text", "hi", "--media", str(tmp_path / "gone.png"))
    assert "no file at" in message and "gone.png" in message
    assert _posts() == 0


def test_an_edit_replaces_the_attachments_checked_like_a_create_and_frees_the_old_file(
    media_channels: dict[str, str], clock: ManualClock, tmp_path: Path
) -> None:
    kite, ridge = png(tmp_path / "kite.png"), jpeg(tmp_path / "ridge.jpg")
    post_id = create_post(channels=["n1", "x1"], parts=["look"], media=[AttachmentSpec(0, str(kite))])
    kite_id = show_post(post_id).media[0][0].media_id
    with pytest.raises(UserError, match=r"x1 \(sandbox-none\) takes no alt text"):
        edit_post(post_id, PostEdit(media=(AttachmentSpec(0, str(ridge), "the ridge"),)))
    assert [a.filename for a in show_post(post_id).media[0]] == ["kite.png"]  # the refused edit changed nothing

    edit_post(post_id, PostEdit(media=(AttachmentSpec(0, str(ridge)),)))
    assert [a.filename for a in show_post(post_id).media[0]] == ["ridge.jpg"]
    assert remove_media(kite_id).removed  # no unfinished post carries it any more

    edit_post(post_id, PostEdit(media=()))
    assert show_post(post_id).media == ((),)


def test_a_platform_with_a_shorter_caption_refuses_a_long_text_beside_attachments(
    media_channels: dict[str, str], clock: ManualClock, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(SandboxNative, "limits", replace(MEDIA_LIMITS, max_chars_with_media=20))
    photo = [AttachmentSpec(0, str(png(tmp_path / "kite.png")))]
    with pytest.raises(UserError, match="part 1 for n1 has 21 characters and attachments; sandbox-native allows 20"):
        create_post(channels=["n1"], parts=["x" * 21], media=photo)
    assert create_post(channels=["n1"], parts=["x" * 21]) > 0  # without attachments the whole limit holds
    assert create_post(channels=["n1"], parts=["x" * 20], media=photo) > 0


def test_a_platform_taking_one_video_alone_refuses_two_or_a_video_beside_an_image(
    media_channels: dict[str, str], clock: ManualClock, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(SandboxNative, "limits", replace(MEDIA_LIMITS, max_videos=1, video_alone=True))
    clip, other = mp4(tmp_path / "a.mp4", seconds=1), mp4(tmp_path / "b.mp4", seconds=2)
    image = png(tmp_path / "kite.png")
    with pytest.raises(UserError, match=r"part 1 has 2 videos; n1 \(sandbox-native\) takes at most 1 per part"):
        create_post(channels=["n1"], parts=["two"], media=[AttachmentSpec(0, str(clip)), AttachmentSpec(0, str(other))])
    with pytest.raises(UserError, match=r"part 1 has a video beside other attachments; .* takes a video alone"):
        create_post(
            channels=["n1"], parts=["mixed"], media=[AttachmentSpec(0, str(clip)), AttachmentSpec(0, str(image))]
        )
    assert create_post(channels=["n1"], parts=["one"], media=[AttachmentSpec(0, str(clip))]) > 0


# -- the migration that gave files an account -------------------------------------------------------------


def _upgrade_to(engine: sa.Engine, revision: str, *statements: str) -> None:
    cfg = schema.alembic_config(engine)
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, revision)
        for statement in statements:
            conn.execute(sa.text(statement))


def _account_of_each_file(engine: sa.Engine) -> dict[str, str]:
    with engine.connect() as conn:
        rows = conn.execute(
            sa.text("SELECT m.filename, a.name FROM media m JOIN accounts a ON a.id = m.account_id ORDER BY m.id")
        )
        return {row.filename: row.name for row in rows}


def _post(post_id: int, account_id: int) -> str:
    return (
        "INSERT INTO posts (id, account_id, status, scheduled_at, zone, revision, parts, approval, fence, "
        f"created_at, updated_at) VALUES ({post_id}, {account_id}, 'scheduled', CURRENT_TIMESTAMP, 'UTC', 1, "
        "'[]', 'not_required', 0, CURRENT_TIMESTAMP, CURRENT_TIMESTAMP)"
    )


def _file(media_id: int, name: str) -> str:
    return (
        "INSERT INTO media (id, digest, mime, size, filename, created_at) "
        f"VALUES ({media_id}, '{name:0<64}', 'image/png', 1, '{name}', CURRENT_TIMESTAMP)"
    )


def _account(account_id: int, name: str) -> str:
    return (
        "INSERT INTO accounts (id, name, status, emergency_stop, created_at) "
        f"VALUES ({account_id}, '{name}', 'active', false, CURRENT_TIMESTAMP)"
    )


def test_the_migration_gives_each_kept_file_the_account_of_its_oldest_post_else_the_oldest_account(
    empty_engine: sa.Engine,  # noqa: F811
) -> None:
    _upgrade_to(
        empty_engine,
        "0011",
        _account(1, "first"),
        _account(2, "second"),
        _post(1, 2),
        _post(2, 1),
        _file(1, "seconds"),
        _file(2, "shared"),
        _file(3, "unused"),
        "INSERT INTO post_media (post_id, media_id) VALUES (1, 1), (2, 2), (1, 2)",
    )
    schema.upgrade(empty_engine)
    assert _account_of_each_file(empty_engine) == {"seconds": "second", "shared": "second", "unused": "first"}


def test_the_migration_makes_the_default_account_for_files_kept_before_any_account(
    empty_engine: sa.Engine,  # noqa: F811
) -> None:
    _upgrade_to(empty_engine, "0011", _file(1, "early"))
    schema.upgrade(empty_engine)
    assert _account_of_each_file(empty_engine) == {"early": "default"}
