"""A griffe extension for the API reference (mkdocs.yml): an attribute whose
only docstring is its value's builtin type's (inspection reads `RopeFreqs.base
= 10000.0` as having float's "Convert a string or number to a floating point
number") has none, so it is not listed; its class's docstring says what it
holds."""

from __future__ import annotations

import inspect
from typing import Any

import griffe

BUILTIN_DOCS = {inspect.getdoc(t) for t in (bool, int, float, complex, str, bytes, tuple, list, dict, set,
                                             frozenset, type(None))}


class BuiltinDocstrings(griffe.Extension):
    """Drop the docstrings attributes take from their values' builtin types."""

    def on_attribute_instance(self, *, attr: griffe.Attribute, **kwargs: Any) -> None:
        """Called by griffe for each attribute it finds."""
        if attr.docstring is not None and inspect.cleandoc(attr.docstring.value) in BUILTIN_DOCS:
            attr.docstring = None


if __name__ == "__main__":
    import argparse

    argparse.ArgumentParser(description=__doc__.split("\n\n")[0].replace("\n", " ") + ". mkdocs.yml's "
                            "mkdocstrings options load it; there is nothing to run.").parse_args()
