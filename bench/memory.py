"""Memory: peak RSS of a worker process after 10,000 publishes.

One ``herald worker`` process (no scheduler) works through 10,000 due single-channel
posts; its ``VmHWM`` (peak resident set) is read from ``/proc/PID/status`` while it
runs. Baseline: the same process's peak after its first 100 publishes (warm: imports,
pools, the adapter's client), so the ratio shows growth – a leak – rather than the
absolute size, which depends on the Python build and libraries.

    python -m bench.memory [--backend sqlite|postgresql] [--publishes N]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from bench.stack import BACKENDS, confirmed, due_slots, enqueue_now, insert_posts, stack, versions

GOAL_MB = 120.0
WARM = 100


def _status_kb(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"no {field} in /proc/{pid}/status")


def run(backend: str, publishes: int, timeout: float) -> dict[str, Any]:
    with stack(backend, "memory") as running:
        (channel_id,) = running.channels(1)
        ids = insert_posts([channel_id], due_slots(publishes))
        enqueue_now(ids)
        worker = running.spawn("worker", "worker", "--no-scheduler")
        started = time.monotonic()
        warm_kb = done = 0
        samples: list[tuple[float, int, int]] = []
        while time.monotonic() - started < timeout:
            if worker.poll() is not None:
                raise RuntimeError(f"the worker exited with {worker.returncode}; see {running.home}/worker.log")
            done = confirmed()
            hwm = _status_kb(worker.pid, "VmHWM")
            samples.append((time.monotonic() - started, done, hwm))
            if not warm_kb and done >= WARM:
                warm_kb = hwm
            if done >= publishes:
                break
            time.sleep(0.5)
        peak_kb = _status_kb(worker.pid, "VmHWM")
        rss_kb = _status_kb(worker.pid, "VmRSS")
        seconds = time.monotonic() - started
        running.stop(worker)
        if done < publishes:
            raise RuntimeError(f"only {done} of {publishes} publishes within {timeout:g}s")
        result: dict[str, Any] = {
            "backend": backend,
            "publishes": done,
            "seconds": seconds,
            "peak_mb": peak_kb / 1024,
            "rss_at_end_mb": rss_kb / 1024,
            "peak_after_warm_mb": warm_kb / 1024,
            "warm_publishes": WARM,
            # Peak by thousands of publishes, to show the curve.
            "peak_mb_by_thousand": {
                d // 1000 * 1000: round(h / 1024, 1) for _, d, h in samples if d // 1000 * 1000 > 0
            },
            "versions": versions(backend),
        }
    result["ratio"] = result["peak_mb"] / result["peak_after_warm_mb"]
    result["goal"] = f"≤ {GOAL_MB:g} MB"
    result["pass"] = result["peak_mb"] <= GOAL_MB
    return result


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=BACKENDS, default="sqlite")
    parser.add_argument("--publishes", type=int, default=10_000)
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument("--json", help="also write the results to this file")
    args = parser.parse_args(argv)
    r = run(args.backend, args.publishes, args.timeout)
    print(
        f"{r['backend']}: {r['publishes']} publishes in {r['seconds']:.0f} s; peak by thousand "
        f"{r['peak_mb_by_thousand']}",
        file=sys.stderr,
    )
    if args.json:
        with open(args.json, "w") as out:
            json.dump([r], out, indent=2, default=str)
    print(
        f"memory: worker peak RSS {r['peak_mb']:.0f} MB after {r['publishes']:,} publishes (goal ≤ {GOAL_MB:g} MB) "
        f"{'PASS' if r['pass'] else 'FAIL'}; ratio to its peak after the first {WARM}: {r['ratio']:.2f}"
    )


if __name__ == "__main__":
    main()
