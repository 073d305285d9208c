"""The front ends, one module per ecosystem a user names (SAM2, ONNX,
ExecuTorch, transformers, N-D, the decode step, the context shift): each
holds its public operations (signature, hints, the one docstring), which
check every argument into a kernel's request (vkrope/kernels/) and return
the call as data (call.py), with the shared checks of the table kernel's
front ends (table_args.py) and of the KV-cache ones (cache_args.py), and
repeat.py's memo of a call's structure for a decode loop; lowering.py
turns a frequency spec into what the kernels read. docs/layout.md lists
every module and its operations. The ops that read a `ModelRope`:
`resolve` below for those that take one in place of a table,
transformers.py for its own signature (repeat.py only keys calls by it)."""

import dataclasses
from typing import Any

import numpy as np

from ..models import ModelRope
from ..models import model_table
from ..models.rope import part_slice
from ..freqs import InvFreqs


# --- a ModelRope as a call's frequencies ------------------------------------------


def check_model_head(spec: Any, head_dim: int, name: str) -> None:
    """A ModelRope rotates heads of its own head dim: another D would rotate
    the wrong channels (DeepSeek's full 192-wide heads, whose last 64
    rotate)."""
    if head_dim != spec.head_dim:
        # (a part's own heads: the channels the model table found; heads wider than the spec's of a model whose
        # rotated width is qk_rope_head_dim, DeepSeek's MLA: the whole head, whose rotated part is its last)
        where = f" ({spec.model}'s {spec.part}: {part_slice(spec)})" if spec.part_channels else \
            " (the rotated part of each head: q[..., qk_nope_head_dim:])" \
            if head_dim > spec.head_dim and "qk_rope_head_dim" in model_table.head_keys(spec.model) else ""
        raise ValueError(f"{name}: the ModelRope's head dim is {spec.head_dim} (of which {spec.rotary_dim} rotate); "
                         f"this call's heads have D = {head_dim}: pass the heads the model rotates{where}")


def resolve(name: str, spec: Any, positions: Any, interleaved: bool | None, head_dim: int) -> Any:
    """A `ModelRope` in place of a table: the `InvFreqs` of this call's
    positions, its pairs those of the call (`interleaved`; None: the call
    takes the spec's), its head dim the call's (`head_dim`). An M-RoPE
    model's: these ops take one position per token, which is that position
    on all three axes (text, and every decode step: transformers expands
    [B, S] ids so), the same angle for every pair whatever its axis, so one
    axis. Other values come back as they are (an M-RoPE InvFreqs given
    itself is refused: its positions per axis are apply_rotary_pos_emb's)."""
    if isinstance(spec, ModelRope):
        check_model(name, spec, interleaved, head_dim)
        spec = spec.freqs(None if positions is None else np.asarray(positions))
        if spec.pair_axis is not None:
            spec = dataclasses.replace(spec, pair_axis=None)
    if isinstance(spec, InvFreqs) and spec.mrope:
        raise ValueError(f"{name}: an M-RoPE InvFreqs spec turns each pair by one of three position axes; this "
                         "op takes one position per token: use vkrope.apply_rotary_pos_emb")
    return spec


def check_model(name: str, spec: Any, interleaved: bool | None, head_dim: int) -> None:
    """What `resolve` checks of a `ModelRope` before any position: its head
    dim, its pairs (`interleaved`; None: any)."""
    check_model_head(spec, head_dim, name)
    if interleaved is not None and spec.interleaved != interleaved:
            have = "interleaved (2i, 2i+1)" if spec.interleaved else "rotate-half (i, i + rot/2)"
            call = "interleaved" if interleaved else "rotate-half"
            raise ValueError(f"{name}: the ModelRope pairs channels {have} (its config / GGUF); this call rotates "
                             f"{call} pairs: pass the pairs the model uses (vkrope.apply_rotary_pos_emb takes the "
                             "spec's own)")


def per_axis_hint(spec: Any, position_ids: Any, bs: tuple[int, int], op: str) -> str:
    """The words for an M-RoPE ModelRope's ids per axis ([3, B, S] or [1, B, S], as transformers gives them)
    passed to an operator that takes one position per token; '' for any other spec or shape."""
    mrope = isinstance(spec, ModelRope) and spec.mrope_section is not None
    shape: tuple[int, ...] = position_ids.shape if isinstance(position_ids, np.ndarray) else ()
    if not mrope or len(shape) != 3 or shape[0] not in (1, 3) or tuple(shape[1:]) != tuple(bs):
        return ""
    return (f": {op} turns every M-RoPE axis by one position per token (a text token's, its axes equal): pass "
            "transformers' [3, B, S] or [1, B, S] ids as position_ids[0] where their rows are equal; tokens whose "
            "axes differ (an image's) rotate with apply_rotary_pos_emb")
