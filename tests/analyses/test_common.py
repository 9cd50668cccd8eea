"""The distances of docs/analyses.md#distances against hand-computed values."""

from __future__ import annotations

import math

import pytest
import torch

from gridlab.analyses.common import jsd, tvd


def test_distances_match_hand_values():
    p, q = torch.tensor([0.1, 0.9]), torch.tensor([1.0, 0.0])
    m = (p + q) / 2
    expected = 0.5 * (0.1 * math.log(0.1 / m[0]) + 0.9 * math.log(0.9 / m[1])) + 0.5 * math.log(1.0 / m[0])
    assert jsd(p, q).item() == pytest.approx(expected, abs=1e-6)
    assert jsd(torch.tensor([1.0, 0.0]), torch.tensor([0.0, 1.0])).item() == pytest.approx(math.log(2), abs=1e-6)
    assert tvd(p, q).item() == pytest.approx(0.9)
