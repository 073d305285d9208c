"""Slow subprocess checks run side by side: each is its own process as it was when its test ran it, as many at a
time as this machine has cores, so the suite waits for them once (each Python start and vkrope import, about
0.5 s here, is single-threaded)."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Hashable, TypeVar

K = TypeVar("K", bound=Hashable)
T = TypeVar("T")


def run_all(jobs: dict[K, Callable[[], T]]) -> dict[K, T]:
    """Each job's result by name, the jobs run in threads (each waits on its own subprocesses)."""
    with ThreadPoolExecutor(max_workers=len(os.sched_getaffinity(0))) as pool:
        started: dict[K, Any] = {name: pool.submit(job) for name, job in jobs.items()}
        return {name: future.result() for name, future in started.items()}
