"""The one block-splitting function: rows of a `[B, N, row_bytes]` tensor
into blocks that fit a byte budget (an allocation, a binding range) and a
count limit (the dispatch grid)."""

from __future__ import annotations


def row_blocks(batches: int, n_tokens: int, row_bytes: int, max_bytes: int,
               max_tokens: int | None = None, max_batches: int | None = None) -> list[tuple[int, int, int, int]]:
    """Blocks `(b0, b1, n0, n1)`: batch items [b0, b1) x tokens [n0, n1).
    Whole batch items per block when one fits `max_bytes` (and N fits
    `max_tokens`), at most `max_batches` of them; else token ranges of one
    batch item, at most `max_tokens` tokens and `max_bytes` bytes each."""
    tokens_fit = max(1, max_bytes // max(1, row_bytes))
    if max_tokens is not None:
        tokens_fit = min(tokens_fit, max_tokens)
    if n_tokens <= tokens_fit:
        per = max(1, max_bytes // max(1, n_tokens * row_bytes))
        if max_batches is not None:
            per = min(per, max_batches)
        return [(b0, min(batches, b0 + per), 0, n_tokens) for b0 in range(0, batches, per)]
    return [(b0, b0 + 1, n0, min(n_tokens, n0 + tokens_fit))
            for b0 in range(batches) for n0 in range(0, n_tokens, tokens_fit)]
