"""The one module that talks to the `vulkan` package (cffi bindings).

It loads the package lazily (so `import vkrope` works without a Vulkan
loader), turns failed calls into vkrope's exceptions naming the call and the
VkResult, counts live handles per type for the leak tests, and hides the
binding's quirks:

- `vulkan.VK_WHOLE_SIZE` is -1 and overflows unsigned fields: callers pass
  real sizes (see `map_memory`).
- Handle-creating calls return the handle after the C call; `create`
  passes an out-pointer the owner already holds instead, so no handle is
  lost to an exception between the two.
- `vkWaitForFences` raises `VkTimeout`: `wait_fence` turns it into
  `DeviceTimeoutError`.
- Its wrapper converts every argument on every call: the calls of every
  submission go through `call_direct` with prebuilt cffi arguments.
- Structs copied into arrays lose the keepalives of their pointer fields
  (realitix/vulkan issue #94): callers bind nested structs and arrays to
  named locals until the call returns; `array` builds cffi arrays here.
"""

from __future__ import annotations

import os
import threading
from collections import defaultdict
from types import ModuleType
from typing import Any, Callable

from ..errors import (
    VkropeError,
    DeviceLostError,
    DeviceTimeoutError,
    OutOfDeviceMemoryError,
    VulkanError,
    VulkanUnavailableError,
)

INSTALL_HINT = (
    "install a Vulkan loader and a driver, e.g. on Debian/Ubuntu: "
    "sudo apt-get install libvulkan1 mesa-vulkan-drivers"
)

_vk: ModuleType | None = None
_load_error: str | None = None
_lock = threading.Lock()

# Live Vulkan handles per object type, for the leak tests (`live_handles`).
# Updated with plain dict operations right next to the store or clear of
# the handle they count, never through a call: no interruption can fall
# between the two (see `destroy_handles`), and no thread switch either.
LIVE: defaultdict[str, int] = defaultdict(int)


# Whether this process opened a Vulkan instance (`opened_vulkan`), and whether it was forked from
# one that had: some drivers cannot start Vulkan again in such a child (NVIDIA's: #35), which then
# deserves a message that says so (`explain_fork`).
OPENED_VULKAN = False
FORKED_FROM_VULKAN = False


def opened_vulkan() -> None:
    """Note that this process opened a Vulkan instance (its forked children are told, `explain_fork`)."""
    global OPENED_VULKAN
    OPENED_VULKAN = True


def _fresh_locks_in_child() -> None:
    # A thread of the parent may have held one at the fork.
    global _lock, FORKED_FROM_VULKAN
    _lock = threading.Lock()
    FORKED_FROM_VULKAN = FORKED_FROM_VULKAN or OPENED_VULKAN


os.register_at_fork(after_in_child=_fresh_locks_in_child)


def explain_fork(exc: VulkanError) -> VulkanError:
    """`exc`, or, for VK_ERROR_INITIALIZATION_FAILED in a child forked from
    a process that had opened Vulkan, the same error (same class, call and
    result) saying why that may be and what to do instead."""
    if not FORKED_FROM_VULKAN or exc.result != "VK_ERROR_INITIALIZATION_FAILED":
        return exc
    return type(exc)(
        f"{exc}: this process was forked (os.fork, or multiprocessing's 'fork' start method) from one that had "
        "opened Vulkan, and some drivers cannot start Vulkan again in such a child (NVIDIA's cannot); start "
        "workers with multiprocessing.get_context('spawn') or 'forkserver', or use vkrope only in the children",
        exc.call, exc.result)


def load() -> ModuleType:
    """Return the `vulkan` module, or raise `VulkanUnavailableError` saying why."""
    global _vk, _load_error
    with _lock:
        if _vk is not None:
            return _vk
        if _load_error is None:
            try:
                import vulkan  # noqa: PLC0415  (lazy on purpose)
            except ImportError as exc:
                _load_error = f"the 'vulkan' Python package is not installed ({exc}); pip install vulkan"
            except OSError as exc:
                _load_error = f"no Vulkan loader (libvulkan.so.1) could be loaded ({exc}); {INSTALL_HINT}"
            else:
                _vk = vulkan
                return vulkan
        raise VulkanUnavailableError(_load_error)


def vk() -> ModuleType:
    """The loaded `vulkan` module (call `load()` first)."""
    if _vk is None:
        return load()
    return _vk


