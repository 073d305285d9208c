"""`vkrope.Device`: one Vulkan device, opened and closed deterministically,
that runs the operators on numpy arrays and device-resident arrays."""

from __future__ import annotations

import functools
import inspect
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Callable, Concatenate, ParamSpec, TypeVar, cast, overload

import numpy as np

from .arguments import describe
from .errors import DeviceClosedError
from .runtime.array import MADE_BY_DEVICE, DeviceArray
from . import kernels
from .ops import decode, executorch, nd, onnx, sam2, shift, transformers
from .ops.call import Call, bind
from .ops.repeat import key_of
from .owner import DeviceMemory, devices, refuse_inside_a_call
from .runtime import execute, kept_calls
from .runtime.operator import Operator
from .vk.instance import PhysicalDeviceInfo
from .vk.commands import submissions


P = ParamSpec("P")
R = TypeVar("R")

# apply's keywords (what apply_many's calls may carry), read from its front end's signature
_APPLY_KEYWORDS = tuple(n for n, p in inspect.signature(sam2.apply).parameters.items() if p.kind is p.KEYWORD_ONLY)


def operation(front_end: Callable[P, Call[R]]) -> Callable[Concatenate["Device", P], R]:
    """A front end's public operation as a `Device` method: the call checked
    (its arguments named in any error, before any GPU work), then run here.
    Its signature and docstring are the front end's."""
    def method(self: "Device", *args: P.args, **kwargs: P.kwargs) -> R:
        begun = begun_submissions()
        try:
            return self._operate(front_end, args, kwargs)
        except BaseException as exc:  # (the outermost frame: whatever runs after the submit is covered)
            raise noted(exc, begun)  # noqa: B904  (the exception itself, or a second that interrupted its noting)

    bind(method, front_end, __name__, f"Device.{front_end.__name__}", method=True)
    return method


