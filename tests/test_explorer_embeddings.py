"""Chapter 07's description of the explorer's inputs: a fixed random vector per word, seeded by
the word itself (so a repeated word is the same vector), the zero vector for <pad>, plus the
sinusoidal position encoding of Vaswani et al. (2017)."""

import math

import torch

from mha_book import explore


def test_same_word_same_vector_pad_is_zero_plus_positions():
    d = 16
    x = explore.embed_tokens(["the", "cat", "The", "<pad>"], d)[0]  # (L, D)
    pe = explore._positions(4, d)
    words = x - pe
    torch.testing.assert_close(words[0], words[2])  # "the" and "The": one vector
    assert not torch.allclose(words[0], words[1])
    assert torch.equal(words[3], torch.zeros(d))  # <pad>
    for m in range(4):  # PE[m, 2i] = sin(m / 10000^(2i/d)), PE[m, 2i+1] = cos(...)
        for i in range(d // 2):
            angle = m / 10000 ** (2 * i / d)
            assert math.isclose(pe[m, 2 * i], math.sin(angle), abs_tol=1e-6)
            assert math.isclose(pe[m, 2 * i + 1], math.cos(angle), abs_tol=1e-6)
