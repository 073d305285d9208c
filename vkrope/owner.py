"""The lifetime of one Vulkan device (opening, facts, closing
deterministically, at interpreter exit and in forked children:
`DeviceOwner`) and the memory of its arrays (`DeviceMemory`: asarray,
downloads, copies, release). `Device` (device.py) adds the operators."""

from __future__ import annotations

import atexit
import itertools
import math
import os
import re
import threading
import time
import types
import weakref
from typing import Any, Callable, TypeVar

import numpy as np

from .arguments import check_alive, check_array, check_on_device, check_storage
from .words import brief, typed
from .errors import DeviceClosedError, DeviceLostError, DeviceTimeoutError, OutOfDeviceMemoryError
from .runtime import array_memory as arrays
from .runtime.array import MADE_BY_DEVICE, DeviceArray
from .runtime.engine import Runtime
from .runtime.left_running import ends_within, never_freed
from .runtime.imports import KeptImports
from .runtime.dtypes import is_int
from .runtime.layout import padded_bytes, tensor_extent
from .vk.context import Context
from .vk import instance as vk_instance
from .vk.instance import Instance


def resolve_storage(storage: str) -> str:
    """The storage `auto` stands for (buffers: see README, 'Storage')."""
    return "buffer" if storage == "auto" else storage


_Owner = TypeVar("_Owner", bound="DeviceOwner")
_numbers = itertools.count(1)  # Device #n in reprs and messages: two devices of one GPU told apart


def inside_a_call(lock: Any) -> bool:
    """Whether this thread holds a device's `lock` already: it is inside a call on that device (a signal handler or
    a finalizer running in the middle of it; the lock is reentrant)."""
    return bool(lock._is_owned())


def refuse_inside_a_call(lock: Any, what: str, why: str, inside: str = "a call on this device") -> None:
    """RuntimeError where this thread holds a device's `lock` already: it is inside a call on that device (a
    signal handler or a finalizer running in the middle of it), whose buffers, fence and recordings are that
    call's until it ends (an operator run there overwrote the call's arguments, or submitted its fence twice:
    a driver abort; a close left it spinning)."""
    if inside_a_call(lock):
        raise RuntimeError(f"{what} was called inside {inside} in this thread (from a signal handler or a "
                           f"finalizer): {why}; call it after that returns")


