"""Griffe extension for the API reference: the ``.dp`` accessor's docstrings as Python sees them.

The knob paragraphs of ``DataFrame.dp``'s docstrings (every registered histogram method and its
knobs, the tree's knobs, the privacy unit) are generated at import from the release registry's
parameter tables (:func:`pandas_dp.releases.params.fill_doc`); griffe reads the source, where
they are marker lines. This extension, named in ``mkdocs.yml``, replaces those methods'
docstrings with the imported ones, so the reference shows what ``help()`` shows.
"""

from __future__ import annotations

import importlib
from typing import Any

import griffe

#: The classes whose methods' docstrings are generated at import.
CLASSES = ("pandas_dp.accessors.pandas.DPAccessorBase",)


class RuntimeDocstrings(griffe.Extension):
    """Use the imported docstrings of the methods of :data:`CLASSES`."""

    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        if pkg.name != "pandas_dp":
            return
        for path in CLASSES:
            module_name, class_name = path.rsplit(".", 1)
            runtime = getattr(importlib.import_module(module_name), class_name)
            cls = pkg[path.split(".", 1)[1]]
            for name, member in cls.members.items():
                doc = getattr(getattr(runtime, name, None), "__doc__", None)
                if member.is_function and doc and member.docstring is not None:
                    member.docstring = griffe.Docstring(doc, lineno=member.docstring.lineno,
                                                        endlineno=member.docstring.endlineno, parent=member,
                                                        parser=member.docstring.parser,
                                                        parser_options=member.docstring.parser_options)
