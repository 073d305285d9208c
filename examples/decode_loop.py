"""A greedy decode loop of a small random-weight Llama-shaped model in numpy,
its RoPE and KV cache on the Vulkan device: each layer's decode step is one
`Device.rope_and_cache` call (q and k rotated, k and v written into the
resident caches at the token's position), and attention reads the caches
back. The same model run as a plain float64 numpy forward pass over the
whole sequence (no cache) must pick the same tokens and give the same
logits.

Then the chat outgrows its window: when the cache is full, a context shift
(`Device.shift_cache`) keeps the first SINKS tokens (StreamingLLM's
attention sinks), drops the next DROP and moves the rest down, their keys
rotated again to their new positions, and decoding goes on. A float64 twin
of that streaming loop, which keeps every kept token's unrotated key and
rotates it at its current position whenever attention reads it (a full
recomputation at the shifted positions), must give the same logits.

    python examples/decode_loop.py
"""

from __future__ import annotations

import numpy as np

import vkrope

VOCAB, DIM, LAYERS, HQ, HK, HEAD, MAX_LEN = 64, 64, 2, 4, 2, 16, 24
THETA = 500000.0
SINKS, DROP, STREAM_STEPS = 2, 8, 30  # the context shift: tokens kept first, tokens dropped, steps decoded


def weights(rng: np.random.Generator) -> dict:
    def w(*shape: int) -> np.ndarray:
        return (rng.standard_normal(shape) / np.sqrt(shape[0])).astype(np.float32)

    return {"embed": w(VOCAB, DIM), "out": w(DIM, VOCAB),
            "layers": [{"wq": w(DIM, HQ * HEAD), "wk": w(DIM, HK * HEAD), "wv": w(DIM, HK * HEAD),
                        "wo": w(HQ * HEAD, DIM), "w1": w(DIM, 4 * DIM), "w2": w(4 * DIM, DIM),
                        "q_norm": (1 + 0.1 * rng.standard_normal(HEAD)).astype(np.float32),
                        "k_norm": (1 + 0.1 * rng.standard_normal(HEAD)).astype(np.float32)}
                       for _ in range(LAYERS)]}


def rms(x: np.ndarray) -> np.ndarray:
    return x / np.sqrt(np.mean(x * x, -1, keepdims=True) + 1e-6)