class DeviceOwner:
    """Owns a `Context` (and its `Runtime`) behind a lock; base of `vkrope.Device`."""

    def __init__(self, device: int | str | None = None, *, validation: bool | None = None) -> None:
        if device is not None and not is_int(device) and not isinstance(device, str):
            raise TypeError(f"device must be an index (int) or a name substring (str); got {typed(device)}")
        device = int(device) if isinstance(device, np.integer) else device
        if isinstance(device, int) and device < 0 or isinstance(device, str) and re.fullmatch(r"\s*-\d+\s*", device):
            # (no device has a negative index, "-1" as the index it reads as: an argument's mistake, not a machine's)
            raise ValueError(f"device must be an index >= 0 (vkrope.devices() lists them) or a part of a device's "
                             f"name; got {brief(device)}")
        if isinstance(device, str) and not device.strip():  # (every name contains it: a choice nobody made)
            raise ValueError(f"device must be an index or a part of a device's name; got {brief(device)} (None: "
                             "VKROPE_DEVICE, else the most capable device)")
        if validation is not None and not isinstance(validation, (bool, np.bool_)):  # ("no" is truthy: refused)
            raise TypeError(f"validation must be True, False or None (VKROPE_VALIDATION decides); got "
                            f"{typed(validation)}")
        validation = None if validation is None else bool(validation)
        self._lock = threading.RLock()
        self._ctx: Context | None = None
        self._closing = False  # close() began: the device refuses work, and close() completes what is left
        self._closed_why = ""
        self._close_asked = ""  # why close() was called, set before it waits for a call in flight
        self._deferred: list[DeviceArray] = []  # released inside a call of this thread: given back after (_settle)
        self.number = next(_numbers)
        with vk_instance.OPENING:  # (a fork waits for it, as for a call in flight)
            made: list[Context] = []  # (the context joins it first thing: an interruption anywhere finds it)
            try:
                Context(device, validation, made)
                ctx = made[0]
                self._rt = Runtime(ctx)
                _open[id(ctx)] = (weakref.ref(self), ctx, self._rt.imports)  # (from here the closers hold it)
            except BaseException:
                for ctx in made:
                    if id(ctx) not in _open:
                        _open[id(ctx)] = (_nobody, ctx, _NO_IMPORTS)  # (an interrupted close: the orphans'
                        ctx.close()  # sweep, at the next Device opened or the exit, completes it)
                        del _open[id(ctx)]
                raise
            self._ctx = ctx
            _live.add(self)
        _finish_orphans()  # (not under OPENING: a context's close takes its lock, then OPENING)

    # --- facts ------------------------------------------------------------
    @property
    def name(self) -> str:
        """The physical device's name."""
        return self._context().info.name

    @property
    def info(self) -> dict[str, Any]:
        """The device's facts (type, API version, limits) and why it was chosen."""
        ctx = self._context()
        facts = ctx.info.facts()
        facts["why_chosen"] = ctx.why
        facts["unified_memory"] = self._rt.unified
        facts["validation"] = ctx.instance.validation
        return facts

    @property
    def closed(self) -> bool:
        """Whether the device was closed (explicitly, after a device loss or
        timeout, at interpreter exit, or because this is a forked child)."""
        return self._ctx is None or self._closing

    @property
    def closing(self) -> bool:
        """Whether close() was called (it may still wait for a call in
        flight on another thread) or the device is closed: it takes no new
        work, and its arrays are not to be copied elsewhere."""
        return bool(self._close_asked) or self.closed

    @property
    def closed_why(self) -> str:
        """When and why the device was closed ("" while it is open)."""
        return self._closed_why

    def _context(self) -> Context:
        if self.closed:
            raise DeviceClosedError(f"this vkrope.Device was closed ({self._closed_why}); create a new one")
        assert self._ctx is not None
        return self._ctx

    # --- the operator -----------------------------------------------------
    def _guarded(self, fn: Callable[..., Any], *args: Any) -> Any:
        """Call into the runtime. A hung or lost device closes this Device
        (a submission may still use its memory), and the error says so."""
        try:
            return fn(*args)
        except DeviceTimeoutError as exc:
            bound = f"VKROPE_TIMEOUT_S = {exc.seconds:g} s" if exc.seconds is not None else "VKROPE_TIMEOUT_S"
            why = f"its work did not finish within {bound}"
            left = self._close_after_timeout(why, exc.seconds, exc.waited_again)
            said = DeviceTimeoutError(
                f"{exc}: submitted work did not finish within {bound}, so this vkrope.Device was closed and its "
                f"DeviceArrays are gone{left}. Set VKROPE_TIMEOUT_S higher for longer work; vkrope.apply opens a new "
                "default device on its next call", exc.call, exc.result)
            said.seconds, said.waited_again = exc.seconds, exc.waited_again or bool(left)
            raise said from exc
        except DeviceLostError as exc:
            self._close("the device was lost")
            raise DeviceLostError(
                f"{exc}: the device was lost, so this vkrope.Device was closed and its DeviceArrays are gone; "
                "vkrope.apply opens a new default device on its next call", exc.call, exc.result) from exc

    def _close_after_timeout(self, why: str, seconds: float | None, waited_again: bool = False) -> str:
        """Close after a timeout. The work gets one more bounded wait (at
        least a second: it may only be slow; none where the runtime's passed
        already, `waited_again`); if it still runs, nothing of the device is
        destroyed under it: the device is abandoned (its memory left to the
        driver until the process ends, which beats a hang or a crash).
        Returns what the error message adds."""
        with self._lock:
            if self._ctx is None:
                return ""
            if waited_again or not ends_within(self._rt, seconds):  # (lost meanwhile: torn down below all the same)
                self._closing, self._closed_why = True, why
                _abandoned.append(self._ctx)
                _abandoned_arrays.extend(self._rt.imports.pinned())  # the device may still use their memory
                _open.pop(id(self._ctx), None)  # (never closed: not an orphan to complete either)
                self._ctx = None
                return " (it was still running after a second wait, so its memory is left to the driver)"
        self._close(why)
        return ""

    def _force_limits(self, *, unified: bool | None = None, **limits: Any) -> None:
        """Testing hook: make this device report smaller limits (fields of
        `PhysicalDeviceInfo`, e.g. `max_storage_buffer_range=1 << 20`), act
        as a discrete GPU (`unified=False`: staging copies) or as unified
        memory (`unified=True`: buffers host-visible, imports bound by the
        kernel; on a discrete GPU that reads across PCIe, slowly but
        right), so that the suite crosses the same thresholds and paths on
        every device. Drops every cached plan,
        buffer and recording made under the old limits."""
        import dataclasses

        with self._lock:
            ctx = self._context()
            dim = limits.get("max_image_dimension_3d", ctx.info.max_image_dimension_3d)
            if dim != ctx.info.max_image_dimension_3d and any(
                    res.is_image and (ref is None or ref() is not None) for res, ref, _ in self._rt.held.values()):
                raise ValueError("max_image_dimension_3d: this device has live texture3d DeviceArrays, whose "
                                 "images were laid out under the old limit (an op would read them by the new "
                                 "one): release them first")
            self._guarded(self._rt.trim)
            if limits:
                ctx.info = dataclasses.replace(ctx.info, **limits)
                if "external_memory_host" in limits:
                    ctx.external_memory_host = limits["external_memory_host"]
            if unified is not None:
                self._rt.unified = unified

    def _check_arrays(self, req: Any, where: str = "") -> None:
        """Every DeviceArray argument of the request is usable and lives here."""
        self._context()  # (a closed device says so first: the arrays' copy asked for below could not be made here)
        for t in req.tensors():
            v = t.value
            if isinstance(v, DeviceArray) and (v.device is not self or v.state != "live"):
                check_on_device(where + t.name, v, self)  # (raises, naming it)

    def _on_runtime(self, fn: Any, *args: Any) -> Any:
        """fn(runtime, *args) under this device's lock and error guard (vkrope/bench/timing.py's ceilings)."""
        with self._lock:
            self._context()
            return self._guarded(fn, self._rt, *args)

    def stats(self) -> dict[str, int]:
        """What this device has done since it was opened: `submissions`,
        `recordings` (command buffers recorded: a call that differs from an
        earlier one only in its data replays a cached one), `pipelines`
        built, `bytes_uploaded` (host data copied for the device: staged
        numpy arguments, tables, asarray), `bytes_read_back` (results copied
        into numpy arrays, get()), `bytes_imported` (numpy memory the device
        used in place), `hot_calls` (calls that repeated a kept call's
        layout and were only filled and submitted again: the hot path),
        `replayed_calls` (those of them that repeated a kept call's very
        arguments, all resident, and were submitted without their checks
        but the arrays' liveness),
        `recordings_cached` (kept now) and `imports_kept` (numpy arrays
        passed again whose imports are kept for later calls; `trim()` gives
        them back)."""
        with self._lock:
            self._context()
            return {**self._rt.counts, "recordings_cached": len(self._rt.recordings),
                    "imports_kept": len(self._rt.imports.kept)}

    # --- lifetime ---------------------------------------------------------
    def close(self) -> None:
        """Release every Vulkan object of this device (idempotent). An
        interrupted close (KeyboardInterrupt) leaves the device closed to
        new work; calling close() again, or the interpreter's exit, completes it. Called from inside a call on
        this device in this thread (a signal handler), it raises RuntimeError: the call is using what it would
        destroy."""
        refuse_inside_a_call(self._lock, "close()", "it would destroy what the call is using")
        self._close("close() was called")

    def _close(self, why: str) -> None:
        self._close_asked = self._close_asked or why  # (before the lock: a call in flight may hold it a while)
        with self._lock:
            ctx = self._ctx
            if ctx is None:
                return
            if not self._closing:
                self._closing, self._closed_why = True, why
            # Every step of Context.close is idempotent and the context stays
            # ours until it returns: an interruption anywhere in it loses nothing.
            ctx.close()
            _open.pop(id(ctx), None)
            self._deferred.clear()  # (their memory went with the context)
            self._rt.imports.drop()  # (their memory objects went with the context; before the context is
            self._ctx = None         # forgotten: an interrupted close() called again completes this too)

    def __enter__(self: _Owner) -> _Owner:
        self._context()  # (a closed device says so at the `with`, not at its first call inside)
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        # Fallback only: at interpreter shutdown modules may be gone, and the
        # atexit hook of the default device has already run.
        try:
            if getattr(self, "_ctx", None) is not None and not _shutting_down():
                self.close()
        except Exception:
            pass

    def __copy__(self) -> "DeviceOwner":
        raise TypeError("a vkrope.Device cannot be copied: it owns a Vulkan device; share the object, "
                        "or open another vkrope.Device")

    def __deepcopy__(self, memo: dict) -> "DeviceOwner":
        return self.__copy__()

    def __reduce_ex__(self, protocol: Any) -> Any:
        raise TypeError("a vkrope.Device cannot be pickled: it owns a Vulkan device; open one in each process")

    def __repr__(self) -> str:
        if self._ctx is None or self._closing:
            return f"<vkrope.Device #{self.number} (closed)>"
        return f"<vkrope.Device #{self.number} {self._ctx.info.name!r} ({self._ctx.info.type})>"