def result_name(exc: BaseException) -> str:
    """The VkResult name behind one of the binding's exceptions."""
    name = type(exc).__name__  # e.g. VkErrorOutOfDeviceMemory
    out = "VK"
    for ch in name[2:]:
        out += ("_" + ch) if ch.isupper() else ch.upper()
    return out


def translate(call: str, exc: BaseException) -> Exception:
    """Map an exception of the binding to vkrope's tree, naming the call."""
    mod = vk()
    result = result_name(exc)
    message = f"{call} failed with {result}"
    if isinstance(exc, (mod.VkErrorOutOfDeviceMemory, mod.VkErrorOutOfHostMemory)):
        return OutOfDeviceMemoryError(message, call, result)
    if isinstance(exc, mod.VkErrorDeviceLost):
        return DeviceLostError(message, call, result)
    if isinstance(exc, mod.VkTimeout):
        return DeviceTimeoutError(message, call, result)
    return VulkanError(message, call, result)


# Fault injection for the reliability tests: name of a vk* call -> exception
# factory raised instead of calling it (once).
_faults: dict[str, Callable[[], BaseException]] = {}


def inject_fault(call: str, make_exc: Callable[[], BaseException]) -> None:
    """Make the next `call(call_name, ...)` raise `make_exc()` (tests only)."""
    _faults[call] = make_exc


def _injected(name: str) -> None:
    """Raise the fault a test injected for call `name` (once), translated as
    that call's own failure would be."""
    if not _faults:
        return
    fault = _faults.pop(name, None)
    if fault is None:
        return
    mod = vk()
    try:
        raise fault()
    except (mod.VkError, mod.VkException) as exc:
        raise translate(name, exc) from exc


def call(name: str, *args: Any) -> Any:
    """Call `vulkan.<name>(*args)`, translating failures to vkrope errors."""
    mod = vk()
    _injected(name)
    try:
        return getattr(mod, name)(*args)
    except (mod.VkError, mod.VkException) as exc:
        raise translate(name, exc) from exc


def call_direct(name: str, *args: Any) -> int:
    """`name` called on the loader's C function itself, its arguments cffi
    values already (handles, arrays, struct pointers): none of the package
    wrapper's per-call conversion (about 10 of the 24 us an empty submission
    took through it on lavapipe), for the calls every submission makes.
    Failures (and injected faults) as `call`'s; returns the VkResult when it
    is a status (VK_SUCCESS, VK_NOT_READY), VK_TIMEOUT raising as `call` does."""
    mod = vk()
    _injected(name)
    result = getattr(mod.lib, name)(*args)
    if result < 0 or result == mod.VK_TIMEOUT:
        raise translate(name, mod.exception_codes[result]())
    return result


def call_fn(name: str, fn: Callable[..., Any], *args: Any) -> Any:
    """Like `call` for an extension function obtained through a proc address."""
    mod = vk()
    try:
        return fn(*args)
    except (mod.VkError, mod.VkException) as exc:
        raise translate(name, exc) from exc


def live_handles() -> dict[str, int]:
    """Live Vulkan handles per type created by vkrope (non-zero entries):
    exact whatever interrupts a destroy or a create: every handle is made
    through `create` (the instance, the device and the debug messenger too,
    destroyed by their owners when opening is interrupted)."""
    return {k: v for k, v in list(LIVE.items()) if v}


def create(owner: Any, attr: str, kind: str, fn: str | tuple[str, Any], *args: Any, memory_of: Any = None) -> Any:
    """Create one handle of type `kind` with `vk<fn>(*args, out)`, store it
    as `owner.<attr>` and count it (`fn` a pair (name, C function): an
    extension's function from `instance_function`, called itself, its
    failure raised as `call`'s). The binding writes the handle into `out`,
    which `owner` holds before the call: an exception that lands right after
    the call returns (a signal handler's, KeyboardInterrupt) cannot lose the
    handle, `destroy_handles` finds it there. The owner must already be
    registered with whoever destroys it. `memory_of` (the Context) counts
    a memory object in its `allocations` together with the handle."""
    pending = owner.__dict__.setdefault("_pending", {})
    out = pending.get(attr)
    if out is None or out[0] == vk().ffi.NULL:  # else: made by an interrupted call, take it
        out = pending[attr] = vk().ffi.new(f"{kind}*")
        try:
            _call_into(fn, *args, out)
        except VkropeError:
            out[0] = vk().ffi.NULL  # a failed call leaves its output undefined: nothing to destroy
            del pending[attr]
            raise
    handle = out[0]
    # From here to the end no call: the handle is stored and counted (and a
    # memory object counted against its context's allocations) together.
    owner.__dict__[attr] = handle
    LIVE[kind] += 1
    if memory_of is not None:
        memory_of.allocations += 1
    del pending[attr]
    return handle


