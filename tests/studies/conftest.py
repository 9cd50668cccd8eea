"""The report tests' fixtures, for the study's tests: a stand-in for ReportInputs over hand-made rows, a real
grid on disk with hand-made rows (`synthetic_grid`), and no shipped ablations unless a test passes its own."""

from __future__ import annotations

from tests.report.conftest import fake_inputs, no_shipped_ablations, synthetic_grid

__all__ = ["fake_inputs", "no_shipped_ablations", "synthetic_grid"]