class Device(DeviceMemory):
    """A Vulkan device that runs the operator.

    Use it as a context manager (or call `close()`); it owns every Vulkan
    object it creates. Pipelines, buffers and command buffers are built on
    first use and reused. Safe to share between threads: calls are
    serialised on the device's queue.

        with vkrope.Device() as dev:
            y = dev.apply(x, freqs)

    `device` picks the physical device: an index or a (non-empty) name substring
    (default: the `VKROPE_DEVICE` environment variable, read the same way,
    else the most capable type). A closed Device refuses `with` too.
    `validation=True` enables the Khronos validation layer (default: the
    `VKROPE_VALIDATION` environment variable).
    """
    def __init__(self, device: int | str | None = None, *, validation: bool | None = None) -> None:
        super().__init__(device, validation=validation)  # (declared here: a wrong keyword's error names Device)

    # --- the public operations: each its front end's, bound in one line (ops/call.py) -----------
    apply = operation(sam2.apply)
    apply_nd = operation(nd.apply_nd)
    rotary_embedding = operation(onnx.rotary_embedding)
    apply_rotary_emb = operation(executorch.apply_rotary_emb)
    apply_rotary_emb_hf = operation(executorch.apply_rotary_emb_hf)
    apply_rotary_pos_emb = operation(transformers.apply_rotary_pos_emb)
    rope_and_cache = operation(decode.rope_and_cache)
    shift_cache = operation(shift.shift_cache)

    # (each result is of its job's x's kind, as apply's (its out too): typed so where every x is one kind,
    # so that `q_rot, k_rot = dev.apply_many([(q, f), (k, f)])` of DeviceArrays checks as DeviceArrays;
    # Sequence, not list: a list of jobs built before the call is of one tuple type, which list would refuse)
    @overload
    def apply_many(self, calls: Sequence[tuple[DeviceArray, Any] | tuple[DeviceArray, Any, dict[str, Any]]]
                   ) -> list[DeviceArray]: ...
    @overload
    def apply_many(self, calls: Sequence[tuple[np.ndarray, Any] | tuple[np.ndarray, Any, dict[str, Any]]]
                   ) -> list[np.ndarray]: ...
    @overload
    def apply_many(self, calls: Sequence[tuple]) -> list[np.ndarray | DeviceArray]: ...
    def apply_many(self, calls: Sequence[tuple]) -> list[Any]:  # (each as an overload above says)
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
                raise TypeError(f"calls[{i}] must be (x, freqs) or (x, freqs, dict of keywords); got {describe(call)}")
            x, freqs = call[0], call[1]
            kw = dict(call[2]) if len(call) == 3 else {}
            unknown = set(kw) - set(_APPLY_KEYWORDS)
            if unknown:
                raise TypeError(f"calls[{i}]: unknown keyword(s) {sorted(unknown)}; the keywords are those of apply "
                                f"({', '.join(_APPLY_KEYWORDS)})")
            check = functools.partial(_numbered, i, sam2.check, x, freqs, **kw)
            jobs.append(BatchJob(check(), check, f"calls[{i}]: "))
        begun = begun_submissions()
        try:
            return [outs["out"] for outs in self._run(kernels.interleaved, jobs)]
        except BaseException as exc:
            raise noted(exc, begun)  # noqa: B904  (as operation's)

    # --- the one path to the runtime ----------------------------------------------
    def _operate(self, front_end: Callable[..., Call[R]], args: tuple, kwargs: dict[str, Any]) -> R:
        """A public operation called on this device. A call that repeats a
        kept call's very arguments (the same DeviceArrays and specs, equal
        values: ops/repeat.py) and bound only resident arrays is submitted
        again as it is, its arrays checked alive (runtime/kept_calls.py);
        any other is checked by its front end and run, and kept for next
        time when it can be."""
        objects: list[Any] = []
        key = kept_key(front_end, args, kwargs, objects)
        done, kept = self._replay(key, objects)
        if done:
            return cast(R, kept)  # (the result of the call that was kept: of its kind)
        return self._call(front_end(*args, **kwargs), key, objects)

    def _replay(self, key: tuple | None, objects: list[Any]) -> tuple[bool, Any]:
        """(True, its result) when the call kept under `key` was submitted again; else (False, None)."""
        refuse_inside_a_call(self._lock, "a vkrope operation", "the call is using the device's buffers and fence")
        if key is None:
            return False, None
        with self._lock:
            self._settle()
            # (on a closed or abandoned device its arrays are not alive: the front end's checks come first)
            return self._guarded(kept_calls.replay, self._rt, key, objects, self._made)  # type: ignore[no-any-return]

    def _made(self, made: kept_calls.Made) -> DeviceArray:
        """The output of a replayed call that makes it (kept_calls.replay), with no memory yet: the replay hands
        it the pool's in one statement."""
        return DeviceArray(self, None, made.shape, made.dtype, made.storage, made=MADE_BY_DEVICE)

    def _call(self, call: Call[R], key: tuple | None = None, objects: list[Any] | None = None) -> R:
        """A checked public call (ops/call.py) run on this device; kept under
        `key` (`kept_key`, its arguments kept by identity in `objects`) when it
        can be (kept_calls.keep_call)."""
        outs = self._run(call.kernel, [BatchJob(r) for r in call.requests])
        result = call.result(outs)
        if key is not None and objects is not None and len(call.requests) == 1:
            with self._lock:
                if not self.closed:
                    kept_calls.keep_call(self._rt, key, objects, call.kernel, call.requests[0], outs[0], result)
        return result

    def _run(self, op: Operator, jobs: list["BatchJob"]) -> list[dict[str, Any]]:
        """Run checked requests of `op` in order, in as few submissions as
        their numpy memory allows, and return each one's outputs by tensor
        name. Every public operator comes through here.

        From the tensors each request declares: each DeviceArray is checked
        under the device lock before any GPU work (a batch of several jobs
        also before the lock, so that no job runs when a later one is bad;
        another thread may release an array, or close its device, in
        between: the check under the lock decides); the
        declaration itself is checked (values as declared, no two outputs of
        one job on one memory); and a job that reads numpy memory an
        earlier job writes starts a new submission, after that job's result
        was copied back, checked again (its arguments' data changed)."""
        refuse_inside_a_call(self._lock, "a vkrope operation", "the call is using the device's buffers and fence")
        if len(jobs) == 1:
            # One job (every call but apply_many): nothing to order, and its
            # checks made under the lock come before any GPU work all the same.
            with self._lock:
                self._settle()
                self._check_request(jobs[0].req, jobs[0].where)
                self._context()
                return self._run_group(op, [jobs[0].req], wheres=[jobs[0].where])[0]
        for job in jobs:
            self._check_request(job.req, job.where)
        with self._lock:
            self._settle()
            self._context()
            for job in jobs:
                self._check_arrays(job.req, job.where)
            results: list[dict[str, Any]] = []
            group: list[Any] = []
            wheres: list[str] = []  # (each job's place in the call: apply_many's "calls[i]: ")
            read: list[np.ndarray] = []  # numpy memory the group's jobs read ...
            written: list[np.ndarray] = []  # ... and write
            for job in jobs:
                req = job.req
                reads, writes = _numpy_memory(req)
                # Read after write, write after read or after write: the
                # device may touch numpy memory in place (imports), where
                # nothing orders two jobs of one submission.
                if (any(np.may_share_memory(a, w) for a in reads for w in written)
                        or any(np.may_share_memory(a, w) for a in writes for w in read + written)):
                    results += self._run_group(op, group, wheres=wheres)[0]
                    group, wheres, read, written = [], [], [], []
                    if job.recheck is not None:
                        req = job.recheck()
                        self._check_request(req, job.where)
                        reads, writes = _numpy_memory(req)
                group.append(req)
                wheres.append(job.where)
                read += reads
                written += writes
            return results + self._run_group(op, group, wheres=wheres)[0]

    def _run_group(self, op: Operator, reqs: list[Any], given: list[dict[str, Any]] | None = None,
                   want_time: bool = False,
                   wheres: list[str] | None = None) -> tuple[list[dict[str, Any]], float | None]:
        """One submission (or row blocks) for requests that do not depend on
        each other through numpy memory; the outputs neither declared nor
        `given` are made here (`wheres`: each request's place in the call,
        which an output past host memory names). Returns the outputs and the
        kernel seconds (with `want_time`)."""
        calls = []
        for i, req in enumerate(reqs):
            outs: dict[str, Any] = dict(given[i]) if given else {}
            for t in req.tensors():
                if t.writes and not t.table and t.name not in outs:
                    if t.value is not None:
                        outs[t.name] = t.value
                    elif t.on_device:
                        outs[t.name] = self._new_array(t.storage, t.shape, t.dtype)
                    else:
                        outs[t.name] = _host_result(t, _rotated_input(req), wheres[i] if wheres else "")
            calls.append((req, outs))
        seconds = self._guarded(execute.run_jobs, self._rt, op, calls, want_time)
        return [outs for _, outs in calls], seconds

    def _timed(self, req: Any, result: np.ndarray, op: Operator | None = None) -> float | None:
        """Run a checked numpy request of `op` (default: the interleaved
        operator) into `result`, its one output, through the same checks as
        every call; the kernel seconds (None without timestamps). For
        vkrope/bench/timing.py's `time_request`."""
        use = op or kernels.interleaved
        name = next(t.name for t in req.tensors() if t.writes and not t.table)
        self._check_request(req, "")
        with self._lock:
            self._context()
            self._check_arrays(req)
            return self._run_group(use, [req], [{name: result}], want_time=True)[1]

    def _check_request(self, req: Any, where: str) -> None:
        """A request's declaration, before any GPU work: every DeviceArray
        usable and here; every value what its tensor declares (else an
        operator's mistake: AssertionError); no two tensors it writes on one
        memory (ValueError naming both: which result would win is not
        defined)."""
        self._check_arrays(req, where)
        written: list[tuple[str, Any]] = []
        for t in req.tensors():
            v = t.value
            if v is None:
                assert t.table or not t.reads, f"{t.name}: a tensor the kernel reads has no value"
                continue
            if not t.table:
                assert tuple(v.shape) == tuple(t.shape) and v.dtype == t.dtype, (
                    f"{t.name}: declared {t.shape} {t.dtype}, given {tuple(v.shape)} {v.dtype}")
                assert not isinstance(v, DeviceArray) or v.storage == t.storage, f"{t.name}: storage"
            if t.writes:
                for name, w in written:
                    if v is w or (isinstance(v, np.ndarray) and isinstance(w, np.ndarray) and np.shares_memory(v, w)):
                        raise ValueError(f"{where}{name} and {t.name} are the same memory, and both are written: "
                                         "pass separate arrays")
                written.append((t.name, v))


