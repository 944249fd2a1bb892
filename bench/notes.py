"""``docs/performance.md``: the figures of one ``make bench`` run, and what they mean.

The tables are generated from the run; the profile, the changes made in core and what
bounds each figure are analysis written by hand in ``bench/analysis.md`` and appended –
keep it true when a run says otherwise.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

ANALYSIS = Path(__file__).with_name("analysis.md")


#: How a backend's statements per publish are counted.
_BATCHED = {
    "sqlite": "BEGINs included",
    "postgresql": "BEGIN and COMMIT are sent with them: 3 round trips, the claim's two and the result's one",
}


def _f(x: float, digits: int = 2) -> str:
    return f"{x:.{digits}f}"


def _verdict(ok: bool) -> str:
    return "**pass**" if ok else "**FAIL**"


def _rows(runs: list[dict[str, Any]]) -> list[str]:
    rows = []
    for run in runs:
        name = run["name"]
        if not run["ok"]:
            rows.append(f"| {name} | – | did not finish (see below) | – | – | – | **FAIL** |")
            continue
        for r in run["results"]:
            b = r["backend"]
            if name == "throughput":
                rows.append(
                    f"| throughput | {b} | {_f(r['publishes_per_s'], 0)} publishes/s | "
                    f"{_f(r['noop_jobs_per_s'], 0)} rq no-op jobs/s | {_f(r['ratio'])} | ≥ 0.5 | "
                    f"{_verdict(r['pass'])} |"
                )
            elif name == "fanout":
                rows.append(
                    f"| fan-out | {b} | {_f(r['fanout_deliveries_per_s'], 0)} deliveries/s (1 post × 5 channels) | "
                    f"{_f(r['single_deliveries_per_s'], 0)} deliveries/s (5 single-channel posts) | "
                    f"{_f(r['ratio'])}× | ≥ 2× | {_verdict(r['pass'])} |"
                )
            elif name == "lateness":
                h = r["herald"]["slot_to_confirmed"]
                c = r["herald"]["slot_to_claimed"]
                base, ratio = "– (baseline run on SQLite only)", "–"
                if "polling" in r:
                    p = r["polling"]["slot_to_confirmed"]
                    base = f"1-min polling: p50 {_f(p['p50'], 1)} s, p99 {_f(p['p99'], 1)} s"
                    ratio = f"p50 {_f(r['ratio_p50'], 3)}, p99 {_f(r['ratio_p99'], 3)}"
                rows.append(
                    f"| lateness | {b} | slot→confirmed p50 {_f(h['p50'])} s, p95 {_f(h['p95'])} s, "
                    f"p99 {_f(h['p99'])} s (slot→claimed p50 {_f(c['p50'])} s, p99 {_f(c['p99'])} s) | "
                    f"{base} | {ratio} | p50 ≤ 1 s, p99 ≤ 2 s | {_verdict(r['pass'])} |"
                )
                if "herald_light" in r:
                    light = r["herald_light"]
                    lh, lc = light["slot_to_confirmed"], light["slot_to_claimed"]
                    rows.append(
                        f"| lateness at {light['rate_per_s']} posts/s (informative) | {b} | slot→confirmed p50 "
                        f"{_f(lh['p50'])} s, p95 {_f(lh['p95'])} s, p99 {_f(lh['p99'])} s (slot→claimed p50 "
                        f"{_f(lc['p50'])} s, p99 {_f(lc['p99'])} s) | – | – | p50 ≤ 1 s, p99 ≤ 2 s | "
                        f"{_verdict(lh['p50'] <= 1 and lh['p99'] <= 2)} |"
                    )
            elif name == "reconciler_scale":
                rows.append(
                    f"| reconciler scale | {b} | tick {_f(r['large_tick_ms'], 1)} ms on {r['large_posts']:,} posts | "
                    f"tick {_f(r['small_tick_ms'], 1)} ms on {r['small_posts']:,} posts | {_f(r['ratio'])} | ≤ 2 | "
                    f"{_verdict(r['pass'])} |"
                )
            elif name == "post_list":
                w = r["week"]
                rows.append(
                    f"| post list | {b} | this week's page {_f(w['large_ms'], 1)} ms on {r['large_posts']:,} posts "
                    f"({w['large_rows']} rows) | {_f(w['small_ms'], 1)} ms on {r['small_posts']:,} posts "
                    f"({w['small_rows']} rows) | {_f(r['ratio'])} | ≤ 2 | {_verdict(r['pass'])} |"
                )
            elif name == "calendar":
                rows.append(
                    f"| calendar month | {b} | {_f(r['large_ms'], 1)} ms on {r['large_posts']:,} posts "
                    f"({r['large_rows']} cards) | {_f(r['small_ms'], 1)} ms on {r['small_posts']:,} posts "
                    f"({r['small_rows']} cards) | {_f(r['ratio'])} | ≤ 2 | {_verdict(r['pass'])} |"
                )
            elif name == "horizon":
                mb = 1024 * 1024
                rows.append(
                    f"| arming horizon: Redis memory | {b} | {_f(r['redis_used_bytes']['large'] / mb)} MB with "
                    f"{r['large_posts']:,} posts over {r['days']} days ({r['jobs_after_first_pass']['large']} jobs) | "
                    f"{_f(r['redis_used_bytes']['small'] / mb)} MB with {r['small_posts']:,} "
                    f"({r['jobs_after_first_pass']['small']} jobs) | {_f(r['memory_ratio'])} | ≤ 1.5 | "
                    f"{_verdict(r['memory_ratio'] <= 1.5)} |"
                )
                rows.append(
                    f"| arming horizon: reconciler tick | {b} | {_f(r['large_tick_ms'], 1)} ms on "
                    f"{r['large_posts']:,} posts | {_f(r['small_tick_ms'], 1)} ms on {r['small_posts']:,} posts | "
                    f"{_f(r['tick_ratio'])} | ≤ 2 | {_verdict(r['tick_ratio'] <= 2)} |"
                )
            elif name == "api":
                rows.append(
                    f"| API `POST /posts` (informative) | {b} | {_f(r['posts_per_s'], 0)} posts/s, "
                    f"{r['clients']} clients | {_f(r['bare_per_s'], 0)} requests/s on a bare FastAPI endpoint | "
                    f"{_f(r['ratio'])} | – | – |"
                )
            elif name == "memory":
                rows.append(
                    f"| memory | {b} | worker peak RSS {_f(r['peak_mb'], 0)} MB after {r['publishes']:,} publishes | "
                    f"{_f(r['peak_after_warm_mb'], 0)} MB after the first {r['warm_publishes']} | {_f(r['ratio'])} | "
                    f"≤ 120 MB | {_verdict(r['pass'])} |"
                )
    return rows


def _details(runs: list[dict[str, Any]]) -> list[str]:
    out = []
    for run in runs:
        out.append(f"### {run['name']}")
        out.append("")
        out.append(
            f"Last line: `{run['line']}`. Took {run['seconds']:.0f} s; load average "
            f"{run['load_before']} before, {run['load_after']} after."
        )
        out.append("")
        if run["error"]:
            out += ["```text", run["error"].strip(), "```", ""]
        for r in run["results"]:
            if run["name"] == "throughput":
                out.append(
                    f"* {r['backend']}: {r['rounds']} alternating rounds of {r['posts_per_round']} posts and "
                    f"{2 * r['posts_per_round']} no-op jobs; publishes/s per round "
                    f"{', '.join(_f(x, 0) for x in r['publish_rounds'])}, no-op jobs/s "
                    f"{', '.join(_f(x, 0) for x in r['noop_rounds'])} (the ratio is the median of the rounds' "
                    f"ratios; the rates in the table are the medians of the rounds). One publish costs "
                    f"**{_f(r['commits_per_publish'])} commits**, {_f(r['statements_per_publish'], 1)} SQL statements "
                    f"({_BATCHED.get(r['backend'], '')})"
                    f" and {_f(r['rollbacks_per_publish'])} rollbacks (read-only sessions)."
                )
            elif run["name"] == "fanout":
                out.append(
                    f"* {r['backend']}: {r['deliveries_per_round']} deliveries per side per round; "
                    f"5-channel rounds {', '.join(_f(x, 0) for x in r['fanout_rounds'])} deliveries/s, "
                    f"single-channel rounds {', '.join(_f(x, 0) for x in r['single_rounds'])}."
                )
            elif run["name"] == "lateness":
                h = r["herald"]
                out.append(
                    f"* {r['backend']}: {h['confirmed']}/{h['posts']} confirmed; armed in {_f(h['armed_in_s'], 1)} s; "
                    f"drained at {_f(h['drain_rate_per_s'], 0)} posts/s against {r['rate_per_s']} arriving/s; "
                    f"claims before the slot: {h['claimed_before_slot']}; slot→confirmed p50 by second of the "
                    f"burst: {', '.join(str(v) for v in h['p50_by_second_of_burst'].values())} s."
                )
                if "herald_light" in r:
                    light = r["herald_light"]
                    out.append(
                        f"* {r['backend']} at {light['rate_per_s']} posts/s ({light['posts']} posts in the same 10 s): "
                        f"{light['confirmed']}/{light['posts']} confirmed, drained at "
                        f"{_f(light['drain_rate_per_s'], 0)} posts/s; slot→confirmed p50 by second: "
                        f"{', '.join(str(v) for v in light['p50_by_second_of_burst'].values())} s."
                    )
                if "polling" in r:
                    p = r["polling"]
                    a = p["phase_averaged_slot_to_confirmed"]
                    out.append(
                        f"* {r['backend']} polling baseline ({p['period_s']:g} s period, burst in the middle of the "
                        f"minute): slot→confirmed p50 {_f(p['slot_to_confirmed']['p50'], 1)} s, p95 "
                        f"{_f(p['slot_to_confirmed']['p95'], 1)} s, p99 {_f(p['slot_to_confirmed']['p99'], 1)} s; "
                        f"averaged over every phase of the burst in the minute (computed from this run's processing "
                        f"delays): p50 {_f(a['p50'], 1)} s, p95 {_f(a['p95'], 1)} s, p99 {_f(a['p99'], 1)} s."
                    )
            elif run["name"] == "reconciler_scale":
                out.append(
                    f"* {r['backend']}: median of {r['ticks']} alternating ticks; fastest "
                    f"{_f(r['large_tick_ms_min'], 1)} ms (large) and {_f(r['small_tick_ms_min'], 1)} ms (small); "
                    f"bulk load of the large table {r['load_seconds']['large']:.0f} s."
                )
            elif run["name"] == "post_list":
                w = r["week"]
                others = "; ".join(
                    f"{what} {_f(i['large_ms'], 1)} ms ({i['large_rows']} rows) vs {_f(i['small_ms'], 1)} ms "
                    f"({i['small_rows']} rows), {_f(i['ratio'])}"
                    for what, i in r["informative"].items()
                )
                out.append(
                    f"* {r['backend']}: median of {r['runs']} alternating pages; fastest {_f(w['large_ms_min'], 1)} ms "
                    f"(large) and {_f(w['small_ms_min'], 1)} ms (small); bulk load of the large table "
                    f"{r['load_seconds']['large']:.0f} s. For information, in the same week: {others}."
                )
            elif run["name"] == "calendar":
                out.append(
                    f"* {r['backend']}: median of {r['runs']} alternating months; bulk load of the large table "
                    f"{r['load_seconds']['large']:.0f} s."
                )
            elif run["name"] == "horizon":
                mb = 1024 * 1024
                out.append(
                    f"* {r['backend']}: an empty server holds {_f(r['redis_empty_bytes']['large'] / mb)} MB; one job "
                    f"costs {r['bytes_per_job']:.0f} bytes, so without the horizon the {r['large_posts']:,} posts "
                    f"would hold {r['large_without_horizon_bytes'] / mb:.0f} MB. Median of {r['ticks']} alternating "
                    f"ticks, each a minute on: {_f(r['armed_per_tick']['large'], 1)} posts armed a tick (large), "
                    f"{_f(r['armed_per_tick']['small'], 2)} (small)."
                )
            elif run["name"] == "api":
                out.append(
                    f"* {r['backend']}: {r['rounds']} alternating rounds of {r['requests']} requests; posts/s per "
                    f"round {', '.join(_f(x, 0) for x in r['posts_rounds'])}, bare requests/s "
                    f"{', '.join(_f(x, 0) for x in r['bare_rounds'])}."
                )
            elif run["name"] == "memory":
                out.append(
                    f"* {r['backend']}: {r['publishes']:,} publishes in {r['seconds']:.0f} s; RSS at the end "
                    f"{_f(r['rss_at_end_mb'], 0)} MB; peak by thousands of publishes (MB): "
                    f"{', '.join(f'{k}: {v}' for k, v in r['peak_mb_by_thousand'].items())}."
                )
        out.append("")
    return out


def _versions(runs: list[dict[str, Any]]) -> list[str]:
    seen: dict[str, str] = {}
    for run in runs:
        for r in run["results"]:
            for key, value in r.get("versions", {}).items():
                if key == "nproc":
                    continue
                if key == "Redis":
                    key = f"Redis ({r['backend']} runs)"
                seen.setdefault(key, value)
    return [f"* {k}: {v}" for k, v in seen.items()]


def render(runs: list[dict[str, Any]], machine: dict[str, str]) -> str:
    lines = [
        "# herald: performance",
        "",
        "Generated by `make bench` (`bench/run_all.py`). Machines are shared and noisy, so every",
        "figure is a ratio against a baseline measured in the same run; the absolute numbers",
        "only say how busy this machine was.",
        "",
        f"Run on {machine['date']}; the whole run took {machine['total_minutes']} min."
        + (" **Quick mode: small sizes, not for the record.**" if machine["quick"] == "True" else ""),
        "",
        "## Figures",
        "",
        "| benchmark | backend | figure | baseline (same run) | ratio | goal | result |",
        "|---|---|---|---|---|---|---|",
        *_rows(runs),
        "",
        "## Machine",
        "",
        f"* nproc: {machine['nproc']} ({machine['cpu']}), Linux {machine['kernel']}",
        *_versions(runs),
        "",
        "## Details",
        "",
        *_details(runs),
        ANALYSIS.read_text().strip(),
        "",
    ]
    return "\n".join(lines)
