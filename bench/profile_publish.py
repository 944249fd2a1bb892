"""Where one publish's time goes, from a py-spy profile of the throughput benchmark.

py-spy samples every thread of the process; waiting threads are left out (no
``--idle``), so with one job in flight at a time the samples add up to the critical
path: the worker's thread, then the delivery thread, then the platform call.

    pip install py-spy   # into the venv, for the run only
    py-spy record --format raw --rate 200 --threads -o publish.txt -- \\
        .venv/bin/python -m bench.throughput --backend sqlite --posts 400 --rounds 1
    python -m bench.profile_publish publish.txt --rate 200 --publishes 420

``--publishes`` is the number of posts published in the profiled run (posts × rounds,
plus 20 of warm-up).
"""

from __future__ import annotations

import argparse
from collections import Counter

_COMMIT = ("Transaction.commit ", "Pipeline.commit ")

#: (label, a frame function that must be on the stack), first match wins; order matters.
CATEGORIES: list[tuple[str, str | tuple[str, ...]]] = [
    ("claim: key + sending + attempt rows", ("SQLite.prepare ", "PostgreSQL.prepare ")),
    ("claim: commit", _COMMIT),
    ("claim: the rest (compare-and-set + joined read, admission, plans)", "_claim_once "),
    ("result: commit", _COMMIT),
    ("result: the rest (fenced writes, publication row, the summary and the lease)", "part_published "),
    ("platform call (httpx, sandbox)", "call_adapter "),
    ("delivery: the rest (context, adapter lookup)", "_send_delivery "),
    ("heartbeat registration, waiting on futures", ("Heartbeat.", "Future.result ")),
    ("the job's own glue (clock, early check; SQLite: the slot read)", "publish_post "),
    ("re-arm after the job (core.runtime.arming.arm)", "arm "),
    ("rq: the worker's own per-job work", "BaseWorker.work "),
]


def summarize(path: str, markers: list[str]) -> tuple[Counter[str], int]:
    """Samples per category; stacks of the main thread must contain every marker."""
    found: Counter[str] = Counter()
    total = 0
    with open(path) as raw:
        for line in raw:
            line = line.rstrip()
            if not line:
                continue
            stack, count = line.rsplit(" ", 1)
            frames = stack.split(";")[1:]
            if not frames:
                continue
            main = "runpy" in frames[0]
            if main and not all(any(m in f for f in frames) for m in markers):
                continue
            if not main and not any(f.startswith(("_send_delivery", "call_adapter", "Heartbeat")) for f in frames):
                continue  # idle pool threads, redis pubsub, ...
            if any(f.startswith("Event.wait ") for f in frames):
                continue  # the heartbeat thread between beats (py-spy counts a timed wait as busy)
            n = int(count)
            total += n
            # The first listed function on the stack decides: a commit under _claim_once is the claim's.
            for label, function in CATEGORIES:
                if any(f.startswith(function) for f in frames):
                    if label == "claim: commit" and not any(f.startswith("_claim_once ") for f in frames):
                        continue
                    if label == "result: commit" and not any(f.startswith("part_published ") for f in frames):
                        continue
                    found[label] += n
                    break
            else:
                found["other"] += n
    return found, total


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("raw", help="py-spy --format raw output")
    parser.add_argument("--rate", type=float, default=200.0, help="py-spy's sampling rate, Hz")
    parser.add_argument("--publishes", type=int, required=True)
    parser.add_argument(
        "--marker",
        action="append",
        help="a frame every kept main-thread stack has (default: publish_rate and BaseWorker.work)",
    )
    args = parser.parse_args(argv)
    found, total = summarize(args.raw, args.marker or ["publish_rate (", "BaseWorker.work ("])
    per = 1000 / args.rate / args.publishes
    print(f"{total * per:.2f} ms per publish sampled ({total} samples, {args.publishes} publishes)")
    for label, n in found.most_common():
        print(f"{n * per:6.2f} ms  {100 * n / total:5.1f}%  {label}")


if __name__ == "__main__":
    main()