def _rotated_input(req: Any) -> str:
    """The caller's name of the input a request rotates: its `x_name` (xk of apply_rotary_emb's two), else
    its first tensor's (the decode step's q)."""
    return getattr(req, "x_name", None) or req.tensors()[0].name


def _host_result(t: Any, x_name: str, where: str = "") -> np.ndarray:
    """The numpy array a call's result `t` (a Tensor) is written into, or a MemoryError naming it by the input
    it rotates (`x_name`: xk of apply_rotary_emb's two) and the job's place in the call (`where`: apply_many's
    "calls[i]: ") before any GPU work: a broadcast x of 2^32 values takes no memory, its result does."""
    try:
        return np.empty(t.shape, t.dtype)
    except MemoryError:
        nbytes = math.prod(t.shape) * t.dtype.itemsize
        raise MemoryError(f"{where}the result of {x_name}, {list(t.shape)} {t.dtype} ({nbytes} bytes), does not fit in "
                          "host memory: rotate fewer rows a call") from None


def kept_key(front_end: Callable[..., Any], args: tuple, kwargs: dict[str, Any], objects: list[Any]) -> tuple | None:
    """What a call of `front_end` is kept under: the operation and its arguments (ops/repeat.py's `key_of`,
    collecting those kept by identity into `objects`); None when it cannot be kept."""
    key = key_of((args, tuple(kwargs.items())), objects)
    return None if key is None else (front_end, key)


