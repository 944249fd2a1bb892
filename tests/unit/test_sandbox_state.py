"""The sandbox platform's memory kept in a file: a restart forgets no post nor upload,
reuses no id, and still knows the native keys it saw; a second sandbox is kept off the
same file."""

from __future__ import annotations

import io
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from PIL import Image

from adapters.sandbox.server import check_port, ensure_free, listen
from adapters.sandbox.store import PlatformStore, Refusal
from core.domain.errors import UserError


@pytest.fixture
def state(tmp_path: Path) -> Path:
    return tmp_path / "sandbox" / "posts.jsonl"


def image(kind: str) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (4, 4)).save(buffer, kind)
    return buffer.getvalue()


PNG, GIF = image("PNG"), image("GIF")


def body(text: str, key: str | None = None) -> dict[str, str | None]:
    return {"text": text, "reply_to": None, "root": None, "key": key}


def restarted(state: Path, store: PlatformStore) -> PlatformStore:
    store.close()
    return PlatformStore(state)


def test_posts_ids_keys_and_tokens_survive_a_restart(state: Path) -> None:
    store = PlatformStore(state)
    first, _ = store.accept("native", body("one", "k1"), "tok", "k1", None)
    root, _ = store.accept("readback", body("root", "k2"), "tok", None, None)
    reply, _ = store.accept("readback", {**body("reply"), "reply_to": root.id}, "tok", None, None)
    store.set_token("revoked-token", "revoked")

    store = restarted(state, store)

    assert [p.admin_json() for p in store.posts()] == [p.admin_json() for p in (first, root, reply)]
    again, created = store.accept("native", body("one", "k1"), "tok", "k1", None)
    assert (again.id, created) == (first.id, False)  # the key is remembered: a replay, not a copy
    assert [p.id for p in store.search("readback", "k2")] == [root.id]
    with pytest.raises(Refusal, match="revoked"):
        store.check_token("revoked-token")
    new, created = store.accept("native", body("two"), "tok", None, None)
    assert created and new.id == "native-2"  # a new id, never one already given
    store.close()


def test_a_reset_forgets_the_posts_but_never_reuses_their_ids(state: Path) -> None:
    store = PlatformStore(state)
    for n in range(3):
        store.accept("none", body(f"post {n}"), "tok", None, None)
    store.reset()
    store = restarted(state, store)
    assert store.posts() == []
    post, _ = store.accept("none", body("after the reset"), "tok", None, None)
    assert post.id == "none-4"
    store.close()
    assert len(state.read_text().splitlines()) == 2  # the reset compacted the file to its counters


def test_a_last_line_cut_by_a_crash_is_skipped(state: Path) -> None:
    store = PlatformStore(state)
    kept, _ = store.accept("native", body("kept"), "tok", None, None)
    store.close()
    with state.open("a") as file:
        file.write('{"post": {"id": "native-2", "strat')
    store = PlatformStore(state)
    assert [p.id for p in store.posts()] == [kept.id]
    store.close()


def test_a_damaged_state_file_is_refused_naming_it_and_the_way_out(state: Path) -> None:
    store = PlatformStore(state)
    store.accept("native", body("one"), "tok", None, None)
    store.accept("native", body("two"), "tok", None, None)
    store.close()
    lines = state.read_text().splitlines()
    state.write_text("\n".join(["garbage", *lines]) + "\n")
    with pytest.raises(UserError) as info:
        PlatformStore(state)
    assert str(info.value) == (
        f"the sandbox's state file {state} is damaged at line 1: move it away to start empty, or give --no-state"
    )
    PlatformStore(state.with_name("other.jsonl")).close()  # the failed one let go of nothing it holds


def test_a_second_sandbox_on_the_same_state_file_is_refused(state: Path) -> None:
    first = PlatformStore(state)
    with pytest.raises(UserError) as info:
        PlatformStore(state)
    assert str(info.value) == (
        f"another sandbox keeps its posts in {state}: stop it, or give this one --state FILE or --no-state"
    )
    first.close()
    PlatformStore(state).close()  # free again once the first one stopped


def test_without_a_state_file_the_store_is_memory_only(tmp_path: Path) -> None:
    store = PlatformStore()
    store.accept("native", body("gone at exit"), "tok", None, None)
    assert store.state is None
    assert list(tmp_path.iterdir()) == []


# -- ports ----------------------------------------------------------------------------


