"""The benchmark script keeps working (a smoke run on tiny sizes; it measures nothing here)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def test_bench_prints_a_row_per_analysis_and_length():
    command = [sys.executable, str(REPO / "bench" / "analyses.py"), "--lengths", "6", "--instances", "4",
               "--loop-instances", "2", "--threads", "1", "--analyses", "permutation", "erasure_multi"]
    output = subprocess.run(command, capture_output=True, text=True, check=True, timeout=300).stdout
    rows = [line.split() for line in output.splitlines() if line.startswith(("permutation", "erasure_multi"))]
    assert [(row[0], row[1]) for row in rows] == [("permutation", "6"), ("erasure_multi", "6")]
    assert all(float(row[2]) > 0 and float(row[3]) > 0 for row in rows)
