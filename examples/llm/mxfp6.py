# SPDX-License-Identifier: Apache-2.0
"""MXFP6 rounding of MatMul weights, written from the OCP Microscaling Formats (MX) v1.0
specification: what a weight becomes when it is stored as MXFP6 and read back.

A block is 32 consecutive elements along the reduction axis K of a weight W[K, N] (x @ W), so one
block is 32 rows of one column. Its shared scale is X = 2^(floor(log2(amax)) - emax), emax the
element format's largest exponent (2 for E2M3, whose largest value is 7.5; 4 for E3M2, 28), the
scale's exponent clamped to E8M0's [-127, 127]. Each element becomes the FP6 value nearest to
value / X, ties to the even code, saturating at +-max; a block whose amax is 0 is all zeros. When
K is not a multiple of 32 the last block is padded with zeros. Everything is computed in float32.
The C++ quantizer of -mxfp6-matmul follows the same rule, so both agree bit for bit.
"""
import numpy

BLOCK = 32


class ElementFormat:
    """An FP6 element encoding: exponent and mantissa bits, exponent bias, no infinities or NaN."""

    def __init__(self, name, exponent_bits, mantissa_bits):
        self.name = name
        self.mantissa_bits = mantissa_bits
        bias = 2 ** (exponent_bits - 1) - 1
        # The smallest normal exponent, which is also the exponent of the subnormals' quantum.
        self.min_exponent = 1 - bias
        self.emax = 2**exponent_bits - 1 - bias
        self.max = 2.0**self.emax * (2.0 - 2.0**-mantissa_bits)


E2M3 = ElementFormat("e2m3", 2, 3)
E3M2 = ElementFormat("e3m2", 3, 2)
FORMATS = {f.name: f for f in (E2M3, E3M2)}


def round_elements(scaled, element):
    """Each value of `scaled` (float32) to the nearest `element` value, ties to the even code,
    saturating at +-max."""
    magnitude = numpy.abs(scaled)
    # frexp gives magnitude = m * 2^e with m in [0.5, 1): floor(log2(magnitude)) = e - 1.
    _, exponent = numpy.frexp(magnitude)
    exponent = numpy.maximum(exponent - 1, element.min_exponent)
    quantum = numpy.ldexp(numpy.float32(1.0), exponent - element.mantissa_bits).astype(numpy.float32)
    # magnitude / quantum is the code's significand as an integer (8 + m for a normal E2M3 value),
    # so rint's ties-to-even is the even mantissa; a carry into the next binade stays exact.
    rounded = numpy.rint(magnitude / quantum) * quantum
    rounded = numpy.minimum(rounded, numpy.float32(element.max))
    return numpy.copysign(rounded, scaled).astype(numpy.float32)


def block_scales(amax, element):
    """The shared scale X of each block from its largest magnitude (float32; 0 where amax is 0)."""
    _, exponent = numpy.frexp(amax)
    shared = numpy.clip(exponent - 1 - element.emax, -127, 127)
    scale = numpy.ldexp(numpy.float32(1.0), shared).astype(numpy.float32)
    return numpy.where(amax > 0, scale, numpy.float32(0.0))


def round_weight(weight, element=E2M3):
    """W[K, N] (any float dtype, or a stack [..., K, N]) rounded through MXFP6, as float32 of the
    same shape: blocks of 32 along K, per column."""
    weight = numpy.asarray(weight, dtype=numpy.float32)
    k = weight.shape[-2]
    padded_k = -(-k // BLOCK) * BLOCK
    if padded_k != k:
        padding = [(0, 0)] * weight.ndim
        padding[-2] = (0, padded_k - k)
        weight = numpy.pad(weight, padding)
    blocks = weight.reshape(*weight.shape[:-2], padded_k // BLOCK, BLOCK, weight.shape[-1])
    amax = numpy.max(numpy.abs(blocks), axis=-2, keepdims=True)
    scale = block_scales(amax, element)
    safe_scale = numpy.where(scale > 0, scale, numpy.float32(1.0))
    rounded = round_elements(blocks / safe_scale, element) * safe_scale
    rounded = numpy.where(scale > 0, rounded, numpy.float32(0.0)).astype(numpy.float32)
    return rounded.reshape(*weight.shape[:-2], padded_k, weight.shape[-1])[..., :k, :]


def element_format(path=None):
    """The element format -mxfp6-matmul uses: the name written in `path` (e2m3 or e3m2), E2M3
    when there is no such file."""
    if path is None:
        return E2M3
    try:
        text = open(path).read().lower()
    except FileNotFoundError:
        return E2M3
    for name, element in FORMATS.items():
        if name in text:
            return element
    raise ValueError(f"{path}: names neither e2m3 nor e3m2")
