"""Fan-out: one post to 5 channels vs 5 single-channel posts, in deliveries per second.

Both sides deliver the same number of (post, channel) pairs to the same 5 sandbox
channels through one in-process worker; rounds alternate so drift hits both, and the
ratio is the median of the rounds' ratios. A post's
deliveries run in parallel under one claim and one job, so one post to 5 channels
should cost far less than 5 posts.

    python -m bench.fanout [--backend sqlite|postgresql|both] [--posts N] [--rounds R]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from typing import Any

from bench.stack import BACKENDS, confirmed, due_slots, enqueue_now, insert_posts, stack, versions
from bench.throughput import _work
from core.runtime.queue import post_queue

GOAL = 2.0
WIDTH = 5


def delivery_rate(channel_sets: list[list[int]]) -> float:
    """Deliveries confirmed per second for one post per entry of ``channel_sets``."""
    ids: list[int] = []
    for channels in {tuple(c) for c in channel_sets}:
        count = sum(1 for c in channel_sets if tuple(c) == channels)
        ids += insert_posts(list(channels), due_slots(count))
    enqueue_now(sorted(ids))
    seconds = _work(post_queue())
    deliveries = sum(len(c) for c in channel_sets)
    done = confirmed(ids)
    if done != deliveries:
        raise RuntimeError(f"only {done} of {deliveries} deliveries were confirmed")
    return deliveries / seconds


def sides(channels: list[int], posts: int) -> tuple[list[list[int]], list[list[int]]]:
    """A round of each side: ``posts`` posts to every channel, and as many deliveries as
    single-channel posts, spread over the same channels."""
    return [channels] * posts, [[channels[i % WIDTH]] for i in range(posts * WIDTH)]


def run(backend: str, posts: int, rounds: int) -> dict[str, Any]:
    with stack(backend, "fanout") as running:
        wide, single = sides(running.channels(WIDTH), posts)
        # Warm up with a whole round of each: the first wide round starts the delivery
        # threads and their database connections, and ran ~10 % below the later ones.
        delivery_rate(single)
        delivery_rate(wide)
        wide_rates: list[float] = []
        single_rates: list[float] = []
        for _ in range(rounds):
            single_rates.append(delivery_rate(single))
            wide_rates.append(delivery_rate(wide))
        result: dict[str, Any] = {
            "backend": backend,
            "deliveries_per_round": posts * WIDTH,
            "rounds": rounds,
            "fanout_deliveries_per_s": statistics.median(wide_rates),
            "single_deliveries_per_s": statistics.median(single_rates),
            "fanout_rounds": wide_rates,
            "single_rounds": single_rates,
            "versions": versions(backend),
        }
    result["ratio"] = statistics.median(w / s for w, s in zip(wide_rates, single_rates, strict=True))
    result["goal"] = f"≥ {GOAL:g}×"
    result["pass"] = result["ratio"] >= GOAL
    return result


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=[*BACKENDS, "both"], default="both")
    parser.add_argument("--posts", type=int, default=30, help="5-channel posts per round (×5 single ones)")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--json", help="also write the results to this file")
    args = parser.parse_args(argv)
    backends = BACKENDS if args.backend == "both" else (args.backend,)
    results = [run(b, args.posts, args.rounds) for b in backends]
    for r in results:
        print(
            f"{r['backend']}: {r['fanout_deliveries_per_s']:.0f} deliveries/s as 5-channel posts vs "
            f"{r['single_deliveries_per_s']:.0f} as single-channel posts",
            file=sys.stderr,
        )
    if args.json:
        with open(args.json, "w") as out:
            json.dump(results, out, indent=2, default=str)
    print(
        "fan-out ratio (deliveries/s, one post to 5 channels ÷ 5 single-channel posts, goal ≥ 2×): "
        + ", ".join(f"{r['backend']} {r['ratio']:.2f}× {'PASS' if r['pass'] else 'FAIL'}" for r in results)
    )


if __name__ == "__main__":
    main()
