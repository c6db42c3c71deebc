"""The worker: the only process in which an implementation's code runs.

One worker per implementation, started by :mod:`specformer.runner.supervisor` from a fork
server that has already imported torch (so a start or a restart takes milliseconds).
The worker

* sends its standard output and error to a pipe the checker drains (keeping a short
  tail), and writes a traceback there if it crashes (``faulthandler``);
* confines itself before any of the implementation's code runs (:mod:`specformer.runner.confine`):
  neither it nor any process it starts may signal the harness's processes or leave its
  process group;
* leaves its memory limit to the supervisor, which watches what it really uses (no
  address-space limit: the CUDA build of torch and OpenBLAS reserve far more than they use);
* loads the implementation (:func:`specformer.runner.loading.load_implementation`), then
  answers calls: it moves the inputs it received (copies, never the checker's tensors)
  to the device, calls the operation, checks that no input was modified in place, and
  sends back the result through the plain-data codec of :mod:`specformer.runner.wire`.

Whatever the implementation does here (raise any ``BaseException``, exit, crash, hang,
patch torch) stays here: the checker computes every expected value and decides every
verdict in its own process, and treats a silent worker as a failure of the
implementation. This module does not decide outcomes.
"""

from __future__ import annotations

import dataclasses
import faulthandler
import inspect
import io
import os
import pickle
import signal
import sys
import time
import traceback
from typing import Any, Callable, Iterator

import torch

from specformer.runner import confine, wire
from specformer.runner.loading import ImplementationLoadError, load_implementation
from specformer.protocol import CapabilityError, NotApplicable, declared_capabilities, provided_operations, versions

#: Longest message kept from an exception raised by the implementation.
MAX_MESSAGE = 2000


def safe_str(value: Any, limit: int = MAX_MESSAGE) -> str:
    """``str(value)``, cut to ``limit`` characters; never raises."""
    try:
        text = str(value)
    except BaseException as exc:  # noqa: BLE001 - a hostile __str__
        text = f"<unprintable: {type(exc).__name__}>"
    return text if len(text) <= limit else text[:limit] + " [cut]"


_ACCEPTS: dict[tuple[int, str], bool] = {}


def accepts(fn: Callable[..., Any] | None, parameter: str) -> bool:
    """Whether ``fn`` takes a keyword argument ``parameter`` (by name or through ``**kwargs``)."""
    key = (id(getattr(fn, "__func__", fn)), parameter)
    if key not in _ACCEPTS:
        try:
            params = inspect.signature(fn).parameters.values()  # type: ignore[arg-type]
            _ACCEPTS[key] = any(p.name == parameter or p.kind is inspect.Parameter.VAR_KEYWORD for p in params)
        except (TypeError, ValueError):
            _ACCEPTS[key] = False
    return _ACCEPTS[key]


# -- inputs: device moves and in-place checks --------------------------------------------


def tensors_in(value: Any, path: str, seen: set[int] | None = None) -> Iterator[tuple[str, torch.Tensor]]:
    """Every tensor inside ``value`` (tuples, lists, dicts, dataclasses), with a readable path."""
    if isinstance(value, (str, int, float, type(None))) or wire.plain(value):
        return
    seen = set() if seen is None else seen
    if id(value) in seen:
        return
    if isinstance(value, torch.Tensor):
        seen.add(id(value))
        yield path, value
    elif isinstance(value, (tuple, list)):
        for i, item in enumerate(value):
            yield from tensors_in(item, f"{path}[{i}]", seen)
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from tensors_in(item, f"{path}[{key!r}]", seen)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            yield from tensors_in(getattr(value, f.name), f"{path}.{f.name}", seen)


def to_device(value: Any, device: torch.device, memo: dict[int, Any] | None = None) -> Any:
    """``value`` with every tensor moved to ``device``; shared tensors stay shared.

    ``memo`` receives each original object's id mapped to its moved copy.
    """
    return wire.rebuild(value, lambda t: t.to(device), memo)


