"""Run every benchmark and write ``docs/performance.md`` (``make bench``).

Each benchmark runs in its own process (``python -m bench.NAME --json FILE``), so one
cannot inherit another's pools, imports or memory; its last line (the ratio) is echoed.

    python -m bench.run_all [--quick] [--only NAME ...] [--out docs/performance.md]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench import notes

ROOT = Path(__file__).resolve().parents[1]

#: name → (arguments, arguments with --quick)
BENCHMARKS: dict[str, tuple[list[str], list[str]]] = {
    "throughput": ([], ["--posts", "100", "--rounds", "1"]),
    "fanout": ([], ["--posts", "20", "--rounds", "1"]),
    "lateness": ([], ["--backend", "sqlite", "--baseline-backend", "none"]),
    "reconciler_scale": ([], ["--large", "100000", "--ticks", "5"]),
    "post_list": ([], ["--large", "100000", "--runs", "5"]),
    "calendar": ([], ["--large", "100000", "--runs", "5"]),
    "memory": ([], ["--publishes", "1000"]),
    "horizon": ([], ["--large", "100000", "--ticks", "5"]),
    "api": ([], ["--requests", "200", "--rounds", "1"]),
}


def _load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def _cpu() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def run_one(name: str, args: list[str], tmp: Path) -> dict[str, Any]:
    out = tmp / f"{name}.json"
    started = time.monotonic()
    load_before = _load()
    proc = subprocess.run(
        [sys.executable, "-m", f"bench.{name}", *args, "--json", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    seconds = time.monotonic() - started
    sys.stderr.write(proc.stderr[-4000:] if proc.returncode else "")
    lines = proc.stdout.strip().splitlines()
    last = lines[-1] if lines else f"{name}: no output"
    print(last if proc.returncode == 0 else f"{name}: FAILED (exit {proc.returncode})", flush=True)
    return {
        "name": name,
        "ok": proc.returncode == 0,
        "line": last,
        "seconds": seconds,
        "load_before": load_before,
        "load_after": _load(),
        "results": json.loads(out.read_text()) if out.exists() else [],
        "error": proc.stderr[-2000:] if proc.returncode else "",
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, to try the harness (not for the record)")
    parser.add_argument("--only", nargs="*", choices=list(BENCHMARKS), help="run only these")
    parser.add_argument("--out", default=str(ROOT / "docs" / "performance.md"))
    args = parser.parse_args(argv)
    names = args.only or list(BENCHMARKS)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="herald-bench-") as tmp:
        runs = [run_one(n, BENCHMARKS[n][1] if args.quick else BENCHMARKS[n][0], Path(tmp)) for n in names]
    machine = {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "nproc": str(os.cpu_count()),
        "cpu": _cpu(),
        "kernel": platform.release(),
        "total_minutes": f"{(time.monotonic() - started) / 60:.1f}",
        "quick": str(args.quick),
    }
    Path(args.out).write_text(notes.render(runs, machine))
    print(f"wrote {args.out} in {machine['total_minutes']} min", file=sys.stderr)
    if not all(r["ok"] for r in runs):
        raise SystemExit(1)


if __name__ == "__main__":
    main()