class DeviceMemory(DeviceOwner):
    """A device's arrays: `asarray`, downloads, device copies, release and
    `trim` (base of `vkrope.Device`, which adds the operators)."""

    def _settle(self) -> None:
        """Give back the memory of arrays released inside a call of this thread (_release_array's `deferrable`),
        under the lock where no call is in progress: at the next call, transfer or trim. (Taken off the list
        before its release: an interruption between leaves the memory with its array, whose __del__ gives it.)"""
        while self._deferred:
            self._deferred.pop()._release()

    def trim(self) -> None:
        """Free cached work buffers, recordings and the imports kept for
        numpy arrays passed again (re-made on demand); kept imports pin
        their arrays' memory until then. The memory of arrays that died
        holding it (an exception in their `__del__`) is freed too. Called
        from inside a call on this device in this thread (a signal handler or
        a finalizer), it raises RuntimeError: it would free what the call uses."""
        refuse_inside_a_call(self._lock, "trim()", "it would free memory the call is using")
        with self._lock:
            self._context()
            self._settle()
            self._guarded(arrays.reclaim_dead, self._rt)
            self._guarded(arrays.take_back, self._rt)  # (and what an interruption left on its way to the pool)
            self._guarded(self._rt.trim)

    def _new_array(self, storage: str, shape: tuple[int, ...], dtype: np.dtype) -> DeviceArray:
        """A new, uninitialised DeviceArray on this device. The array exists
        before its memory does, and `new_resource` hands it the memory: an
        interruption leaves pool memory in the pool or in the array, never in
        neither (#35's adversaries leaked a pool buffer a call in 300)."""
        arr = DeviceArray(self, None, shape, dtype, storage, made=MADE_BY_DEVICE)
        if math.prod(shape):
            self._guarded(arrays.new_resource, self._rt, storage, shape, dtype, arr)  # (it hands arr the memory)
        return arr

    def asarray(self, a: np.ndarray | DeviceArray, storage: str = "auto") -> DeviceArray:
        """Upload a float32 / float16 / bfloat16 numpy array and return it as a
        `DeviceArray` on this device: a tensor `[..., N, C]` for the
        operators (any storage), or a table (`storage="buffer"`); or an fp8
        one (`vkrope.float8_e4m3fn` / `float8_e5m2`), a KV cache, in a buffer.

        A DeviceArray of this device with `storage` "auto" or its own comes
        back as it is; one of another Device, or asked for in the other
        storage, is copied into a new array here (through the host)."""
        storage = check_storage(storage)
        if isinstance(a, DeviceArray):
            check_alive("a", a)
            if a.device is self and storage in ("auto", a.storage):
                return a
            if storage == "auto":
                storage = a.storage
        refuse_inside_a_call(self._lock, "asarray()", _STAGING)
        storage = resolve_storage(storage)
        a = check_array(a, "a", storage)
        if isinstance(a, DeviceArray):
            a = a.get()
        with self._lock:
            self._context()
            self._settle()
            if storage == "texture3d":  # (an image this device cannot make, named before any allocation)
                tensor_extent(a.shape, self._rt.limits.max_image_dimension_3d, "a")
            try:
                arr = self._new_array(storage, a.shape, a.dtype)
            except OutOfDeviceMemoryError as e:  # (named: the one argument whose size decides it)
                raise OutOfDeviceMemoryError(f"a: {e}", e.call, e.result) from None
            if a.size:
                self._guarded(arrays.transfer, self._rt, arr._resource, a, True)
            return arr

    def _copy_array(self, src: DeviceArray) -> DeviceArray:
        """A new DeviceArray holding a device-side copy of `src`."""
        check_alive("the DeviceArray to copy", src)
        refuse_inside_a_call(self._lock, "a copy of a DeviceArray", _STAGING)
        with self._lock:
            self._context()
            check_alive("the DeviceArray to copy", src)
            self._settle()
            arr = self._new_array(src.storage, src.shape, src.dtype)
            if src.size:
                self._guarded(arrays.copy_resource, self._rt, src._resource, arr._resource,
                              padded_bytes(src.size, src.dtype.itemsize))
            return arr

    def _download(self, arr: DeviceArray) -> np.ndarray:
        return self._download_into(arr, np.empty(arr.shape, arr.dtype))

    def _download_into(self, arr: DeviceArray, out: np.ndarray) -> np.ndarray:
        check_alive("the array", arr)
        refuse_inside_a_call(self._lock, "DeviceArray.get() (or np.asarray of one)", _STAGING)
        with self._lock:
            self._context()
            check_alive("the array", arr)  # (released by another thread meanwhile)
            self._settle()
            if arr.size:
                self._guarded(arrays.transfer, self._rt, arr._resource, out, False)
            return out

    def _release_array(self, arr: DeviceArray, deferrable: bool = False) -> None:
        """Take back a released array's memory. Called from
        DeviceArray.release (`deferrable`: inside a call in this thread, from a
        signal handler or a finalizer, the call may be using that memory, so it
        stays with the array until the call has ended, _settle) and __del__
        (possibly at shutdown, or from a garbage collection inside a call of
        this thread, of an array no call holds: the lock is reentrant); a call
        running in another thread finishes with the array first."""
        if deferrable and arr._resource is not None and inside_a_call(self._lock):
            self._deferred.append(arr)
            return
        if arr._resource is None and (self._ctx is None or not self._rt.returned):
            return  # (nothing to give back: an empty array, or a second release)
        if self._ctx is None or _shutting_down():
            # The close destroyed the memory with the rest (or the process is ending): nothing to give back, and
            # no lock to take. At interpreter exit a daemon thread frozen while it held the lock would hold it
            # for ever, and a finalizer waiting on it hung the exit (an adversary's: 8 of 8 runs).
            arr.__dict__["_resource"] = None  # (no call: DeviceArray.__setattr__ is one)
            return
        with self._lock:
            if self.closed:  # the close destroyed it with the rest
                arr.__dict__["_resource"] = None  # (no call: DeviceArray.__setattr__ is one)
                return
            rt = self._rt
            res = arr._resource  # (read after the last call: a handler's reclaim_dead may have taken it)
            if res is not None:
                # The memory changes owner in statements with no call
                # between them: whatever interrupts this, it is held by the
                # array or by the runtime, never by both or neither. (What an
                # interruption leaves in rt.returned is taken back by the
                # next release or allocation.)
                if res.serial in rt.held:  # (no longer the array's: arrays.reclaim_dead must not take it)
                    del rt.held[res.serial]
                rt.returned += [res]
                arr.__dict__["_resource"] = None  # (no call: DeviceArray.__setattr__ is one)
            self._guarded(arrays.take_back, rt)