def begun_submissions() -> int:
    """The submissions the calling thread has begun, on any device (another thread's are not its call's)."""
    return submissions()[0]


def noted(exc: BaseException, begun: int) -> BaseException:
    """`exc` with note_submitted's note, for the caller to raise; where another exception interrupts the noting
    (a second Ctrl-C: a signal handler runs between any two bytecodes), that one, noted in its place (it would
    otherwise propagate without the note, its call's submitted work unsaid). A few tries: one that fails each
    time is raised as it is."""
    for _ in range(4):
        try:
            note_submitted(exc, begun)
            return exc
        except BaseException as later:  # noqa: BLE001  (what propagates now; the first is its __context__)
            exc = later
    return exc


def note_submitted(exc: BaseException, begun: int) -> None:
    """Note on an exception that ends a public call (a signal handler's: Ctrl-C) whether the call had submitted
    work, where it had (Python 3.11+'s `add_note`; `begun`: begun_submissions before the call, noted by the
    public call's outermost frame, so that an exception after the submit, in the result's reading or the
    keeping of the call, is noted too): submitted work runs to its end on the device whatever the
    exception, so its writes to device arrays happen (a resident cache is updated; a numpy output may not be
    filled), and a call that is not idempotent (`shift_cache`) must not simply be repeated. Without the note,
    nothing of the call reached the device."""
    now, queued = submissions()
    if now == begun or not hasattr(exc, "add_note"):
        return
    unsure = " (the last may not have been: the exception came during the submit)" if queued != now else ""
    exc.add_note(f"vkrope: this call had submitted its work ({now - begun} submission(s){unsure}): "
                 "what those write to device arrays is written (a call in several submissions may have stopped "
                 "between them), a numpy output may not be; do not repeat a call that cannot run twice "
                 "(shift_cache, or one whose out overlaps one of its inputs: it would rotate again)")


@dataclass
class BatchJob:
    """One call of a batch: its checked request, how to check it again (its
    arguments' numpy memory was written by an earlier job: a check that
    converted data reads it anew), and what its errors are prefixed with."""

    req: Any
    recheck: Callable[[], Any] | None = None
    where: str = ""


def _numpy_memory(req: Any) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """The numpy arrays a request reads and those it writes, as declared."""
    tensors = req.tensors()
    return ([t.value for t in tensors if t.reads and isinstance(t.value, np.ndarray)],
            [t.value for t in tensors if t.writes and isinstance(t.value, np.ndarray)])


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
