"""Benchmarks: ingest, history, API and memory measured as ratios against anchors of the same run.

`make bench` (python -m benchmarks.run) is the entry point; see BENCHMARKS.md for the method and results.
"""