# Why a handler's transfer is refused inside a call (refuse_inside_a_call)
_STAGING = "it would use the device's fence and staging buffers, which the call is using"

# Every open Device, to close them at interpreter exit and to abandon them in
# a forked child (the child must not touch, let alone destroy, Vulkan objects
# that belong to its parent's driver state).
_live: "weakref.WeakSet[DeviceOwner]" = weakref.WeakSet()
# Contexts of devices abandoned after a timeout whose work never finished:
# kept, never destroyed (destroying memory a running kernel uses is undefined).
_abandoned: list[Context] = never_freed([])
# The numpy arrays an abandoned device's kept imports use: the device may
# still read or write their memory, so it is never freed.
_abandoned_arrays: list[np.ndarray] = never_freed([])


# Each open device's context and runtime until its close completes, beside a weak reference to its owner: a
# close interrupted in a collected Device's finalizer (a Ctrl-C landing anywhere in __del__, its first
# instruction included) leaves nobody to call close() again and the weak _live set forgets it, so the next
# Device opened, or the interpreter's exit, completes it (a leaked device keeps its driver threads and memory;
# its kept imports, held here, keep the numpy memory they import meanwhile). Nothing here may lead back to
# the Device (its runtime holds its arrays, which hold it): a Device keeping its own arrays was never freed.
_open: "dict[int, tuple[Callable[[], DeviceOwner | None], Context, KeptImports | _NoImports]]" = {}


