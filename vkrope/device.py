"""`vkrope.Device`: one Vulkan device, opened and closed deterministically,
that runs the operators on numpy arrays and device-resident arrays."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from .arguments import check_on_device
from .errors import DeviceClosedError
from .freqs import AxialFreqs, RopeFreqs
from .runtime.array import DeviceArray
from .ops import interleaved, table
from .owner import DeviceMemory, devices, resolve_storage
from .runtime import arrays, execute
from .runtime.layout import padded_bytes
from .vk.instance import PhysicalDeviceInfo


class Device(DeviceMemory):
    """A Vulkan device that runs the operator.

    Use it as a context manager (or call `close()`); it owns every Vulkan
    object it creates. Pipelines, buffers and command buffers are built on
    first use and reused. Safe to share between threads: calls are
    serialised on the device's queue.

        with vkrope.Device() as dev:
            y = dev.apply(x, freqs)

    `device` picks the physical device: an index or a name substring (default:
    the `VKROPE_DEVICE` environment variable, else the most capable type).
    `validation=True` enables the Khronos validation layer (default: the
    `VKROPE_VALIDATION` environment variable).
    """
    def apply(
        self,
        x: np.ndarray | DeviceArray,
        freqs: np.ndarray | DeviceArray | AxialFreqs | RopeFreqs,
        *,
        out: np.ndarray | DeviceArray | None = None,
        inverse: bool = False,
        repeat: int = 1,
        exclude_last: int = 0,
        positions: np.ndarray | None = None,
        storage: str = "auto",
    ) -> np.ndarray | DeviceArray:
        """Rotate `x` by `freqs` on this device; see `vkrope.apply`.

        `x` may be a numpy array (the result is numpy) or a `DeviceArray` of
        this device (the result is a new `DeviceArray`, or `out`, with no
        host round trip; `storage` is then the array's own)."""
        req = interleaved.check(
            x, freqs, out=out, inverse=inverse, repeat=repeat, exclude_last=exclude_last,
            positions=positions, storage=storage,
        )
        self._check_arrays(req)
        if isinstance(x, DeviceArray):
            self._check_resident(x, storage, "")
            return self._run_many(interleaved, [_Job(req)])[0]
        result = out if out is not None else np.empty(req.shape, dtype=req.dtype)
        if req.x.size == 0:
            self._context()
            return result
        with self._lock:
            self._context()
            self._check_arrays(req)
            self._guarded(execute.run_numpy, self._rt, interleaved, req, resolve_storage(req.storage), result, False)
        return result

    def apply_many(self, calls: list[tuple]) -> list[np.ndarray | DeviceArray]:
        """Rotate several tensors, in one queue submission where they do not
        depend on each other through numpy memory.

        `calls` holds `(x, freqs)` or `(x, freqs, keywords)` tuples, the
        keywords being those of `apply`. The results are those of the calls
        made one after another: numpy `x` give numpy results, DeviceArrays
        stay on the device, and a job that reads an earlier job's output
        (a DeviceArray, or numpy memory that job writes) sees it. Every
        argument is checked before any work starts. Typical use: Q and K of
        a layer, or every layer's keys.
        """
        if not isinstance(calls, (list, tuple)):
            raise TypeError(f"calls must be a list of (x, freqs[, keywords]) tuples; got {type(calls).__name__}")
        jobs = []
        for i, call in enumerate(calls):
            if not isinstance(call, tuple) or len(call) not in (2, 3) or (len(call) == 3 and not isinstance(call[2], dict)):
                raise TypeError(f"calls[{i}] must be (x, freqs) or (x, freqs, dict of keywords); got {call!r:.80}")
            x, freqs = call[0], call[1]
            kw = dict(call[2]) if len(call) == 3 else {}
            if isinstance(x, DeviceArray):
                self._check_resident(x, kw.get("storage", "auto"), f"calls[{i}]: ")
                kw["storage"] = x.storage
            unknown = set(kw) - {"out", "inverse", "repeat", "exclude_last", "positions", "storage"}
            if unknown:
                raise TypeError(f"calls[{i}]: unknown keyword(s) {sorted(unknown)}; the keywords are those of apply "
                                "(out, inverse, repeat, exclude_last, positions, storage)")
            check = functools.partial(_numbered, i, interleaved.check, x, freqs, **kw)
            req = check()
            self._check_arrays(req, f"calls[{i}]: ")
            reads = [a for a in (x, freqs, kw.get("positions")) if isinstance(a, np.ndarray)]
            jobs.append(_Job(req, check, reads))
        return self._run_many(interleaved, jobs)

    def _run_many(self, op: Any, jobs: list["_Job"]) -> list[np.ndarray | DeviceArray]:
        """Run the jobs in order, as few submissions as their numpy memory
        allows: a job that reads numpy memory an earlier job writes starts a
        new submission, after that job's result was copied back, and is
        checked again (its arguments' data changed)."""
        with self._lock:
            self._context()
            for job in jobs:
                self._check_arrays(job.req)
            results: list[np.ndarray | DeviceArray] = []
            group: list[Any] = []
            written: list[np.ndarray] = []  # numpy outputs of the group so far
            for job in jobs:
                if any(np.may_share_memory(a, w) for a in job.reads for w in written):
                    results += self._run_group(op, group)
                    group, written = [], []
                    assert job.recheck is not None  # (a job that reads numpy memory has one)
                    job = _Job(job.recheck(), job.recheck, job.reads)
                    self._check_arrays(job.req)
                group.append(job.req)
                if isinstance(job.req.out, np.ndarray):
                    written.append(job.req.out)
            return results + self._run_group(op, group)

    def _run_group(self, op: Any, prepared: list[Any]) -> list[np.ndarray | DeviceArray]:
        """Upload numpy inputs, run every request in one submission, download
        the results of numpy inputs. The temporaries (uploads, device copies
        of numpy results, staged outputs) live until the submission has
        finished."""
        results: list[tuple[np.ndarray | None, DeviceArray, DeviceArray]] = []
        temporaries: list[DeviceArray] = []
        jobs: list[execute.Job] = []
        try:
            for req in prepared:
                host_out = None
                x = req.x
                if not isinstance(x, DeviceArray):
                    host_out = req.out if req.out is not None else np.empty(req.shape, req.dtype)
                    x = self.asarray(x, storage=req.storage)
                    temporaries.append(x)
                out = req.out if isinstance(req.out, DeviceArray) else None
                if out is None:
                    out = self._new_array(x.storage, x.shape, x.dtype)
                    if host_out is not None:
                        temporaries.append(out)
                target = out
                pl = execute.plan_for(self._rt, op, req, x.storage) if req.x.size else None
                tables = [a for _, a, access in req.arrays()[1:] if access == "read" and isinstance(a, DeviceArray)]
                if pl is not None and ((out is x and not pl.in_place) or any(t is out for t in tables)):
                    # The kernel cannot write where it reads (a partner texel
                    # of x, or a table row another invocation reads): through
                    # a temporary.
                    target = self._new_array(x.storage, x.shape, x.dtype)
                    temporaries.append(target)
                results.append((host_out, out, target))
                if pl is not None:
                    jobs.append(execute.Job(req, pl, x._resource, target._resource))
            if jobs:
                self._guarded(execute.run_resident, self._rt, op, jobs)
            final: list[np.ndarray | DeviceArray] = []
            for host_out, out, target in results:
                if target is not out and out.size:
                    self._guarded(arrays.copy_resource, self._rt, target._resource, out._resource,
                                  padded_bytes(out.size, out.dtype.itemsize))
                final.append(out if host_out is None else self._download_into(out, host_out))
            return final
        finally:
            for tmp in temporaries:
                tmp.release()

    # --- the table operators (vkrope/ops/table.py) ---------------------------------
    def rotary_embedding(
        self, x: np.ndarray | DeviceArray, cos_cache: np.ndarray | DeviceArray, sin_cache: np.ndarray | DeviceArray,
        position_ids: np.ndarray | None = None, *, interleaved: int | bool = 0, rotary_embedding_dim: int = 0,
        num_heads: int = 0, out: np.ndarray | DeviceArray | None = None, storage: str = "auto",
    ) -> np.ndarray | DeviceArray:
        """ONNX RotaryEmbedding (opset 23) on this device; see
        `vkrope.rotary_embedding`. DeviceArrays in (x, the caches) stay on the
        device: a DeviceArray x gives a DeviceArray result."""
        req = table.check_onnx(x, cos_cache, sin_cache, position_ids, interleaved=interleaved,
                               rotary_embedding_dim=rotary_embedding_dim, num_heads=num_heads, out=out,
                               storage=storage)
        self._check_arrays(req)
        if isinstance(x, DeviceArray):
            self._check_resident(x, storage, "")
            return self._run_many(table, [_Job(req)])[0]
        result = out if out is not None else np.empty(req.shape, dtype=req.dtype)
        with self._lock:
            self._context()
            self._check_arrays(req)
            if req.rows and req.row_values:
                self._guarded(execute.run_numpy, self._rt, table, req, resolve_storage(req.storage), result, False)
        return result

    def apply_rotary_emb(self, xq: Any, xk: Any, freqs_cos: Any, freqs_sin: Any) -> tuple[Any, Any]:
        """ExecuTorch's `apply_rotary_emb` (LLM) on this device, q and k in
        one submission; see `vkrope.apply_rotary_emb`."""
        q, k = table.check_llm(xq, xk, freqs_cos, freqs_sin)
        return self._pair(q, k, xq, xk)

    def apply_rotary_emb_hf(self, xq: Any, xk: Any, freqs_cos: Any, freqs_sin: Any,
                            start_pos: int = 0) -> tuple[Any, Any]:
        """ExecuTorch's `apply_rotary_emb_hf` (Hugging Face rotate-half) on
        this device, q and k in one submission; see `vkrope.apply_rotary_emb_hf`."""
        q, k = table.check_hf(xq, xk, freqs_cos, freqs_sin, start_pos)
        return self._pair(q, k, xq, xk)

    def _pair(self, q: Any, k: Any, xq: Any, xk: Any) -> tuple[Any, Any]:
        self._check_arrays(q)
        self._check_arrays(k)
        limit = (self._rt.limits.max_memory_allocation_size or (1 << 31)) // 2
        if isinstance(xq, np.ndarray) and isinstance(xk, np.ndarray) and max(xq.nbytes, xk.nbytes) > limit:
            # Past one allocation: each tensor in row blocks (two submissions, not one).
            outs = (np.empty(q.shape, q.dtype), np.empty(k.shape, k.dtype))
            with self._lock:
                self._context()
                for req, out in zip((q, k), outs):
                    self._check_arrays(req)
                    if req.rows and req.row_values:
                        self._guarded(execute.run_numpy, self._rt, table, req, "buffer", out, False)
            return outs
        yq, yk = self._run_many(table, [_Job(q), _Job(k)])
        return yq, yk

    def _check_arrays(self, req: Any, where: str = "") -> None:
        """Every DeviceArray of the request is usable and lives here (checked
        before any GPU work, and again under the device lock: another thread
        may have released one, or closed its device, in between)."""
        for name, a, _ in req.arrays():
            if isinstance(a, DeviceArray):
                check_on_device(where + name, a, self)


@dataclass
class _Job:
    """One call of a batch: its checked request, how to check it again (its
    arguments' numpy memory was written by an earlier job), and the numpy
    arrays it reads."""

    req: Any
    recheck: Callable[[], Any] | None = None
    reads: list[np.ndarray] = field(default_factory=list)


def _numbered(i: int, check: Callable[..., Any], *args: Any, **kw: Any) -> Any:
    """`check(*args, **kw)` with `calls[i]: ` in front of its errors."""
    try:
        return check(*args, **kw)
    except DeviceClosedError as exc:
        raise DeviceClosedError(f"calls[{i}]: {exc}") from None
    except TypeError as exc:
        raise TypeError(f"calls[{i}]: {exc}") from None
    except ValueError as exc:
        raise ValueError(f"calls[{i}]: {exc}") from None


__all__ = ["Device", "devices", "PhysicalDeviceInfo"]
