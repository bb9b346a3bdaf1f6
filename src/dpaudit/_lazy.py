"""Packages whose public names are imported on first use.

``import dpaudit`` and ``dpaudit --help`` import no numpy, no scipy and no engine (spec
``architecture.md``: "optional backends cost nothing at import", narwhals' lesson): a package's
``__init__`` lists where each of its names lives instead of importing it, and calls
:func:`lazy_package`, which gives the package the module class documented for this in the Python
reference ("Customizing module attribute access"): reading a name not yet imported imports its module
(PEP 562 ``__getattr__``), after which the name is an ordinary attribute; ``dir()`` lists every name.
Type checkers see the same names through the package's ``if TYPE_CHECKING:`` imports, which
``tests/test_import_light.py`` checks against the table.

A name that is not in the table but names a submodule (``dpaudit.counting``) is imported as that
submodule, as ``import dpaudit.counting`` would. A name that is both an export and the submodule that
defines it — ``dpaudit.audit``, the function, from ``dpaudit/audit.py`` — stays the export when the
submodule is imported by anyone (the import system then sets the package's attribute to the module;
the package keeps the function instead), as it did when ``__init__`` imported it eagerly.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["lazy_package"]


class _LazyPackage(types.ModuleType):
    """A package whose ``_lazy_where`` (name → module) names are imported when first read."""

    _lazy_where: dict[str, str]

    def __getattr__(self, name: str) -> Any:
        where: dict[str, str] = self.__dict__.get("_lazy_where", {})
        module = where.get(name)
        if module is not None:
            value = getattr(importlib.import_module(module), name)
        elif not name.startswith("__") and importlib.util.find_spec(f"{self.__name__}.{name}") is not None:
            value = importlib.import_module(f"{self.__name__}.{name}")
        else:
            raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}")
        setattr(self, name, value)
        return value

    def __setattr__(self, name: str, value: Any) -> None:
        where: dict[str, str] = self.__dict__.get("_lazy_where", {})
        if isinstance(value, types.ModuleType) and where.get(name) == value.__name__:
            value = getattr(value, name)  # the submodule ``audit`` was imported: keep its function ``audit``
        super().__setattr__(name, value)

    def __dir__(self) -> list[str]:
        return sorted(set(self.__dict__) | set(self.__dict__.get("_lazy_where", {})))


def lazy_package(package: str, table: Mapping[str, Sequence[str]]) -> None:
    """Make ``package`` (a module in ``sys.modules``, usually ``__name__`` of its ``__init__``) import
    the names of ``table`` (module → the names it defines) when each is first read.

    Examples
    --------
    >>> import dpaudit
    >>> dpaudit.parse_criteria.__module__, "parse_criteria" in dir(dpaudit)
    ('dpaudit.criteria', True)
    >>> dpaudit.nope
    Traceback (most recent call last):
    ...
    AttributeError: module 'dpaudit' has no attribute 'nope'
    """
    module = sys.modules[package]
    module.__class__ = _LazyPackage
    module.__dict__["_lazy_where"] = {name: source for source, names in table.items() for name in names}
