# SPDX-License-Identifier: Apache-2.0
"""examples/llm/mxfp6.py, the MXFP6 rounding llama_reference.py applies to MatMul weights, against
values worked out by hand from the OCP MX v1.0 rule: per 32 elements along K, the scale
2^(floor(log2(amax)) - emax), each element the nearest FP6 value of value / scale (ties to the
even code, saturating), the scale's exponent clamped to [-127, 127], zero blocks zero, a short
last block padded with zeros."""
import os
import pathlib
import sys

import numpy
import pytest

SOURCE = pathlib.Path(os.environ.get("QAIC_SOURCE_DIR", pathlib.Path(__file__).resolve().parents[3])).resolve()
sys.path.insert(0, str(SOURCE / "examples/llm"))
import mxfp6  # noqa: E402


def column(values, k=32):
    """A weight [k, 1] whose first rows are `values`, the rest zero."""
    weight = numpy.zeros((k, 1), dtype=numpy.float32)
    weight[:len(values), 0] = values
    return weight


def test_the_element_formats_have_the_specifications_ranges():
    assert (mxfp6.E2M3.max, mxfp6.E2M3.emax, mxfp6.E2M3.min_exponent) == (7.5, 2, 0)
    assert (mxfp6.E3M2.max, mxfp6.E3M2.emax, mxfp6.E3M2.min_exponent) == (28.0, 4, -2)


def test_every_e2m3_and_e3m2_value_is_kept_and_there_are_32_magnitudes_of_each():
    e2m3 = [m / 8 for m in range(8)] + [2.0**e * (1 + m / 8) for e in range(3) for m in range(8)]
    e3m2 = [m / 16 for m in range(4)] + [2.0**e * (1 + m / 4) for e in range(-2, 5) for m in range(4)]
    for element, values in ((mxfp6.E2M3, e2m3), (mxfp6.E3M2, e3m2)):
        assert len(set(values)) == 32 and max(values) == element.max
        scaled = numpy.array(values + [-v for v in values], dtype=numpy.float32)
        assert numpy.array_equal(mxfp6.round_elements(scaled, element), scaled)


@pytest.mark.parametrize("value, expected", [
    (3.0, 3.0),  # amax 3: floor(log2) 1, scale 2^(1-2) = 0.5, 3 / 0.5 = 6.0 is an E2M3 value
    (0.3, 0.3125),  # 0.6 lies between 0.5 and 0.625 (subnormal steps of 0.125): 0.625
    (0.28125, 0.25),  # 0.5625: a tie between 0.5 (code 4) and 0.625 (code 5): the even one
    (0.53125, 0.5),  # 1.0625: a tie between 1.0 (mantissa 0) and 1.125 (mantissa 1): 1.0
    (0.59375, 0.625),  # 1.1875: a tie between 1.125 (mantissa 1) and 1.25 (mantissa 2): 1.25
    (-1.21875, -1.25),  # -2.4375: between 2.25 and 2.5 (steps of 0.25), nearer 2.5; the sign kept
    (0.01, 0.0),  # 0.02 is below half the smallest subnormal (0.0625): zero
])
def test_e2m3_elements_of_a_block_whose_amax_is_3(value, expected):
    rounded = mxfp6.round_weight(column([3.0, value]), mxfp6.E2M3)
    assert rounded[1, 0] == numpy.float32(expected) and rounded[0, 0] == 3.0


def test_values_beyond_the_largest_e2m3_value_saturate():
    # amax 3.96875: scale 0.5, 7.9375 is above 7.5 (the largest E2M3 value): 7.5 * 0.5.
    rounded = mxfp6.round_weight(column([3.96875, -3.9]), mxfp6.E2M3)
    assert rounded[:2, 0].tolist() == [3.75, -3.75]


def test_e3m2_blocks_have_a_scale_with_emax_4():
    # amax 1: scale 2^(0-4) = 1/16; 0.1 * 16 = 1.6 lies between 1.5 and 1.75: 1.5 / 16.
    rounded = mxfp6.round_weight(column([1.0, 0.1, 0.00390625]), mxfp6.E3M2)
    assert rounded[:3, 0].tolist() == [1.0, 0.09375, 0.00390625]


def test_blocks_run_along_k_per_column_and_a_zero_block_stays_zero():
    # Rows 0..31 are one block of column 0, rows 32..63 the next; column 1 is all zero.
    weight = numpy.zeros((64, 2), dtype=numpy.float32)
    weight[0, 0], weight[1, 0] = 3.0, 0.3  # block amax 3: 0.3 -> 0.3125
    weight[32, 0], weight[33, 0] = 0.75, 0.3  # block amax 0.75: scale 0.125, 2.4 -> 2.5: 0.3125
    weight[34, 0] = 0.1  # 0.8 -> 0.75: 0.09375
    rounded = mxfp6.round_weight(weight, mxfp6.E2M3)
    assert rounded[[0, 1, 32, 33, 34], 0].tolist() == [3.0, 0.3125, 0.75, 0.3125, 0.09375]
    assert not rounded[:, 1].any()


def test_a_k_that_is_not_a_multiple_of_32_pads_the_last_block_with_zeros():
    # K = 40: rows 32..39 are a block of 8 values and 24 zeros, scaled by its own amax.
    weight = numpy.zeros((40, 1), dtype=numpy.float32)
    weight[0, 0] = 100.0
    weight[32, 0], weight[39, 0] = 0.75, 0.1
    rounded = mxfp6.round_weight(weight, mxfp6.E2M3)
    assert rounded.shape == (40, 1)
    # 100: scale 16, 6.25 is a tie between 6.0 (mantissa 4) and 6.5 (mantissa 5): 6.0.
    assert rounded[[0, 32, 39], 0].tolist() == [96.0, 0.75, 0.09375]


def test_the_scale_exponent_is_clamped_at_minus_127():
    # amax 2^-130: floor(log2) - 2 = -132, clamped to -127; 2^-130 / 2^-127 = 0.125, exact.
    tiny = numpy.float32(2.0**-130)
    rounded = mxfp6.round_weight(column([tiny, tiny / 4]), mxfp6.E2M3)
    assert rounded[0, 0] == tiny and rounded[1, 0] == 0.0  # 0.03125 is below 0.0625: zero


def test_float16_weights_are_rounded_in_float32():
    weight = column([3.0, 0.3]).astype(numpy.float16)
    rounded = mxfp6.round_weight(weight, mxfp6.E2M3)
    assert rounded.dtype == numpy.float32 and rounded[1, 0] == 0.3125
