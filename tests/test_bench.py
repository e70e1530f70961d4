"""The benchmarks run and their results are checked (never their timings)."""

from __future__ import annotations

from server import bench_synthetic


def test_paper_synthetic_results_agree_with_both_oracles() -> None:
    rows = bench_synthetic.run(n=25, p=0.12, seed=1)
    assert [r.query for r in rows] == ["path-3", "star-3"]
    assert all(r.equal for r in rows)
    assert all(r.view_rows > 0 for r in rows)