def plain_fingerprint(value: Any) -> bytes:
    """Everything in ``value`` but its tensors' contents, as bytes: a call that changes a list, dict,
    set or bytearray it was given (or a field of a dataclass), or puts another tensor in one,
    changes these bytes. Tensors' contents are compared byte for byte apart (:func:`tensors_in`).

    A value of atoms in lists, tuples and dicts (:func:`wire.plain`: a corpus, a list of BPE merges) is pickled
    as it is, without the walk, and without pickle's memo, so that two equal lists count the same whether or not
    they are one object; a value that stops being plain changes its bytes."""
    if wire.plain(value):
        buffer = io.BytesIO()
        pickler = pickle.Pickler(buffer, protocol=4)
        pickler.fast = True  # no memo: equal values, equal bytes (a plain value cannot hold itself)
        pickler.dump(value)
        return b"plain " + buffer.getvalue()

    def plain(v: Any) -> Any:
        if isinstance(v, torch.Tensor):
            return ("tensor", id(v))
        if v is None or isinstance(v, (str, bytes, bool, int, float)):
            return v
        if isinstance(v, (list, tuple)):
            return (type(v).__name__, [plain(item) for item in v])
        if isinstance(v, dict):
            return ("dict", [(plain(key), plain(item)) for key, item in v.items()])
        if isinstance(v, (set, frozenset)):
            return (type(v).__name__, sorted(repr(item) for item in v))
        if isinstance(v, bytearray):
            return ("bytearray", bytes(v))
        if dataclasses.is_dataclass(v) and not isinstance(v, type):
            return (type(v).__name__, [(f.name, plain(getattr(v, f.name))) for f in dataclasses.fields(v)])
        return (type(v).__name__, repr(v))

    return pickle.dumps(plain(value), protocol=4)


# -- one request -------------------------------------------------------------------------


#: Folders whose frames are the harness's or a library's, never the user's code.
_NOT_USER = (os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep, os.path.dirname(torch.__file__) + os.sep)


def _user_frame(frames: traceback.StackSummary) -> traceback.FrameSummary | None:
    """The innermost frame in the implementation's own code (not this harness, not torch)."""
    for frame in reversed(frames):
        if not os.path.abspath(frame.filename).startswith(_NOT_USER):
            return frame
    return None


def _definition(method: Any) -> str:
    """``file.py:line`` where ``method`` is defined, or ``""``."""
    try:
        fn = inspect.unwrap(getattr(method, "__func__", method))
        return f"{inspect.getsourcefile(fn)}:{inspect.getsourcelines(fn)[1]}"
    except (TypeError, OSError, ValueError):
        return ""


def _signature_mismatch(exc: BaseException, method: Any, name: str, args: tuple[Any, ...],
                        kwargs: dict[str, Any]) -> str | None:
    """When calling ``method`` failed on its arguments themselves: what the suite passed, and what it takes."""
    if not isinstance(exc, TypeError) or exc.__traceback__ is None:
        return None
    frames = traceback.extract_tb(exc.__traceback__)
    if len(frames) != 1:  # raised inside the method, not by binding its arguments
        return None
    try:
        inspect.signature(method).bind(*args, **kwargs)
        return None
    except TypeError:
        pass
    except ValueError:
        return None
    try:
        takes = f"{name}{inspect.signature(method)}"
    except (TypeError, ValueError):
        takes = name
    keywords = f" and the keywords {', '.join(kwargs)}" if kwargs else ""
    return (f"{name}() does not accept the arguments the suite passes ({safe_str(exc, 300)}): the suite passed "
            f"{len(args)} positional arguments{keywords}; yours is {takes}; the protocol's signature is in the "
            "family's protocol page (`specformer new FAMILY` writes it)")


