"""The suite's shards (scripts/test.sh runs them side by side, tests/shards.py splits the test files):
every file in exactly one shard, longest first to the least loaded, the same split in every shard's
process, a pytest that a test starts not itself a shard, and the test command failing when any shard
fails."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import shards

ROOT = Path(__file__).resolve().parents[2]


def test_parse_reads_i_of_n_and_refuses_anything_else():
    assert shards.parse("0/2") == (0, 2)
    assert shards.parse(" 3/4\n") == (3, 4)
    for bad in ("2/2", "1", "-1/2", "a/b", "0/0", "", "1/2/3"):
        with pytest.raises(ValueError, match=f"VKROPE_SHARD must be i/n .*got {bad!r}"):
            shards.parse(bad)


def test_each_file_goes_to_the_least_loaded_shard_longest_first():
    seconds = {"a": 10.0, "b": 6.0, "c": 5.0, "d": 1.0}
    # a -> 0 (10); b -> 1 (6); c -> 1 (11); e, unmeasured (2) -> 0 (12); d -> 1 (12)
    assert shards.assign(["d", "c", "b", "a", "e", "a"], seconds, 2) == {"a": 0, "b": 1, "c": 1, "e": 0, "d": 1}
    assert shards.assign(["x", "y"], {}, 2) == {"x": 0, "y": 1}  # (ties: by name, then the lower shard)
    assert set(shards.assign(["a", "b"], seconds, 1).values()) == {0}
    assert shards.assign(["a", "b"], seconds, 3) == {"a": 0, "b": 1}


def test_the_committed_seconds_split_the_suite_evenly():
    seconds = shards.measured()
    files = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "tests").glob("*/test_*.py"))
    assert set(seconds) <= set(files), "tests/shard_seconds.txt names files that are gone: run scripts/test_tiers.py"
    where = shards.assign(files, seconds, 2)
    loads = [sum(seconds.get(f, shards.UNMEASURED_S) for f in files if where[f] == i) for i in (0, 1)]
    assert max(loads) <= 1.1 * min(loads), loads


def test_the_environment_names_no_shard():
    """Under scripts/test.sh this process is a shard; what it starts must not be one (conftest takes the
    variable out): the next test runs this one as a shard's process."""
    assert "VKROPE_SHARD" not in os.environ


def _collect(shard: str | None, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "VKROPE_SHARD"}
    if shard is not None:
        env["VKROPE_SHARD"] = shard
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-m", "slow or not slow",
                           *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)


def test_the_shards_collect_every_test_once():
    files = ["tests/specs/test_yarn.py", "tests/specs/test_generated.py", "tests/project/test_tiers.py"]

    def ids(shard: str | None) -> set[str]:
        res = _collect(shard, "--collect-only", *files)
        assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
        return {line for line in res.stdout.splitlines() if "::" in line}

    whole, first, second = ids(None), ids("0/2"), ids("1/2")
    assert first and second and not first & second
    assert first | second == whole
    res = _collect("2/2", "--collect-only", *files)
    assert res.returncode == 4 and "VKROPE_SHARD must be i/n with 0 <= i < n (e.g. 0/2), got '2/2'" in res.stderr
    res = _collect("0/1", f"{__file__}::test_the_environment_names_no_shard")
    assert res.returncode == 0 and "1 passed" in res.stdout, res.stdout[-2000:]


def test_the_test_command_fails_when_one_shard_fails(tmp_path):
    """A plugin fails the second shard's session: the command exits 1 and shows that shard's output."""
    (tmp_path / "fail_second_shard.py").write_text(
        "import os\nSHARD = os.environ.get('VKROPE_SHARD', '')\n\n"
        "def pytest_sessionfinish(session, exitstatus):\n"
        "    if SHARD.startswith('1/'):\n        session.exitstatus = 1\n")
    # (the set-up skipped: it would reinstall vkrope into the .venv the suite's other shards run from)
    env = dict(os.environ, VKROPE_SHARDS="2", PYTHONPATH=str(tmp_path), VKROPE_SKIP_SETUP="1",
               VKROPE_SHARD="1/2")  # (one inherited: the command runs the whole selection, not that shard)
    res = subprocess.run(["bash", "scripts/test.sh", "-q", "-p", "fail_second_shard", "tests/specs/test_yarn.py",
                          "tests/project/test_tiers.py"], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=300)
    out = res.stdout + res.stderr
    assert res.returncode == 1, out[-3000:]
    assert "--- shard 1/2 (exit 1) ---" in out and "exits 0 1" in out, out[-3000:]
    assert out.count(" passed") >= 2, out[-3000:]  # (both shards ran their tests and showed them)
    res = subprocess.run(["bash", "scripts/test.sh", "-q", "tests/project/test_tiers.py"], cwd=ROOT,
                         env=dict(env, VKROPE_SHARDS="1"), capture_output=True, text=True, timeout=300)
    assert res.returncode == 0 and re.search(r"\n\d+ passed in", res.stdout), res.stdout[-2000:]  # (none deselected)
    res = subprocess.run(["bash", "scripts/test.sh"], cwd=ROOT, env=dict(env, VKROPE_SHARDS="0"),
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 2 and "VKROPE_SHARDS must be 1 to 99, got '0'" in res.stderr
