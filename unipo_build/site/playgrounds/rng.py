"""A tiny deterministic random source shared, bit for bit, with the browser.

The playgrounds simulate in the reader's browser (unipo_build/site/playgrounds/playgrounds-sim.js)
and in numpy here, and a test holds the two equal. That only works if both draw the
same numbers, so neither side uses its platform generator: both use mulberry32 (a
32-bit generator by Tommy Ettinger, public domain) for uniforms and the cosine half
of the Box-Muller transform for standard normals. Integer steps are done modulo 2**32
exactly as JavaScript's ``Math.imul`` and ``>>>`` do them.
"""

from __future__ import annotations

import math

import numpy as np

_MASK = 0xFFFFFFFF
_GOLDEN = 0x9E3779B9  # 2**32 / golden ratio: spreads consecutive stream ids apart


def _imul(a: int, b: int) -> int:
    """Low 32 bits of a * b, as an unsigned int (JavaScript's Math.imul, then >>> 0)."""
    return (a * b) & _MASK


def stream_seed(seed: int, stream: int) -> int:
    """Seed of an independent stream (one per optimiser or per seed in a band).

    JS: ``(seed ^ Math.imul(stream + 1, 0x9E3779B9)) >>> 0``.
    """
    return ((seed & _MASK) ^ _imul(stream + 1, _GOLDEN)) & _MASK


class Mulberry32:
    """mulberry32: ``uniform()`` in [0, 1) with 32 bits; ``normal()`` standard normal."""

    def __init__(self, seed: int):
        self.state = seed & _MASK

    def next_uint32(self) -> int:
        self.state = (self.state + 0x6D2B79F5) & _MASK
        a = self.state
        t = _imul(a ^ (a >> 15), 1 | a)
        t = ((t + _imul(t ^ (t >> 7), 61 | t)) & _MASK) ^ t
        return (t ^ (t >> 14)) & _MASK

    def uniform(self) -> float:
        return self.next_uint32() / 4294967296.0

    def normal(self) -> float:
        # 1 - u lies in (0, 1], so the logarithm is finite.
        u1 = 1.0 - self.uniform()
        u2 = self.uniform()
        return math.sqrt(-2.0 * math.log(u1)) * math.cos(2.0 * math.pi * u2)

    def normals(self, n: int) -> np.ndarray:
        return np.array([self.normal() for _ in range(n)], dtype=np.float64)

    def uniforms(self, n: int) -> np.ndarray:
        return np.array([self.uniform() for _ in range(n)], dtype=np.float64)


def uniform_block(seed: int, start: int, n: int) -> np.ndarray:
    """Draws ``start .. start + n - 1`` of ``Mulberry32(seed)``, vectorised.

    mulberry32's state advances by a constant, so draw k depends only on
    ``seed + (k + 1) * 0x6D2B79F5``: numpy can compute a block at once. Equal to
    calling ``uniform()`` n times after ``start`` calls (tested).
    """
    k = np.arange(start + 1, start + n + 1, dtype=np.uint64)
    a = (np.uint64(seed & _MASK) + k * np.uint64(0x6D2B79F5)) & np.uint64(_MASK)
    m = np.uint64(_MASK)
    t = ((a ^ (a >> np.uint64(15))) * (a | np.uint64(1))) & m
    t = ((t + (((t ^ (t >> np.uint64(7))) * (t | np.uint64(61))) & m)) & m) ^ t
    out = (t ^ (t >> np.uint64(14))) & m
    return out.astype(np.float64) / 4294967296.0


class Stream:
    """A position in one mulberry32 sequence, handing out blocks of draws.

    The same interface exists in the JS port (``Stream`` in playgrounds-sim.js).
    """

    def __init__(self, seed: int):
        self.seed = seed & _MASK
        self.position = 0

    def uniforms(self, n: int) -> np.ndarray:
        block = uniform_block(self.seed, self.position, n)
        self.position += n
        return block

    def normals(self, n: int) -> np.ndarray:
        """n standard normals; normal j uses uniforms 2j (radius) and 2j + 1 (angle)."""
        u = self.uniforms(2 * n).reshape(n, 2)
        return np.sqrt(-2.0 * np.log(1.0 - u[:, 0])) * np.cos(2.0 * np.pi * u[:, 1])
