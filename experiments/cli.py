"""Command lines from ``Args`` dataclasses (CleanRL style), with the standard library only.

Each field becomes ``--field-name``; its help text is the docstring written
under the field, its type and default come from the annotation and default.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import inspect
import textwrap
import typing
from typing import Any, TypeVar

T = TypeVar("T")


def _field_docs(cls: type) -> dict[str, str]:
    """Docstrings written under each field of a dataclass (``x: int = 1\\n\"\"\"doc\"\"\"``)."""
    docs: dict[str, str] = {}
    body = ast.parse(textwrap.dedent(inspect.getsource(cls))).body[0].body
    for node, after in zip(body, body[1:] + [None], strict=True):
        if (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)
                and isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant)):
            docs[node.target.id] = " ".join(str(after.value.value).split())
    return docs


def _parser_for(kind: Any) -> tuple[Any, str | None]:
    """(converter, nargs) for an annotation such as ``int``, ``list[int]``, ``str | None``."""
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if origin in (list, tuple):
        return args[0], "+"
    if args and type(None) in args:  # Optional[X]
        inner = next(a for a in args if a is not type(None))
        convert, nargs = _parser_for(inner)
        return (lambda text: None if text.lower() == "none" else convert(text)), nargs
    return kind, None


def _to_bool(text: str) -> bool:
    if text.lower() in ("1", "true", "yes", "on"):
        return True
    if text.lower() in ("0", "false", "no", "off"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")


def parse_args(cls: type[T], argv: list[str] | None = None, description: str = "") -> T:
    """Parse the command line into an instance of the dataclass ``cls``."""
    docs = _field_docs(cls)
    hints = typing.get_type_hints(cls)
    parser = argparse.ArgumentParser(description=description or cls.__doc__,
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    for field in dataclasses.fields(cls):
        convert, nargs = _parser_for(hints[field.name])
        if convert is bool:
            convert = _to_bool
        default = (field.default_factory() if field.default_factory is not dataclasses.MISSING
                   else field.default)
        parser.add_argument("--" + field.name.replace("_", "-"), dest=field.name, type=convert,
                            nargs=nargs, default=default, help=docs.get(field.name, ""))
    return cls(**vars(parser.parse_args(argv)))