def _attribute_hint(exc: BaseException) -> str:
    """For ``params.heads``: the attributes that exist, and the closest (did you mean)."""
    if not isinstance(exc, AttributeError) or getattr(exc, "obj", None) is None or not getattr(exc, "name", None):
        return ""
    import difflib

    obj = exc.obj
    try:
        if dataclasses.is_dataclass(obj):
            names = [f.name for f in dataclasses.fields(obj)]
            kind = "fields"
        else:
            names = [n for n in dir(obj) if not n.startswith("_")]
            kind = "attributes"
    except Exception:  # noqa: BLE001 - a hostile __dir__
        return ""
    wrong = str(exc.name)
    close = difflib.get_close_matches(wrong, names, n=1, cutoff=0.5) or \
        [n for n in names if wrong.startswith(n) or n.startswith(wrong)][:1]
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return f" ({type(obj).__name__} has the {kind} {', '.join(names[:30])}{hint})"


def _raised(exc: BaseException, mismatch: str | None = None, definition: str = "") -> dict[str, Any]:
    frames = traceback.extract_tb(exc.__traceback__)
    user = _user_frame(frames)
    frame = user or (frames[-1] if frames else None)
    where = f"{frame.filename if user else os.path.basename(frame.filename)}:{frame.lineno}" if frame else ""
    if mismatch:
        return {"status": "raised", "type": "TypeError", "message": mismatch, "where": definition or where}
    if isinstance(exc, SystemExit):
        return {"status": "raised", "type": "SystemExit", "message": f"exit status {safe_str(exc.code)}",
                "where": where}
    return {"status": "raised", "type": type(exc).__qualname__,
            "message": safe_str(exc) + _attribute_hint(exc) + _confinement_hint(exc), "where": where}


def _confinement_hint(exc: BaseException) -> str:
    """For a refusal of the worker's confinement: what it refuses (:mod:`specformer.runner.confine`)."""
    if isinstance(exc, PermissionError) and exc.filename is None and confine.confined():
        return (" [the worker is confined: no process of an implementation may signal the checker's processes, "
                "leave its process group (setsid, setpgid) or trace another process]")
    return ""


#: Words of the errors after which a CUDA (or other accelerator) context is unusable: every later call
#: in the process fails too, so the worker answers once and exits, and the next call gets a fresh one.
_DEVICE_LOST = ("CUDA error", "device-side assert", "CUBLAS_STATUS", "cuDNN error", "HIP error",
                "an illegal memory access", "unspecified launch failure")


def device_lost(exc: BaseException) -> bool:
    """Whether ``exc`` is an accelerator error that leaves the process's device context unusable."""
    if not isinstance(exc, RuntimeError) or isinstance(exc, getattr(torch.cuda, "OutOfMemoryError", ())):
        return False
    message = safe_str(exc, 4000)
    return any(word in message for word in _DEVICE_LOST)


