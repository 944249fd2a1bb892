"""``POST /api/v1/posts`` under 20 concurrent clients, against a bare FastAPI endpoint on
the same uvicorn server in the same run.

One uvicorn process serves herald's app with one more route, ``POST /bench/bare``, which
reads the same JSON body and answers a constant: what FastAPI, uvicorn and the loopback
cost without herald. The clients (one asyncio loop in this process, 20 requests in
flight) create posts 50 minutes ahead (within the arming horizon) on one sandbox channel
with an admin key, so every create is checked, written and armed (a scheduled job in
Redis). Rounds alternate between the two routes so drift on a shared machine hits both;
the ratio is of the medians.

    python -m bench.api [--backend sqlite|postgresql] [--requests N] [--rounds R] [--clients C]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import time
from typing import Any

import httpx
from fastapi import FastAPI

from bench.stack import ROOT, Stack, _free_port, _wait_http, stack, versions
from core.api.app import create_app
from core.domain.roles import Role
from core.services.channels import add_channel
from core.services.keys import create_key


def bench_app() -> FastAPI:
    """herald's app with the bare endpoint beside it (``uvicorn --factory``)."""
    app = create_app()

    @app.post("/bench/bare", include_in_schema=False)
    def bare(body: dict[str, Any]) -> dict[str, bool]:
        return {"ok": True}

    return app


async def _rate(url: str, headers: dict[str, str], requests: int, clients: int, path: str) -> float:
    """Requests per second for ``requests`` POSTs, ``clients`` at a time."""
    counter = iter(range(requests))
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(base_url=url, headers=headers, limits=limits, timeout=60) as client:

        async def worker() -> None:
            for i in counter:
                body = {"channels": ["bench-api"], "parts": [f"bench post {time.monotonic_ns()} {i}"], "delay": "50m"}
                answer = await client.post(path, json=body)
                if answer.status_code >= 300:
                    raise SystemExit(f"{path}: {answer.status_code} {answer.text}")

        start = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(clients)))
        return requests / (time.perf_counter() - start)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="sqlite", choices=("sqlite", "postgresql"))
    parser.add_argument("--requests", type=int, default=1000, help="requests per round and route")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--json", help="also write the results to this file")
    args = parser.parse_args(argv)
    with stack(args.backend, "api") as running:
        add_channel("bench-api", "sandbox-native", {"base_url": running.sandbox_url, "token": "t-ok"})
        key = create_key("default", Role.ADMIN).secret
        port = _free_port()
        url = f"http://127.0.0.1:{port}"
        server = _uvicorn(running, port)
        _wait_http(f"{url}/openapi.json", server)
        headers = {"Authorization": f"Bearer {key}"}
        rates: dict[str, list[float]] = {"/bench/bare": [], "/api/v1/posts": []}
        for _ in range(args.rounds):
            for path, seen in rates.items():
                seen.append(asyncio.run(_rate(url, headers, args.requests, args.clients, path)))
        bare, posts = (statistics.median(rates[p]) for p in ("/bench/bare", "/api/v1/posts"))
        print(f"backend {args.backend}, {args.clients} clients, {args.rounds} rounds of {args.requests} requests")
        print(f"bare FastAPI endpoint: {bare:,.0f} requests/s (median)")
        print(f"POST /api/v1/posts:    {posts:,.0f} posts/s (median)")
        print(f"ratio: POST /posts runs at {posts / bare:.2f} of the bare endpoint's rate ({bare / posts:.1f}x slower)")
        result = {
            "backend": args.backend,
            "clients": args.clients,
            "rounds": args.rounds,
            "requests": args.requests,
            "bare_per_s": bare,
            "posts_per_s": posts,
            "bare_rounds": rates["/bench/bare"],
            "posts_rounds": rates["/api/v1/posts"],
            "ratio": posts / bare,
            "versions": versions(args.backend),
        }
    if args.json:
        with open(args.json, "w") as out:
            json.dump([result], out, indent=2, default=str)
    return 0


def _uvicorn(running: Stack, port: int) -> subprocess.Popen[bytes]:
    """The server, one uvicorn process (as `herald api` runs it); stopped with the stack."""
    running.home.mkdir(parents=True, exist_ok=True)
    with (running.home / "api.log").open("wb") as log:
        serve = ("uvicorn", "bench.api:bench_app", "--factory", "--port", str(port), "--log-level", "warning")
        proc = subprocess.Popen(
            [sys.executable, "-m", *serve],
            cwd=ROOT,
            env=running.env(),
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    running.procs.append(proc)
    return proc


if __name__ == "__main__":
    sys.exit(main())
