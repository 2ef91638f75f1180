"""Watermarks for generative models: BitMark for bitwise autoregressive image generators."""

from sklearn_cispa.watermark._bitmark import (
    BitMarkDetector,
    BitMarkWatermark,
    bit_flip_attack,
    bit_flipper_attack,
    blur_attack,
    crop_resize_attack,
    gaussian_noise_attack,
    jpeg_attack,
    radioactivity_test,
)
from sklearn_cispa.watermark._generator import BitwiseARGenerator
from sklearn_cispa.watermark._processor import BitMarkLogitsProcessor

__all__ = [
    "BitMarkDetector",
    "BitMarkLogitsProcessor",
    "BitMarkWatermark",
    "BitwiseARGenerator",
    "bit_flip_attack",
    "bit_flipper_attack",
    "blur_attack",
    "crop_resize_attack",
    "gaussian_noise_attack",
    "jpeg_attack",
    "radioactivity_test",
]
