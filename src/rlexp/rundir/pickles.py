"""The pickles of a run dir, read without running code from them: the objects SB3 pickles into a model
zip (spaces, schedules, the policy class, buffers' classes) and the VecNormalize statistics.

An unpickler imports and calls whatever the pickle names: a tampered ``vecnormalize.pkl`` or model zip
runs its author's code when it is loaded (SB3's ``load`` unpickles with cloudpickle, VecNormalize's with
pickle). rlexp unpickles them with the allowed names only (Python's "restricting globals"): the classes
of rlexp.rundir.trust's allow-list, NumPy's array and random-generator constructors, gymnasium's spaces,
a few builtins without side effects, and the packages the user trusts. A pickle that names anything else
is refused in one line naming it; the model zip's own arrays are torch tensors, which SB3 already reads
with ``torch.load(weights_only=True)``.

Agents saved with gym (RL Zoo's published ones, SB3 1.x) pickle gym's spaces: they are read as gymnasium's
(rlexp.rundir.legacy_spaces), with gym not installed. Entries pickled as functions (cloudpickle's code: the
learning rate, clip range and exploration schedules of SB3 1.x) are never unpickled, whoever is trusted: the
caller hands their values rebuilt from the run's config, as a fresh run builds them. So every serialized entry
of a zip is read by the allow-list or replaced, and SB3's own cloudpickle never sees one.
"""

from __future__ import annotations

import base64
import io
import json
import pickle
import zipfile
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from rlexp.errors import ConfigError
from rlexp.rundir.contract import moved_name
from rlexp.rundir.legacy_spaces import GYM_SPACES
from rlexp.rundir.trust import RLEXP_MODULES, STACKS, _class_module, _in_package, allowed_object, trusted_packages

# constructors a pickle of NumPy arrays, scalars, dtypes and random generators names (no function that
# reads a file: numpy.load is not here)
NUMPY_NAMES = {
    "_frombuffer", "_reconstruct", "scalar", "dtype", "ndarray", "__generator_ctor", "__bit_generator_ctor",
    "__randomstate_ctor", "__pyx_unpickle_SeedSequence", "SeedSequence", "PCG64", "PCG64DXSM", "MT19937",
    "Philox", "SFC64", "Generator", "RandomState",
}  # fmt: skip
SAFE_GLOBALS = {
    ("collections", "deque"),
    ("collections", "OrderedDict"),
    ("builtins", "set"),
    ("builtins", "frozenset"),
    ("builtins", "slice"),
    ("builtins", "range"),
    ("builtins", "complex"),
    ("builtins", "bytearray"),
    ("builtins", "object"),
    ("copyreg", "_reconstructor"),  # (rebuilds an object of a class it is given: that class is checked)
    ("_codecs", "encode"),
    ("functools", "partial"),  # (its function is checked)
    ("torch", "device"),
    ("torch", "float32"),
    ("torch", "float64"),
    ("jax._src.array", "_reconstruct_array"),  # (a JAX array from a NumPy one: sbx's random key)
    ("torch._utils", "_rebuild_tensor_v2"),  # (a tensor from its storage: sb3-contrib 1.x's ARS weights)
}


# classes of RL Zoo's pickles read as rlexp's class of the same behaviour (a zoo run opens without rl_zoo3):
# the zoo's linear schedule is rlexp's (rlexp.builders.schedules.LinearSchedule takes its state)
STAND_INS = {("rl_zoo3.utils", "SimpleLinearSchedule"): ("rlexp.builders.schedules", "LinearSchedule")}


def _storage_from_bytes(data: bytes) -> Any:
    """torch's ``storage._load_from_bytes`` with torch's own data-only loader (it runs torch.load unrestricted)."""
    import torch

    return torch.load(io.BytesIO(data), weights_only=True)


# names a pickle of an older library names -> what reads it as data only here
READERS: dict[tuple[str, str], Any] = {**GYM_SPACES, ("torch.storage", "_load_from_bytes"): _storage_from_bytes}
# what cloudpickle (1.x, 2.x) names to rebuild a function: an entry whose pickle names these is code, and
# one that names anything else besides is refused
FUNCTION_PARTS = {
    *(
        (module, name)
        for module in ("cloudpickle.cloudpickle", "cloudpickle.cloudpickle_fast")
        for name in (
            "_builtin_type", "_make_cell", "_make_empty_cell", "_make_function", "_function_setstate",
            "_make_skel_func", "_fill_function",
        )
    ),
    ("builtins", "float"),
    ("builtins", "int"),
}  # fmt: skip


