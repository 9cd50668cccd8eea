"""The tie rule (`gridlab.analyses.ranking`) by hand: values within the tolerance tie, values outside do not,
ties chain, the TVD floor, padding and other instances never matter, non-finite values have no rank, and the
strict order breaks ties by position."""

from __future__ import annotations

import math

import torch

from gridlab.analyses.ranking import (
    PROBABILITY_RTOL,
    RTOL,
    descending_order,
    order_of_ranks,
    tie_ranks,
    tvd_floor,
)

NAN = math.nan


def ranks_of(values: list[float], floor: float = 0.0) -> list[float]:
    """One instance, every slot an item."""
    row = torch.tensor([values], dtype=torch.float64)  # (1, T)
    return tie_ranks(row, torch.ones_like(row, dtype=torch.bool), floor)[0].tolist()


def same(actual: list[float], expected: list[float]) -> bool:
    """Equal, NaN equal to NaN."""
    return len(actual) == len(expected) and all(
        (math.isnan(a) and math.isnan(b)) or a == b for a, b in zip(actual, expected)
    )


def test_values_within_the_tolerance_tie_and_values_outside_do_not():
    tol = RTOL * 2.0  # the largest |value| is 2
    assert ranks_of([1.0, 1.0 + 0.9 * tol, 2.0]) == [0, 0, 1]
    assert ranks_of([1.0, 1.0 + 1.1 * tol, 2.0]) == [0, 1, 2]
    assert ranks_of([1.0 + 0.9 * tol, 2.0, 1.0]) == [0, 1, 0]  # in any order
    assert ranks_of([-1.0, -1.0 - 0.9 * tol, -2.0]) == [1, 1, 0]  # the scale is the largest |value|
    assert ranks_of([0.5, 0.1, 0.3]) == [2, 0, 1]  # dense ranks, ascending


def test_the_tolerance_is_relative_to_each_instance():
    # the same gap ties in an instance whose largest value is 1 and not in one whose largest is 1e-3
    values = torch.tensor([[0.5, 0.5 + 5e-6, 1.0], [0.5e-3, 0.5e-3 + 5e-6, 1e-3]])
    assert tie_ranks(values, torch.ones(2, 3, dtype=torch.bool)).tolist() == [[0, 0, 1], [0, 1, 2]]


def test_ties_chain_through_neighbours():
    tol = RTOL * 1.0
    chain = [0.5, 0.5 + 0.8 * tol, 0.5 + 1.6 * tol, 1.0]  # the ends are 1.6 tol apart, linked by the middle
    assert ranks_of(chain) == [0, 0, 0, 1]
    assert ranks_of([chain[0], chain[2], chain[3]]) == [0, 1, 2]  # without the middle they do not tie


def test_exact_ties_zeros_and_signed_zeros():
    assert ranks_of([0.0, -0.0, 0.0]) == [0, 0, 0]
    assert ranks_of([0.0, 1e-30, 2e-30]) == [0, 1, 2]  # a tiny vector has a tiny tolerance: no absolute floor
    assert ranks_of([0.0, 1e-36, 1.0]) == [0, 0, 1]  # within 1e-5 of the largest value
    assert ranks_of([3e-11, 1e-11, 2e-11]) == [2, 0, 1]  # a confident prediction's gradients stay ordered


def test_the_floor_widens_the_tolerance():
    values = [1e-4, 1e-4 + 5e-8, 2e-4]  # 5e-8 apart: 2.5e-4 of the largest, beyond RTOL
    assert ranks_of(values) == [0, 1, 2]
    assert ranks_of(values, floor=1e-7) == [0, 0, 1]
    assert ranks_of(values, floor=1e-8) == [0, 1, 2]
    floors = torch.tensor([1e-7, 0.0])  # one floor per instance
    both = tie_ranks(torch.tensor([values, values], dtype=torch.float64), torch.ones(2, 3, dtype=torch.bool), floors)
    assert both.tolist() == [[0, 0, 1], [0, 1, 2]]