@pytest.fixture
def taken_port() -> Iterator[int]:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        yield holder.getsockname()[1]


@pytest.mark.parametrize("port", [-1, 65536, 70000])
def test_a_port_out_of_range_is_refused_naming_it_and_the_option(port: int) -> None:
    with pytest.raises(UserError) as info:
        check_port(port, "--port", any_free=True)
    assert str(info.value) == f"port {port} is out of range: give --port from 1 to 65535 (0 picks a free one)"
    with pytest.raises(UserError, match=f"port {port} is out of range: give --sandbox-port from 1 to 65535$"):
        ensure_free("127.0.0.1", port, "--sandbox-port")


def test_port_zero_is_any_free_port_for_the_sandbox_itself_but_not_for_herald_run() -> None:
    server = listen("127.0.0.1", 0)
    assert server.server_address[1] > 0
    server.server_close()
    with pytest.raises(UserError, match="port 0 is out of range"):
        ensure_free("127.0.0.1", 0, "--sandbox-port")


def test_a_taken_port_is_refused_naming_it_and_the_fix(taken_port: int, state: Path) -> None:
    with pytest.raises(UserError) as info:
        ensure_free("127.0.0.1", taken_port, "--sandbox-port")
    assert str(info.value) == (
        f"port {taken_port} is in use on 127.0.0.1 (another sandbox or `herald run` may be serving it): "
        "stop that one, or give another with --sandbox-port"
    )
    with pytest.raises(UserError, match=f"port {taken_port} is in use on 127.0.0.1 .* give another with --port$"):
        listen("127.0.0.1", taken_port, state)
    PlatformStore(state).close()  # the refused sandbox did not keep the state file locked


# -- media ----------------------------------------------------------------------------


def test_uploads_their_bytes_and_the_posts_carrying_them_survive_a_restart(state: Path) -> None:
    store = PlatformStore(state)
    kept = store.accept_media("native", PNG, "image/png", "tok", processing_seconds=0.0, fails=False)
    slow = store.accept_media("native", PNG, "image/png", "tok", processing_seconds=3600.0, fails=False)
    failed = store.accept_media("none", GIF, "image/gif", "tok", processing_seconds=0.0, fails=True)
    carrier, _ = store.accept(
        "native", {**body("with media"), "media": [{"id": kept.id, "alt": "a"}]}, "tok", None, None
    )

    store = restarted(state, store)

    assert [m.admin_json() for m in store.uploads()] == [m.admin_json() for m in (kept, slow, failed)]
    assert [str(m.state()) for m in store.uploads()] == ["ready", "processing", "failed"]
    assert store.media_file(failed.id) == (store.media(failed.id), GIF)
    assert store.posts()[0].admin_json() == carrier.admin_json()
    assert store.accept_media("none", PNG, "image/png", "tok", 0.0, False).id == "media-4"
    store.close()


def test_two_state_files_in_one_folder_keep_their_media_apart(state: Path) -> None:
    first, second = PlatformStore(state), PlatformStore(state.with_name("other.jsonl"))
    mine = first.accept_media("none", PNG, "image/png", "tok", 0.0, False)
    theirs = second.accept_media("none", GIF, "image/gif", "tok", 0.0, False)
    assert mine.id == theirs.id  # each sandbox counts its own ids

    second.reset()
    first, second = restarted(state, first), restarted(state.with_name("other.jsonl"), second)

    assert first.media_file(mine.id) == (first.media(mine.id), PNG)
    assert second.uploads() == []
    first.close()
    second.close()


def test_an_upload_whose_file_was_removed_by_hand_is_forgotten_but_its_id_is_not_given_again(state: Path) -> None:
    store = PlatformStore(state)
    gone = store.accept_media("none", PNG, "image/png", "tok", 0.0, False)
    store.close()
    (state.parent / "media" / state.stem / gone.id).unlink()

    store = PlatformStore(state)

    assert store.uploads() == []
    assert store.accept_media("none", PNG, "image/png", "tok", 0.0, False).id == "media-2"
    store.close()


def test_without_a_state_file_uploads_stay_in_memory(tmp_path: Path) -> None:
    store = PlatformStore()
    media = store.accept_media("none", PNG, "image/png", "tok", 0.0, False)
    assert store.media_file(media.id) == (media, PNG)
    assert list(tmp_path.iterdir()) == []