def _call_into(fn: str | tuple[str, Any], *args: Any) -> None:
    """`call(fn, *args)`, or where `fn` is (name, C function) that function called and its failure raised as
    `call` raises it."""
    if isinstance(fn, str):
        call(fn, *args)
        return
    name, c_function = fn
    _injected(name)
    result = c_function(*args)
    if result < 0:
        mod = vk()
        raise translate(name, mod.exception_codes[result]())


def destroy_handles(owner: Any, device: Any, handles: tuple[tuple[str, Any, str], ...],
                    memory_of: Any = None) -> None:
    """Release `owner`'s handles in the order given, each idempotently: the
    attribute is swapped to None, the live count of `kind` drops (and, for
    memory, the `allocations` of `memory_of`, the Context), then `vk<destroy>(device,
    handle, NULL)` runs (`vk<destroy>(handle, NULL)` where `device` is None: the
    instance's and the device's own). `handles` holds `(attribute, destroy function name,
    kind)` triples (or the C function itself, an extension's from `instance_function`:
    the debug messenger's, whose parent, `device` here, is the instance). A handle that `create` made but could not store yet is
    destroyed too (it was not counted).

    Why it is written this way: a signal handler's exception can surface
    after any call returns (CPython >= 3.10 checks for pending signals only
    at calls and backward jumps, not at plain stores: hence
    python_requires >= 3.10). Between clearing the attribute and the destroy
    call there is no call at all (dict stores, then the C function itself,
    not the binding's Python wrapper), so an interruption either leaves the
    handle in place (and counted) for the next destroy or finds it
    destroyed (and uncounted): never cleared and still alive, never
    destroyed twice, never miscounted."""
    state = owner.__dict__
    pending = state.get("_pending") or {}
    if not pending and all(state[attr] is None for attr, _, _ in handles):
        return  # (nothing made, or all destroyed: an owner whose binding never loaded, without libvulkan, too)
    mod = vk()
    lib, null = mod.lib, mod.ffi.NULL
    for attr, destroy, kind in handles:
        fn = getattr(lib, destroy) if isinstance(destroy, str) else destroy
        out = pending.get(attr)
        handle = state[attr]
        counted = handle is not None
        if handle is None and out is not None and out[0] != null:
            handle = out[0]
        if handle is None:
            continue
        state[attr] = None
        if out is not None:
            out[0] = null
        if counted:
            LIVE[kind] -= 1
            if kind == "VkDeviceMemory" and memory_of is not None:
                memory_of.allocations -= 1
        if device is None:
            fn(handle, null)
        else:
            fn(device, handle, null)


def instance_function(instance: Any, name: str) -> Any:
    """The raw C function pointer of instance-level extension function
    `name` (calling it runs no Python code, unlike the binding's wrappers)."""
    mod = vk()
    fn = mod.lib.vkGetInstanceProcAddr(instance, name.encode())
    if fn == mod.ffi.NULL:
        raise VulkanError(f"vkGetInstanceProcAddr found no {name}", "vkGetInstanceProcAddr", "VK_ERROR_EXTENSION_NOT_PRESENT")
    return mod.ffi.cast(f"PFN_{name}", fn)


def array(ctype: str, items: list[Any]) -> Any:
    """A cffi array `ctype[]` holding `items` (keep the result alive)."""
    return vk().ffi.new(f"{ctype}[]", items)


def map_memory(device: Any, memory: Any, size: int) -> Any:
    """Map `size` bytes (never VK_WHOLE_SIZE: the binding sizes the buffer by it)."""
    return call("vkMapMemory", device, memory, 0, size, 0)


def wait_fence(device: Any, fences: Any, timeout_ns: int) -> None:
    """Wait for the fence of `fences` (a cffi `VkFence[1]`) at most `timeout_ns`; raise `DeviceTimeoutError` after."""
    call_direct("vkWaitForFences", device, 1, fences, 1, timeout_ns)