class _Restricted(pickle.Unpickler):
    def __init__(self, data: bytes, trusted: set[str]) -> None:
        super().__init__(io.BytesIO(data))
        self.trusted = trusted

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in READERS:
            return READERS[module, name]
        module, name = STAND_INS.get((module, name), (moved_name(module), name))
        # a dotted name walks attributes (protocol 4): "np.f2py.subprocess.Popen" from an allowed module
        if "." in name or (module.startswith("_") and (module, name) not in SAFE_GLOBALS):
            raise _Refused(f"{module}.{name}")
        numpy = module == "numpy" or module.startswith(("numpy.core", "numpy._core", "numpy.random", "numpy.dtypes"))
        if (module, name) in SAFE_GLOBALS or (
            numpy and (name in NUMPY_NAMES or (module == "numpy.dtypes" and name.endswith("DType")))
        ):
            return super().find_class(module, name)
        if module == "numpy" and _numpy_scalar_type(super().find_class(module, name)):
            return super().find_class(module, name)  # (action noise keeps its dtype: numpy.float32)
        if _in_package(f"{module}.{name}", self.trusted):
            return super().find_class(module, name)
        if name.startswith("_") or not _allowed_module(module):
            raise _Refused(f"{module}.{name}")
        obj = super().find_class(module, name)  # (imports the module: one of an allowed package's, by now)
        if not allowed_object(obj, name):
            raise _Refused(f"{module}.{name}")
        return obj


def _numpy_scalar_type(obj: Any) -> bool:
    """A NumPy scalar class (float32, int64, bool_...): calling one makes a number, nothing else."""
    import numpy as np

    return isinstance(obj, type) and issubclass(obj, np.generic)


def _allowed_module(module: str) -> bool:
    """A module whose import the unpickler may trigger: one of the allow-list's class or rlexp modules."""
    return module in RLEXP_MODULES or _class_module(module)


class _Refused(Exception):
    pass


def _refusal(what: str, name: str, trusted: set[str]) -> ConfigError:
    package = name.split(".", 1)[0]
    package = next((stack for stack, members in STACKS.items() if package in members), package)
    return ConfigError(
        f"{what}: its pickle names {name}, which is not on rlexp's allow-list: loading it would run that "
        f"code. If you trust the run's author, open it with --trust {package} (or RLEXP_TRUST={package})"
    )


def restricted_loads(data: bytes, what: str, trust: Iterable[str] = ()) -> Any:
    """``data`` unpickled with the allowed names only; anything else is a one-line ConfigError."""
    trusted = trusted_packages(trust)
    try:
        return _Restricted(data, trusted).load()
    except _Refused as refused:
        raise _refusal(what, str(refused), trusted) from None
    except Exception as err:  # a damaged pickle
        raise ConfigError(f"{what}: unreadable pickle ({type(err).__name__}: {err})") from None