def test_tvd_floor_is_a_share_of_the_probability_beside_the_prediction():
    probs = torch.tensor([[0.7, 0.2, 0.1], [1.0, 0.0, 0.0], [0.25, 0.5, 0.25]])
    floor = tvd_floor(probs, torch.tensor([0, 0, 1]))
    torch.testing.assert_close(floor, PROBABILITY_RTOL * torch.tensor([0.3, 0.0, 0.5], dtype=torch.float64))
    confident = torch.tensor([[1.0, 1e-9]])  # 1 - y rounds to 0 in float32; the other classes keep it
    assert float(tvd_floor(confident, torch.tensor([0]))) == PROBABILITY_RTOL * float(torch.tensor(1e-9))


def test_padding_never_matters():
    values = torch.tensor([[0.3, 0.1, 0.3 + 1e-9, 0.2]])
    mask = torch.ones(1, 4, dtype=torch.bool)
    alone = tie_ranks(values, mask)  # [[2, 0, 2, 1]]
    assert alone.tolist() == [[2, 0, 2, 1]]
    # the same instance after a masked slot, before padding of any value, beside another instance
    padded = torch.tensor([[1e9, 0.3, 0.1, 0.3 + 1e-9, 0.2, -1e9, NAN], [5.0, 0.3, 0.3, 9.0, 9.0, 9.0, 9.0]])
    padded_mask = torch.tensor([[False, True, True, True, True, False, False], [True] * 2 + [False] * 5])
    ranks = tie_ranks(padded, padded_mask)
    assert same(ranks[0].tolist(), [NAN, 2, 0, 2, 1, NAN, NAN])
    assert same(ranks[1].tolist(), [1, 0, NAN, NAN, NAN, NAN, NAN])
    assert descending_order(padded, padded_mask)[0, :4].tolist() == [1, 3, 4, 2]  # items first, then padding
    assert set(descending_order(padded, padded_mask)[0, 4:].tolist()) == {0, 5, 6}


def test_non_finite_values_have_no_rank_and_do_not_move_the_others():
    ranks = ranks_of([0.2, NAN, 0.1, math.inf, 0.2])
    assert same(ranks, [1, NAN, 0, NAN, 1])
    # in a strict order they follow every finite item, before padding
    values = torch.tensor([[0.2, NAN, 0.1, math.inf, 0.2, 0.0]])
    mask = torch.tensor([[True, True, True, True, True, False]])
    assert descending_order(values, mask).tolist() == [[0, 4, 2, 1, 3, 5]]


def test_descending_order_breaks_ties_by_position():
    values = torch.tensor([[0.5, 0.9, 0.5 + 1e-9, 0.9, 0.1], [0.2, 0.2, 0.2, 0.2, 0.2]])
    mask = torch.tensor([[True] * 5, [False, True, True, True, False]])
    assert descending_order(values, mask).tolist() == [[1, 3, 0, 2, 4], [1, 2, 3, 0, 4]]
    ranks = tie_ranks(values, mask)
    assert torch.equal(order_of_ranks(ranks, mask), descending_order(values, mask))


def test_batched_equals_one_row_at_a_time():
    generator = torch.Generator().manual_seed(0)
    values = torch.randint(0, 5, (16, 9), generator=generator).double() * 0.1
    values = values + torch.randn(16, 9, generator=generator, dtype=torch.float64) * 1e-8  # float noise on ties
    mask = torch.rand(16, 9, generator=generator) < 0.8
    floors = torch.rand(16, generator=generator, dtype=torch.float64) * 1e-6
    batched = tie_ranks(values, mask, floors)
    for b in range(16):
        row = tie_ranks(values[b : b + 1], mask[b : b + 1], floors[b])[0]
        assert same(batched[b].tolist(), row.tolist()), b
        present = values[b][mask[b]]
        if len(present):  # the noise is far below the tolerance: values tie exactly when they are equal at 0.1
            expected = torch.unique(torch.round(present * 10), return_inverse=True)[1].double()
            assert batched[b][mask[b]].tolist() == expected.tolist(), b


def test_float32_values_are_ranked_in_float64():
    # two float32 values one ulp apart at 1.0 are 1.2e-7 apart: they tie; far apart ones keep their order
    one = torch.tensor(1.0, dtype=torch.float32)
    values = torch.stack([one, torch.nextafter(one, torch.tensor(2.0)), one / 2])[None]
    ranks = tie_ranks(values, torch.ones(1, 3, dtype=torch.bool))
    assert ranks.dtype == torch.float64 and ranks.tolist() == [[1, 1, 0]]
