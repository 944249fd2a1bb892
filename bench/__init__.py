"""Benchmarks that print ratios (§1): each figure is measured against a baseline taken in
the same run on the same machine, because machines are shared and noisy.

Run one with ``python -m bench.NAME``; ``make bench`` runs them all (``bench/run_all.py``)
and writes ``docs/performance.md``. Each benchmark prints its ratio as its last line.
"""