class _Stub:
    """What the name-listing unpickler builds for every name: nothing of the pickle is imported or called."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def __call__(self, *args: Any, **kwargs: Any) -> _Stub:
        return _Stub()

    def __setstate__(self, state: Any) -> None:
        pass

    def __setitem__(self, key: Any, value: Any) -> None:
        pass

    def append(self, item: Any) -> None:
        pass

    def extend(self, items: Any) -> None:
        pass


class _Names(pickle.Unpickler):
    def __init__(self, data: bytes) -> None:
        super().__init__(io.BytesIO(data))
        self.names: list[tuple[str, str]] = []

    def find_class(self, module: str, name: str) -> Any:
        self.names.append((module, name))
        return _Stub


def pickled_names(data: bytes) -> list[tuple[str, str]]:
    """The (module, name) of every callable a pickle names, read without importing or calling any."""
    names = _Names(data)
    try:
        names.load()
    except Exception as err:  # a damaged pickle (what it named so far is kept)
        names.names.append(("", f"(unreadable: {type(err).__name__})"))
    return names.names


def _code_entry(blob: bytes, what: str) -> bool:
    """Whether an entry is a pickled function (refused where it names more than cloudpickle's parts)."""
    names = pickled_names(blob)
    if not any(module.startswith("cloudpickle") for module, _ in names):
        return False
    other = next(
        (f"{module}.{name}".lstrip(".") for module, name in names if (module, name) not in FUNCTION_PARTS), None
    )
    if other is not None:
        raise ConfigError(
            f"{what}: a pickled function that names {other}, which no saved schedule does: refused, nothing of it run"
        )
    return True


def model_objects(
    zip_path: Path, trust: Iterable[str] = (), rebuild: Callable[[], Mapping[str, Any]] | None = None
) -> dict[str, Any]:
    """The objects SB3 pickles into a model zip's ``data`` (spaces, schedules, classes...), unpickled with
    the allowed names only: SB3's ``load(custom_objects=...)`` takes them instead of unpickling its own.
    An entry pickled as a function is never unpickled: its value is ``rebuild()``'s (from the run's config,
    built only for such a zip), and without one the zip is refused."""
    try:
        with zipfile.ZipFile(zip_path) as archive:
            data = json.loads(archive.read("data"))
        if not isinstance(data, dict):
            raise ValueError("its data is not a mapping")
        pickled = {
            key: base64.b64decode(item[":serialized:"], validate=True)
            for key, item in data.items()
            if isinstance(item, dict) and ":serialized:" in item
        }
    except (OSError, KeyError, TypeError, ValueError, zipfile.BadZipFile) as err:  # (binascii.Error: ValueError)
        raise ConfigError(f"{zip_path}: not an SB3 model zip ({type(err).__name__}: {err})") from None
    objects = {}
    rebuilt: Mapping[str, Any] | None = None
    for key, blob in pickled.items():
        what = f"{zip_path} ({key})"
        if not _code_entry(blob, what):
            objects[key] = restricted_loads(blob, what, trust)
            continue
        if rebuilt is None and rebuild is not None:
            rebuilt = rebuild()
        if rebuilt is not None and key in rebuilt:
            objects[key] = rebuilt[key]
        else:
            known = ", ".join(sorted(rebuilt or ())) or "none without the run's config"
            raise ConfigError(
                f"{what}: a pickled function (code, saved by an older SB3), which rlexp never unpickles and cannot "
                f"rebuild from the config (it rebuilds: {known}); not opened"
            )
    return objects


class _Renamed(pickle.Unpickler):
    """Unpickles as pickle does, finding a module that moved (MOVED_MODULES) under its name today."""

    def find_class(self, module: str, name: str) -> Any:
        return super().find_class(moved_name(module), name)


def moved_objects(zip_path: Path) -> dict[str, Any] | None:
    """A run's own model zip, which SB3 unpickles itself (a run resuming in its dir trusts what it wrote):
    the entries that name a module since moved, unpickled under today's names (SB3's load cannot import
    the old ones); None when no entry does. The other entries are left to SB3."""
    try:
        with zipfile.ZipFile(zip_path) as archive:
            data = json.loads(archive.read("data"))
        blobs = {
            key: base64.b64decode(item[":serialized:"])
            for key, item in data.items()
            if isinstance(item, dict) and ":serialized:" in item
        }
    except (OSError, KeyError, TypeError, ValueError, AttributeError, zipfile.BadZipFile):
        return None  # (SB3's load says what is wrong with it)
    moved = {
        key: blob
        for key, blob in blobs.items()
        if any(moved_name(module) != module for module, _ in pickled_names(blob))
    }
    return {key: _Renamed(io.BytesIO(blob)).load() for key, blob in moved.items()} or None


def load_vecnormalize(path: Path, venv: Any, trust: Iterable[str] = ()) -> Any:
    """SB3's ``VecNormalize.load`` with the allowed names only (the statistics, clip values and flags)."""
    from stable_baselines3.common.vec_env import VecNormalize

    loaded = restricted_loads(path.read_bytes(), str(path), trust)
    if not isinstance(loaded, VecNormalize):
        raise ConfigError(f"{path}: holds a {type(loaded).__name__}, not VecNormalize statistics")
    loaded.set_venv(venv)
    return loaded