def _synchronize(device: torch.device) -> None:
    """Wait for the device's queued kernels: an asynchronous kernel error (a device-side assert) then
    surfaces as the call's own exception, not later, in the in-place check of its inputs."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def call(impl: Any, request: dict[str, Any], arrays: str = "torch") -> dict[str, Any]:
    """Run one call request against ``impl``; the answer as a plain dict (never raises).

    ``arrays`` is the array library the implementation declared: its arguments are converted
    to it before the call, and its answer's arrays back to torch after (:mod:`specformer.runner.arrays`).
    """
    method = getattr(impl, request["method"], None)
    if not callable(method):
        return {"status": "missing"}
    received: list[tuple[torch.Tensor, tuple[int, ...], bytes]] = []  # the inputs as they arrived

    def arrive(packed: Any) -> torch.Tensor:
        tensor = wire.unpack(packed)
        if isinstance(packed, wire.PackedTensor):
            received.append((tensor, tuple(packed.shape), packed.data))
        return tensor

    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    args, kwargs = wire.rebuild((tuple(request["args"]), dict(request["kwargs"])), arrive)
    applied = {k: v for k, v in request.get("optional", {}).items() if accepts(method, k)}
    kwargs.update(applied)
    # an operation written before a protocol change: the harness does the change's part, or the row is not applicable
    adaptation = versions.adapt(request["method"], kwargs, lambda keyword: accepts(method, keyword))
    if adaptation.refusal is not None:
        return {"status": "older-protocol", "message": adaptation.refusal}
    kwargs = adaptation.kwargs
    given = [t for t, _, _ in received]
    device = torch.device(request.get("device", "cpu"))
    if device.type != "cpu":
        memo: dict[int, Any] = {}
        try:
            args, kwargs = to_device((args, kwargs), device, memo)
        except BaseException as exc:  # noqa: BLE001 - a device that is full, missing or lost: no call was made
            answer = _raised(exc)
            answer["message"] = f"moving the inputs to {device} failed, before any call: {answer['message']}"
            if device_lost(exc):
                answer["device_lost"] = True
            return answer
        given = [memo[id(t)] for t in given]
    arguments = list(zip(_argument_names(request, args), args)) + list(kwargs.items())
    plain_before = [plain_fingerprint(argument) for _, argument in arguments]  # lists, dicts: checked after the call
    call_args, call_kwargs = args, kwargs
    if arrays != "torch":
        from specformer.runner.arrays import to_library

        try:
            call_args, call_kwargs = to_library((args, kwargs), arrays)
        except BaseException as exc:  # noqa: BLE001 - a dtype or device the library cannot hold: no call was made
            answer = _raised(exc)
            answer["message"] = (f"the arguments could not be converted to its declared arrays ({arrays}), before "
                                 f"any call: {answer['message']}")
            return answer
    flops: int | None = None
    created: int | None = None
    try:
        if request.get("count_flops"):
            from specformer.flops import count_flops

            with count_flops() as counted:
                value = method(*call_args, **call_kwargs)
                _synchronize(device)
            flops = counted[0]
        elif request.get("count_created"):
            from specformer.created import count_created

            with count_created() as created_elements:
                value = method(*call_args, **call_kwargs)
                _synchronize(device)
            created = created_elements[0]
        else:
            value = method(*call_args, **call_kwargs)
            _synchronize(device)
        if arrays != "torch":
            from specformer.runner.arrays import ArrayConversionError, from_library

            try:
                value = from_library(value)
            except ArrayConversionError as exc:
                return {"status": "unencodable", "message": f"its answer could not be converted from {arrays} to "
                                                            f"torch: {safe_str(exc)}"}
        if adaptation.move_to is not None or adaptation.convert_to is not None:
            try:
                value = _adapted_answer(value, adaptation)
            except Exception as exc:  # noqa: BLE001 - an answer that is not what the protocol asks for
                return {"status": "unencodable", "message": f"its answer could not be moved to {adaptation.move_to} "
                                                            f"(the harness does that for {request['method']}, written "
                                                            f"before a protocol change): {safe_str(exc, 300)}"}
    except NotApplicable as exc:
        return {"status": "not-applicable", "message": safe_str(exc)}
    except BaseException as exc:  # noqa: BLE001 - everything the implementation raises is its answer
        if device_lost(exc):
            answer = _raised(exc)
            answer["message"] += (" [a device error: the process's device context is lost, so its worker was "
                                  "restarted; nothing after it was asked of the same process]")
            answer["device_lost"] = True
            return answer
        mismatch = _signature_mismatch(exc, method, request["method"], args, kwargs)
        return _raised(exc, mismatch, _definition(method) if mismatch else "")
    changed = []
    for i, (now, (_, shape, before)) in enumerate(zip(given, received)):
        try:
            same = tuple(now.shape) == shape and wire.tensor_bytes(now) == before
        except Exception:  # noqa: BLE001 - a storage the implementation replaced or freed
            same = False
        if not same:
            changed.append(i)
    mutated = []
    if changed:
        names = list(request.get("names", ()))
        paths = [path for path, _ in tensors_in((args, kwargs), "")]
        mutated = [_readable(paths[i], names) for i in changed if i < len(paths)]
    for (name, argument), before in zip(arguments, plain_before):
        try:
            same = plain_fingerprint(argument) == before
        except Exception:  # noqa: BLE001 - an argument the implementation broke beyond reading
            same = False
        if not same and name not in mutated:
            mutated.append(name)
    answer = {"status": "ok", "value": value, "flops": flops, "mutated": mutated, "applied": sorted(applied)}
    if created is not None:
        answer["created"] = created
    return answer


def _adapted_answer(value: Any, adaptation: versions.Adaptation) -> Any:
    """The answer of an operation written before a protocol change, with the change's part done by the harness:
    its tensors moved to the device under test, its floating tensors converted to the dtype asked for."""
    def adapted(tensor: torch.Tensor) -> torch.Tensor:
        if adaptation.convert_to is not None and tensor.is_floating_point():
            tensor = tensor.to(dtype=adaptation.convert_to)
        return tensor.to(adaptation.move_to) if adaptation.move_to is not None else tensor

    return wire.rebuild(value, adapted)


def _argument_names(request: dict[str, Any], args: tuple[Any, ...]) -> list[str]:
    """The protocol's names of the positional arguments (``argument N`` past the names given)."""
    names = list(request.get("names", ()))
    return [names[i] if i < len(names) else f"argument {i + 1}" for i in range(len(args))]


