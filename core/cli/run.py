"""``herald run``: the whole embedded default in one process tree.

The parent owns the embedded Redis-compatible server and hands its address to every
child (sandbox platform, workers, reconciler, API server), so they all share one queue.
It prints a one-time login link to the dashboard (never a key). Ctrl-C stops them all.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import webbrowser
from pathlib import Path
from types import FrameType

import httpx
from sqlalchemy import select

from adapters.sandbox.server import ensure_free
from core.config import settings
from core.domain.errors import UserError
from core.runtime.queue import redis_url, stop_embedded
from core.services.keys import login_link
from core.store import db, schema
from core.store.models import Channel

#: The demo's channels: one per sandbox strategy, and the real Mastodon and Bluesky adapters
#: against the sandbox's Mastodon and Bluesky personalities.
DEMO_CHANNELS = {
    "demo-native": "sandbox-native",
    "demo-readback": "sandbox-readback",
    "demo-none": "sandbox-none",
    "demo-mastodon": "mastodon",
    "demo-bluesky": "bluesky",
}
#: Channels that take threads and images in the demo.
DEMO_RICH = ["demo-native", "demo-mastodon", "demo-bluesky"]


def _spawn(args: list[str], env: dict[str, str], log_dir: Path, name: str) -> subprocess.Popen[bytes]:
    log = (log_dir / f"{name}.log").open("ab")
    return subprocess.Popen([sys.executable, "-m", "core.cli", *args], env=env, stdout=log, stderr=subprocess.STDOUT)


def _wait_for(
    url: str, child: subprocess.Popen[bytes], name: str, option: str, *, says_pid: bool, timeout: float = 15.0
) -> None:
    """Wait until ``child`` answers at ``url`` – that one, not another process that took the
    port meanwhile, where its answer says whose it is (``says_pid``: the sandbox's health).

    Raises:
        UserError: the child stopped, another process answers, or none did in time.
    """
    log = f"{settings().home}/{name}.log"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if child.poll() is not None:
            raise UserError(f"the {name} stopped at once; see {log} (is {option} taken?)")
        try:
            answer = httpx.get(url, timeout=1.0)
        except httpx.TransportError:
            time.sleep(0.1)
            continue
        if says_pid:
            try:
                pid = answer.json().get("pid")
            except (ValueError, AttributeError):  # not a sandbox's health answer
                pid = None
            if pid != child.pid:
                raise UserError(f"another process answers at {url}: stop it, or give another {option}")
        return
    raise UserError(f"{url} did not answer within {timeout:g}s; see {log}")


#: The key ``herald run`` makes once, to open the dashboard as the demo account's admin.
RUN_KEY_NAME = "herald run"


def dashboard_key() -> int:
    """The id of the demo account's admin key for the dashboard, made on the first run.

    Its secret is never shown: the dashboard is opened with one-time login links.
    """
    from core.domain.roles import Role
    from core.services.channels import DEFAULT_ACCOUNT, account_named
    from core.services.keys import create_key, list_keys

    for key in list_keys(DEFAULT_ACCOUNT):
        if key.name == RUN_KEY_NAME and key.role is Role.ADMIN and key.revoked_at is None and key.expires_at is None:
            return key.id
    with db.transaction() as s:
        account_named(s, DEFAULT_ACCOUNT, create=True)  # a run without the demo has no channel yet
    return create_key(DEFAULT_ACCOUNT, Role.ADMIN, name=RUN_KEY_NAME).key.id


DEMO_ALT = "The word herald in white on dark blue, above an orange band"


def demo_image(folder: Path) -> Path:
    """A picture for the demo post, drawn here (herald ships no binary files)."""
    from PIL import Image, ImageDraw

    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "herald-demo.png"
    image = Image.new("RGB", (480, 240), "#1d3557")
    draw = ImageDraw.Draw(image)
    for x in range(0, 480, 8):  # a gradient band across the middle
        draw.rectangle((x, 100, x + 8, 140), fill=(230, 57 + x // 4, 70))
    draw.text((24, 40), "herald", fill="#f1faee", font_size=48)
    draw.text((24, 170), "one post, every channel, once", fill="#a8dadc", font_size=20)
    image.save(path, "PNG")
    return path


def demo_settings(name: str, sandbox_url: str) -> dict[str, str]:
    """A demo channel's settings: the sandbox's address, and the credentials its Mastodon
    and Bluesky personalities take (any token or app password makes an account there)."""
    platform = DEMO_CHANNELS[name]
    if platform == "mastodon":
        return {"base_url": sandbox_url, "token": "demo-mastodon-token"}
    if platform == "bluesky":
        return {
            "service": f"{sandbox_url}/bluesky",
            "handle": "herald-demo.bsky.social",
            "app_password": "demo-pass-word-0001",
        }
    return {"base_url": sandbox_url}


def seed_demo(sandbox_url: str) -> list[int]:
    """The demo channels and posts going out in 10 seconds: one to every channel, a thread,
    and one with an image."""
    from core.domain.timing import parse_duration
    from core.services.channels import add_channel
    from core.services.media import AttachmentSpec
    from core.services.posts import create_post
    from core.services.slots import parse_slot

    with db.reading() as s:
        existing = set(s.execute(select(Channel.name)).scalars())
    for name, platform in DEMO_CHANNELS.items():
        if name not in existing:
            add_channel(name, platform, demo_settings(name, sandbox_url))
    at = parse_slot(delay="10s").instant  # by the one clock
    return [
        create_post(
            channels=list(DEMO_CHANNELS),
            parts=[
                f"Hello from herald: one post, {len(DEMO_CHANNELS)} channels, once each. #herald https://example.com"
            ],
            at=at,
        ),
        create_post(
            channels=DEMO_RICH,
            parts=["A thread, part 1/3", "part 2/3 replies to 1", "part 3/3 replies to 2"],
            at=at + parse_duration("5s"),
        ),
        create_post(
            channels=DEMO_RICH,
            parts=["A post with an image: herald keeps the file, checks it, and uploads it before the post."],
            media=[AttachmentSpec(0, str(demo_image(settings().home_path / "demo")), DEMO_ALT)],
            at=at + parse_duration("8s"),
        ),
    ]


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def run_all(*, demo: bool, sandbox_port: int, workers: int, api_port: int = 8026) -> None:
    """Start everything, or refuse at once (before starting anything) when the sandbox's
    or the API's port is taken – by another ``herald run``, most likely.

    Raises:
        UserError: a port is out of range or taken, or the sandbox or the API did not start.
    """
    ensure_free("127.0.0.1", sandbox_port, "--sandbox-port")
    ensure_free("127.0.0.1", api_port, "--api-port")
    # Ctrl-C and SIGTERM both stop everything, even where this process was started with
    # SIGINT ignored (a shell's background job): a child left behind would keep the ports.
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, _interrupt)
    cfg = settings()
    home = cfg.home_path
    home.mkdir(parents=True, exist_ok=True)
    schema.upgrade()
    # The embedded server outlives the CLI commands that start it; the one herald run
    # uses is stopped with it.
    embedded = not cfg.redis_url
    env = {**os.environ, "HERALD_REDIS_URL": redis_url(), "HERALD_DATABASE_URL": cfg.database_url}
    sandbox_url = f"http://127.0.0.1:{sandbox_port}"
    sandbox = _spawn(
        ["sandbox", "serve", "--port", str(sandbox_port), "--state", str(cfg.sandbox_state)], env, home, "sandbox"
    )
    children = [sandbox]
    children += [_spawn(["worker"], env, home, f"worker-{i}") for i in range(workers)]
    children.append(_spawn(["reconcile"], env, home, "reconciler"))
    api_url = f"http://127.0.0.1:{api_port}"
    try:
        _wait_for(f"{sandbox_url}/sandbox/health", sandbox, "sandbox", "--sandbox-port", says_pid=True)
        # Once the sandbox answers: fewer processes starting at once on a small machine.
        api = _spawn(["api", "--port", str(api_port)], env, home, "api")
        children.append(api)
        print(f"herald is running: database {cfg.database_url}, queue {env['HERALD_REDIS_URL']}")
        print(f"sandbox platform feed: {sandbox_url}/   (logs in {home}/)")
        if demo:
            ids = seed_demo(sandbox_url)
            print(f"demo posts {', '.join(map(str, ids))} go out in ~10 s: `herald post show {ids[0]}`")
        _wait_for(f"{api_url}/openapi.json", api, "api", "--api-port", says_pid=False)
        key_id = dashboard_key()
        print(f"API: {api_url}/api/v1   (documented at {api_url}/docs)")
        # A login link works once: the browser gets one, the person another.
        print(f"dashboard: {api_url}/login/{login_link(key_id)}   (a one-time login link, for 10 minutes)")
        webbrowser.open(f"{api_url}/login/{login_link(key_id)}")
        print("Ctrl-C stops everything.")
        while all(child.poll() is None for child in children):
            time.sleep(0.5)
        print("error: a herald process stopped; see the logs in", home, file=sys.stderr)
    except KeyboardInterrupt:
        pass
    finally:
        for child in children:
            if child.poll() is None:
                child.send_signal(signal.SIGTERM)
        # Ten seconds for all of them together, not each: Ctrl-C never waits long.
        deadline = time.monotonic() + 10
        for child in children:
            try:
                child.wait(timeout=max(deadline - time.monotonic(), 0.1))
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
        if embedded:
            stop_embedded(home)