# devices()' instances, each in a namespace (`instance`, once made; `done`, once listed): one whose close an
# interruption stopped stays here for the orphans' sweep.
_stray: list[types.SimpleNamespace] = []


def _nobody() -> None:
    """The owner of a context whose opening failed (a dead weak reference's answer)."""
    return None


class _NoImports:
    """The kept imports of a context whose runtime was never made: none to drop."""

    def drop(self) -> None:
        """Nothing to drop."""


_NO_IMPORTS: Any = _NoImports()


def _finish_orphans() -> None:
    """Complete the close of every device whose owner was collected before its close completed. The lock
    order is the context's lock, then OPENING (Context.close closes its instance under OPENING), so this runs
    outside OPENING: the cycle collector clears the weak reference before the finalizer closes the context,
    and that close may be under way in another thread (this waits for it, then finds the entry gone). The
    entry goes once the close is done: an interrupted one stays, completed next time (every step of it
    idempotent); and devices()' instances whose close an interruption stopped."""
    with vk_instance.OPENING:  # (devices() lists under it: its own entry is done only in its cleanup)
        for held in [h for h in _stray if h.done]:
            if hasattr(held, "instance"):
                held.instance.close()
            _stray.remove(held)
    for key, entry in list(_open.items()):
        owner, ctx, imports = entry
        if owner() is not None:
            continue
        with ctx._lock:
            if _open.get(key) is entry:  # (else closed meanwhile: closing again would only repeat idempotent steps)
                ctx.close()
                imports.drop()
                _open.pop(key, None)


