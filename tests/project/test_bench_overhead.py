"""`vkrope bench --overhead` (vkrope/bench/overhead.py): the floor and every
call are measured in one run and reported as ratios; no time is asserted
(speed lives in the benchmark, not in tests)."""

from __future__ import annotations

import json

from vkrope.__main__ import main
from vkrope.bench import overhead


def test_every_operator_and_the_floor_are_measured(tmp_path, capsys):
    assert main(["bench", "--overhead", "--repeats", "1", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    result = json.loads((tmp_path / "bench_overhead.json").read_text())
    assert result["floor_seconds"] > 0 and "floor (empty submission" in out
    assert result["mode"] == "overhead" and result["run"]["device"]["name"] and result["run"]["date"].startswith("20")
    names = {r["call"] for r in result["rows"]}
    for op in ("apply", "rotary_embedding", "apply_rotary_emb", "apply_rotary_emb_hf", "apply_many",
               "rope_and_cache"):
        assert any(n.split(" ")[0] == op for n in names), op
    assert {"apply resident (1, 1, 2)", "apply numpy (1, 256, 256)"} <= names
    for r in result["rows"]:
        assert r["seconds"] > 0 and abs(r["over_floor"] - r["seconds"] / result["floor_seconds"]) < 1e-9
    assert "goal: a tiny resident apply <= 1.5x the floor" in out


def test_the_calls_are_the_ones_named():
    """Each call of the table runs (a broken lambda would fail here, not in a benchmark nobody reads)."""
    import vkrope
    dev = vkrope.Device()
    try:
        for name, call in overhead.calls_of(dev).items():
            call()
    finally:
        dev.close()