def _readable(path: str, names: list[str]) -> str:
    """``[0][2].w_q`` -> ``v`` / ``params.w_q``: positional paths named after the protocol."""
    if path.startswith("[0]["):
        index, _, rest = path[4:].partition("]")
        name = names[int(index)] if int(index) < len(names) else f"argument {int(index) + 1}"
        return name + rest
    if path.startswith("[1]["):
        key, _, rest = path[4:].partition("]")
        return key.strip("'\"") + rest
    return path


def load(spec: str) -> tuple[Any, dict[str, Any]]:
    """Load the implementation named ``spec``; return it and the answer to send."""
    try:
        loaded = load_implementation(spec)
    except BaseException as exc:  # noqa: BLE001 - an import that exits or raises anything
        if isinstance(exc, SystemExit):
            message = f"importing it called exit (status {safe_str(exc.code)})"
        else:
            message = safe_str(exc) if isinstance(exc, ImplementationLoadError) else f"{type(exc).__name__}: {safe_str(exc)}"
        return None, {"status": "load-error", "message": message}
    try:
        capabilities = loaded.capabilities  # read once, when it loaded
        operations = sorted(provided_operations(loaded.obj, capabilities))
    except BaseException as exc:  # noqa: BLE001 - a malformed declaration, or one whose property raises
        what = safe_str(exc) if isinstance(exc, CapabilityError) else f"{type(exc).__name__}: {safe_str(exc)}"
        return None, {"status": "load-error", "message": f"its capability declaration is malformed: {what}"}
    earlier = versions.earlier_signatures(operations, lambda op, keyword: accepts(getattr(loaded.obj, op, None),
                                                                                  keyword))
    return loaded.obj, {"status": "loaded", "name": safe_str(loaded.name, 200), "operations": operations,
                        "capabilities": capabilities.to_plain() if capabilities is not None else None,
                        **({"protocol_notes": earlier} if earlier else {})}


def _answer(reply: dict[str, Any]) -> bytes:
    try:
        return wire.encode(reply)
    except BaseException as exc:  # noqa: BLE001 - a value whose iteration raises
        return wire.encode({"status": "unencodable", "message": f"{type(exc).__name__}: {safe_str(exc, 300)}",
                            "id": reply.get("id")})


# -- the process -------------------------------------------------------------------------


