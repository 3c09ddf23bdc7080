"""The exception hierarchy: one root, every public error reachable from ``pyir``."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pyir
import pyir.errors


def _pyir_modules():
    yield pyir
    for info in pkgutil.walk_packages(pyir.__path__, "pyir."):
        yield importlib.import_module(info.name)


def test_every_exception_class_derives_from_pyir_error_and_is_public():
    """Each public exception class defined in pyir derives from PyIRError and is ``pyir.X``."""
    found = {}
    for mod in _pyir_modules():
        for name, obj in vars(mod).items():
            if inspect.isclass(obj) and issubclass(obj, BaseException) and obj.__module__.startswith("pyir"):
                found[obj] = name
    assert pyir.InternalError in found
    for cls in found:
        if cls.__name__.startswith("_"):  # private control-flow signals, caught where raised
            continue
        assert issubclass(cls, pyir.PyIRError), cls
        assert getattr(pyir, cls.__name__) is cls, f"{cls.__name__} is not pyir.{cls.__name__}"
        assert cls.__name__ in pyir.__all__
        assert cls.__name__ in pyir.errors.__all__


def test_errors_also_subclass_the_matching_builtin():
    """``except ValueError`` (or TypeError, ...) catches pyir's errors of that nature."""
    assert issubclass(pyir.ParseError, ValueError)
    assert issubclass(pyir.TypeCheckError, TypeError)
    assert issubclass(pyir.FinalKindError, TypeError)
    assert issubclass(pyir.GraphvizNotFoundError, ImportError)
    assert issubclass(pyir.InternalError, RuntimeError)
    assert issubclass(pyir.FrontendError, ValueError)