def _close_all() -> None:
    _finish_orphans()
    for dev in list(_live):
        dev._close("the interpreter exited")


# The locks a fork holds, per forking thread (`_hold_every_lock`).
_held: dict[int, list[Any]] = {}
# How long a fork waits for the calls in flight before it goes ahead without them.
FORK_WAIT_S = 10.0


def _hold_every_lock() -> None:
    # A fork waits for the calls in flight and for devices being opened or listed, so that no child
    # starts inside one (with the driver's own locks held). All or nothing: a thread inside a call
    # on one device may wait for another's lock (a DeviceArray released by the garbage collector),
    # so a lock not free soon lets the others go and the fork tries again, and after FORK_WAIT_S it
    # goes ahead holding none (#35).
    deadline = time.monotonic() + FORK_WAIT_S
    got = _every_lock()
    while got is None and time.monotonic() < deadline:
        time.sleep(0.001)
        got = _every_lock()
    _held[threading.get_ident()] = got or []


def _every_lock() -> list[Any] | None:
    """vk/instance.py's OPENING, then every live device's lock (listed under OPENING: no device is
    added meanwhile), taken; or None, having taken none, where one is not free within 10 ms."""
    opening = vk_instance.OPENING
    if not opening.acquire(timeout=0.01):
        return None
    got: list[Any] = [opening]
    for lock in [dev._lock for dev in sorted(list(_live), key=id)]:
        if not lock.acquire(timeout=0.01):
            for held in reversed(got):
                held.release()
            return None
        got.append(lock)
    return got


def _release_every_lock() -> None:
    for lock in reversed(_held.pop(threading.get_ident(), [])):
        lock.release()


def _abandon_all_in_child() -> None:
    # Another thread of the parent may have held a device's lock at the
    # fork: the child gets fresh locks, and devices it can never use.
    _held.clear()
    for dev in list(_live):
        dev._lock = threading.RLock()
        dev._ctx = None
        dev._closed_why = "it belongs to the parent process; this is a forked child"
    _live.clear()
    _open.clear()  # (the parent's contexts: never touched here)
    _stray.clear()  # (and the parent's instances)


atexit.register(_close_all)
os.register_at_fork(before=_hold_every_lock, after_in_parent=_release_every_lock,
                    after_in_child=_abandon_all_in_child)


def _shutting_down() -> bool:
    import sys

    return sys.is_finalizing()


def devices() -> list[dict[str, Any]]:
    """Every Vulkan device seen: index, name, type, API version, the limits
    vkrope depends on, and why a device cannot be used (empty when it can)."""
    with vk_instance.OPENING:  # (a fork waits for it: the loader is busy until the instance is gone)
        held = types.SimpleNamespace(done=False)  # (the instance joins it first thing, and it joins _stray before:
        _stray.append(held)  # an interruption anywhere, its close's too, leaves it to the orphans' sweep)
        try:
            return [d.facts() for d in Instance(False, into=held).physical_devices()]
        finally:
            held.done = True
            if hasattr(held, "instance"):
                held.instance.close()
            _stray.remove(held)


__all__ = ["DeviceOwner", "DeviceMemory", "devices"]