def attend(q: np.ndarray, k: np.ndarray, v: np.ndarray, causal: bool) -> np.ndarray:
    """q [HQ, S, HEAD] over k, v [HK, T, HEAD] (grouped heads)."""
    k, v = np.repeat(k, HQ // HK, 0), np.repeat(v, HQ // HK, 0)
    s = q @ k.transpose(0, 2, 1) / np.sqrt(HEAD)
    if causal:
        s = s + np.triu(np.full(s.shape[-2:], -np.inf), 1)
    p = np.exp(s - s.max(-1, keepdims=True))
    return (p / p.sum(-1, keepdims=True)) @ v


def reference_logits(w: dict, tokens: list[int]) -> np.ndarray:
    """The whole sequence at once in float64, Qwen3-style QK-norm, rotate-half RoPE."""
    n = len(tokens)
    inv = 1.0 / THETA ** (np.arange(0, HEAD, 2) / HEAD)
    ang = np.arange(n)[:, None] * inv[None]
    cos, sin = np.cos(ang), np.sin(ang)

    def rope(x: np.ndarray) -> np.ndarray:  # [H, S, HEAD]
        a, b = x[..., :HEAD // 2], x[..., HEAD // 2:]
        return np.concatenate([a * cos - b * sin, b * cos + a * sin], -1)

    h = w["embed"][tokens].astype(np.float64)
    for lw in w["layers"]:
        x = rms(h)
        q = (x @ lw["wq"]).reshape(n, HQ, HEAD).transpose(1, 0, 2)
        k = (x @ lw["wk"]).reshape(n, HK, HEAD).transpose(1, 0, 2)
        v = (x @ lw["wv"]).reshape(n, HK, HEAD).transpose(1, 0, 2)
        q, k = rope(rms(q) * lw["q_norm"]), rope(rms(k) * lw["k_norm"])
        h = h + attend(q, k, v, True).transpose(1, 0, 2).reshape(n, HQ * HEAD) @ lw["wo"]
        h = h + np.maximum(rms(h) @ lw["w1"], 0) @ lw["w2"]
    return rms(h[-1]) @ w["out"]


def rope64(x: np.ndarray, pos: np.ndarray) -> np.ndarray:
    """x [H, S, HEAD] rotated (rotate-half) at positions [S], in float64."""
    ang = pos[:, None] * (1.0 / THETA ** (np.arange(0, HEAD, 2) / HEAD))[None]
    cos, sin = np.cos(ang), np.sin(ang)
    a, b = x[..., :HEAD // 2], x[..., HEAD // 2:]
    return np.concatenate([a * cos - b * sin, b * cos + a * sin], -1)


def stream_step(w: dict, token: int, state: list[tuple[list, list]]) -> np.ndarray:
    """One decode step of the float64 twin: `state` holds per layer the kept
    tokens' unrotated (normalised) keys and values, a token's position its
    index there; returns the logits."""
    h = w["embed"][token][None].astype(np.float64)
    for lw, (ks, vs) in zip(w["layers"], state):
        x = rms(h)
        q = rms((x @ lw["wq"]).reshape(HQ, 1, HEAD)) * lw["q_norm"]
        ks.append(rms((x @ lw["wk"]).reshape(HK, HEAD)) * lw["k_norm"])
        vs.append((x @ lw["wv"]).reshape(HK, HEAD))
        n = len(ks)
        keys = rope64(np.stack(ks, 1), np.arange(n))  # every key at its current position
        att = attend(rope64(q, np.array([n - 1])), keys, np.stack(vs, 1), False)
        h = h + att.transpose(1, 0, 2).reshape(1, HQ * HEAD) @ lw["wo"]
        h = h + np.maximum(rms(h) @ lw["w1"], 0) @ lw["w2"]
    return (rms(h) @ w["out"])[0]


def decode_step(dev: vkrope.Device, w: dict, spec: vkrope.RopeFreqs, caches: list, token: int,
                pos: int) -> np.ndarray:
    """One token through every layer on the device at position `pos`; the logits."""
    h = w["embed"][token][None].astype(np.float32)
    for lw, (kc, vc) in zip(w["layers"], caches):
        x = rms(h)
        q = (x @ lw["wq"]).reshape(1, HQ, 1, HEAD).astype(np.float32)
        k = (x @ lw["wk"]).reshape(1, HK, 1, HEAD).astype(np.float32)
        v = (x @ lw["wv"]).reshape(1, HK, 1, HEAD).astype(np.float32)
        q = dev.rope_and_cache(q, k, v, kc, vc, spec, np.array([[pos]]), q_norm=lw["q_norm"], k_norm=lw["k_norm"])
        keys, values = kc.get()[0, :, :pos + 1], vc.get()[0, :, :pos + 1]
        att = attend(q[0], keys, values, False)  # [HQ, 1, HEAD]
        h = h + att.transpose(1, 0, 2).reshape(1, HQ * HEAD) @ lw["wo"]
        h = h + np.maximum(rms(h) @ lw["w1"], 0) @ lw["w2"]
    return (rms(h) @ w["out"])[0]


def stream(dev: vkrope.Device, w: dict, spec: vkrope.RopeFreqs, caches: list, tokens: list[int]) -> None:
    """Decoding past the window: a context shift each time the cache is full,
    checked against the float64 twin at every step."""
    state: list[tuple[list, list]] = [([], []) for _ in range(LAYERS)]
    for t in tokens[:MAX_LEN - 1]:  # the twin's cache: the tokens so far
        stream_step(w, t, state)
    pos, shifts, worst = MAX_LEN - 1, 0, 0.0
    token = tokens[-1]
    for _ in range(STREAM_STEPS):
        if pos == MAX_LEN:  # full: keep the sinks, drop DROP tokens, the rest move down
            old = np.arange(SINKS + DROP, MAX_LEN)[None]
            for kc, vc in caches:
                dev.shift_cache(kc, spec, old, old - DROP, v_cache=vc)
            for ks, vs in state:
                del ks[SINKS:SINKS + DROP], vs[SINKS:SINKS + DROP]
            pos, shifts = pos - DROP, shifts + 1
        logits = decode_step(dev, w, spec, caches, token, pos)
        ref = stream_step(w, token, state)
        worst = max(worst, float(np.abs(logits - ref).max() / np.abs(ref).max()))
        assert int(np.argmax(ref)) == int(np.argmax(logits)) or np.sort(ref)[-1] - np.sort(ref)[-2] < 1e-4
        token, pos = int(np.argmax(logits)), pos + 1
    print(f"streaming past the window: {STREAM_STEPS} more tokens, {shifts} context shifts "
          f"({SINKS} sinks kept, {DROP} dropped each); logits against the float64 twin: max relative error {worst:.2e}")
    assert shifts >= 2 and worst < 1e-4, worst


def main() -> None:
    rng = np.random.default_rng(7)
    w = weights(rng)
    spec = vkrope.RopeFreqs(HEAD, base=THETA)
    tokens = [1, 5, 9]
    with vkrope.Device() as dev:
        print(f"device: {dev.name}")
        caches = [(dev.asarray(np.zeros((1, HK, MAX_LEN, HEAD), np.float32)),
                   dev.asarray(np.zeros((1, HK, MAX_LEN, HEAD), np.float32))) for _ in range(LAYERS)]
        logits = None
        for pos in range(MAX_LEN - 1):  # prompt tokens one by one, then greedy
            logits = decode_step(dev, w, spec, caches, tokens[pos], pos)
            if pos + 1 >= len(tokens):
                tokens.append(int(np.argmax(logits)))
        ref = reference_logits(w, tokens[:-1])
        err = np.abs(logits - ref).max()
        print(f"tokens: {tokens}")
        print(f"last logits against the float64 full-sequence pass: max error {err:.2e}")
        assert err < 1e-3 * np.abs(ref).max(), err
        assert int(np.argmax(ref)) == tokens[-1]
        print(f"decode steps: {MAX_LEN - 1} x {LAYERS} layers, one submission each; "
              f"recordings made: {dev.stats()['recordings']}")
        stream(dev, w, spec, caches, tokens)
    print("OK")


if __name__ == "__main__":
    main()