def main(channel: int, output: int, spec: str, threads: int = 1, spin_s: float = 0.0, scratch: str | None = None,
         own_cwd: bool = False) -> None:
    """The worker's life: set up, load ``spec``, answer requests on ``channel`` until told to stop.

    ``channel`` is a socket's file descriptor (requests in, answers out); ``output`` the
    write end of the pipe that takes this process's standard output and error. ``scratch``:
    a directory of this worker's own (the checker removes it), its temporary directory
    (``TMPDIR``, ``tempfile``); ``own_cwd``: once the implementation has loaded, work in a fresh,
    empty folder inside it, not the run's (the second process of a determinism check: nothing
    the first wrote to its working or temporary directory is there to be replayed).
    """
    from multiprocessing.connection import Connection

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the checker's to handle
    os.setsid()  # a group of its own: the checker kills it with whatever it started
    os.dup2(output, 1)
    os.dup2(output, 2)
    os.close(output)
    sys.stdout = os.fdopen(1, "w", buffering=1, closefd=False)
    sys.stderr = os.fdopen(2, "w", buffering=1, closefd=False)
    faulthandler.enable(file=sys.stderr)
    torch.set_num_threads(max(1, threads))
    # before the implementation's code runs: it may not signal the harness's processes nor leave this group
    confine.install()
    # JAX takes 75 % of a GPU's memory at its first use unless told not to; every worker of every checker
    # shares the device (a user's own setting is kept)
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    if scratch:
        _own_temporary_directory(scratch)
    conn = Connection(channel)
    impl, reply = load(spec)
    if impl is not None and scratch and own_cwd:
        os.makedirs(os.path.join(scratch, "cwd"), exist_ok=True)
        os.chdir(os.path.join(scratch, "cwd"))
    conn.send_bytes(_answer(reply))
    if impl is None:
        return
    arrays = str((reply.get("capabilities") or {}).get("arrays") or "torch")  # read once, at load
    while True:
        end = time.perf_counter() + spin_s  # poll before sleeping: see supervisor.Worker._spin
        while time.perf_counter() < end and not conn.poll(0):
            pass
        try:
            request = pickle.loads(conn.recv_bytes())
        except (EOFError, OSError):
            return
        if request.get("op") == "stop":
            return
        reply = call(impl, request, arrays)
        reply["id"] = request.get("id")  # the checker takes only the answer to the request it sent
        conn.send_bytes(_answer(reply))
        if reply.get("device_lost"):  # the checker discards this worker too (supervisor.Worker.request)
            return
        del reply
        if request.get("device", "cpu") != "cpu":
            release_device_cache()


def _own_temporary_directory(path: str) -> None:
    """Make ``path`` this process's temporary directory, for it and what it starts."""
    import tempfile

    for name in ("TMPDIR", "TMP", "TEMP"):
        os.environ[name] = path
    tempfile.tempdir = path


#: Device memory a worker may keep cached between calls; above it the cache goes back to the device.
KEEP_CACHED_BYTES = 1 << 30


def release_device_cache() -> None:
    """Give the CUDA caching allocator's unused blocks back to the device when it holds more than
    :data:`KEEP_CACHED_BYTES`: every worker of every checker shares one device, and cached blocks
    of one are memory another cannot allocate."""
    try:
        if torch.cuda.is_initialized() and torch.cuda.memory_reserved() > KEEP_CACHED_BYTES:
            torch.cuda.empty_cache()
    except BaseException:  # noqa: BLE001 - a lost device: the next call's own error says so
        pass


def run_locally(impl: Any, request: dict[str, Any]) -> Any:
    """One call in this process through the same copies and codec as a worker (tests only)."""
    packed = {**request, "args": wire.pack(request.get("args", ())), "kwargs": wire.pack(request.get("kwargs", {}))}
    copied = pickle.loads(pickle.dumps(packed))
    declared = declared_capabilities(impl)
    return wire.decode(_answer(call(impl, copied, declared.arrays if declared is not None else "torch")))
