"""Bounded parsing: the one way hcg-rag reads JSON and YAML, from inputs and graph files alike.

A file read here cannot make a command hang, exhaust memory or end in a traceback: it is refused
with a typed error naming the file (``BoundsError``, a ``CorruptFileError``) when it

- is larger than its size cap (callers scale the cap with the manifest's counts, see
  ``size_cap``), checked with ``stat`` before a byte is read;
- nests deeper than ``MAX_DEPTH`` (Python's parsers recurse: deep nesting is a RecursionError in
  the parser or in any later walk of the value);
- holds an integer of more than ``MAX_INT_DIGITS`` digits (``int()`` of 5,000 digits is a
  ValueError, and a huge one is quadratic to parse);
- repeats a key in one object or mapping (JSON and YAML would silently keep the last);
- uses a YAML alias (``*name``): an alias bomb expands to billions of nodes the moment anything
  walks or prints it, so aliases are refused outright by the composer, before construction;
- (YAML, and JSON read with ``text_only``: every graph file) holds a lone surrogate, written as a
  ``\\ud800`` escape: not Unicode text, it fails as ``UnicodeEncodeError`` wherever it is later
  hashed or written. hcg never writes one, and no YAML input needs one.

JSON is parsed by the standard library's C parser (fast on large graphs); the depth check is an
iterative walk over the parsed containers, so it costs one pass without recursion. YAML goes through
``BoundedSafeLoader``, a ``yaml.SafeLoader`` subclass: still no object construction beyond plain
data. Messages name the file and the place, never ``repr`` a parsed value.
"""

from __future__ import annotations

import functools
import json
import os
import re
import reprlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from yaml.composer import ComposerError
from yaml.constructor import ConstructorError
from yaml.events import AliasEvent
from yaml.reader import ReaderError

from .errors import CorruptFileError

# Far above any file hcg writes (graph.json nests 4 deep, a spec 5, a build report 6) and far
# below the depth at which Python's recursion limit is hit by the parser or by code walking the value.
MAX_DEPTH = 64
# 40 digits hold any count, id or timestamp hcg uses; Python's own limit (4,300) is a ValueError.
MAX_INT_DIGITS = 40
# The fixed part of every size cap: a small file (a manifest, an outcome config) gets this much.
BASE_CAP = 64 * 1024 * 1024


class BoundsError(CorruptFileError):
    """A JSON or YAML file broke a parsing bound (size, depth, integer size, duplicate key, alias)."""


class _Violation(ValueError):
    """Raised inside the parsers' hooks (and by ``check_depth``); turned into a ``BoundsError``
    that names the file. A ValueError: ``check_depth`` on an LLM reply is a reply not to use."""


def size_cap(
    per_item: Mapping[str, int], counts: Mapping[str, Any] | None, base: int | None = None
) -> int:
    """A byte cap of ``base`` plus ``per_item[key] * counts[key]`` for each key.

    ``counts`` is the manifest's ``counts`` (validated by the store); a missing or malformed count
    adds nothing, so a hand-written graph without counts gets ``base``.

    >>> size_cap({"chunks": 10}, {"chunks": 3}, base=100)
    130
    """
    cap = BASE_CAP if base is None else base  # read at call time: tests lower it
    for key, size in per_item.items():
        n = (counts or {}).get(key)
        if isinstance(n, int) and not isinstance(n, bool) and n > 0:
            cap += size * n
    return cap


def check_size(path: Path, cap: int | None) -> None:
    """Refuse ``path`` when it is larger than ``cap`` bytes (before it is read)."""
    if cap is None:
        return
    try:
        size = os.stat(path).st_size
    except OSError:
        return  # the read that follows reports the OS's reason
    if size > cap:
        raise BoundsError(
            f"is {size:,} bytes, over the {cap:,}-byte cap for this file (scaled with the "
            "manifest's counts); the file is damaged or not the graph's own",
            path=path,
        )


def _int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise _Violation(
            f"an integer of {len(text.lstrip('-')):,} digits (at most {MAX_INT_DIGITS})"
        )
    return int(text)


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    d = dict(pairs)
    if len(d) != len(pairs):
        seen: set[str] = set()
        dup = next(k for k, _ in pairs if k in seen or seen.add(k))
        raise _Violation(f"the key {short(dup)} appears twice in one object")
    return d


_REPR = reprlib.Repr()
_REPR.maxstring = _REPR.maxother = 60
_REPR.maxlevel = 3


def short(value: Any, limit: int = 60) -> str:
    """A value for a message: quoted, cut, control characters escaped, containers elided.

    Never the whole value: a parsed file may hold megabytes, or a structure too deep to print.

    >>> short("x" * 100, 5)
    "'xxxxx'..."
    """
    if isinstance(value, str):
        return repr(value[:limit]) + ("..." if len(value) > limit else "")
    return _REPR.repr(value)


@functools.lru_cache(maxsize=8)
def _decoder(parse_constant: Any = None) -> json.JSONDecoder:
    """One decoder per ``parse_constant``, reused: ``json.loads`` with hooks builds a new one on
    every call, which costs more than parsing a JSON Lines row (as the standard library's own
    default decoder, it holds no state between calls)."""
    return json.JSONDecoder(
        object_pairs_hook=_object, parse_int=_int, parse_constant=parse_constant
    )


def check_depth(value: Any, max_depth: int = MAX_DEPTH) -> None:
    """Raise ``_Violation`` when ``value`` nests lists/dicts deeper than ``max_depth``.

    One level at a time, without recursion; the list comprehension keeps the per-value work in C
    (a 30 MB graph.json is walked in about a fifth of its parse time).
    """
    level = [value]
    depth = 1
    while level:
        if depth > max_depth:
            raise _Violation(f"nesting deeper than {max_depth} levels")
        below: list[Any] = []
        for item in level:
            children = item.values() if item.__class__ is dict else item
            below.extend([c for c in children if c.__class__ in _CONTAINERS])
        level = below
        depth += 1


_CONTAINERS = frozenset({dict, list})


# Only an escape can put a lone surrogate into parsed text (a file read as UTF-8 holds none): JSON
# "\ud800", YAML "\ud800" or "\U0000d800". Text without one is not walked.
_SURROGATE_ESCAPE = re.compile(r"\\(?:u|U0000)[dD][89a-fA-F]")


def lone_surrogate_in(value: Any) -> str | None:
    """The first string (key or value) of ``value`` holding a lone surrogate, or None.

    Iterative, and each string is encoded only when it is not ASCII.

    >>> lone_surrogate_in({"a": ["ok", "\\U0001f600"]}), lone_surrogate_in(["x\\ud800"])
    (None, 'x\\ud800')
    """
    stack = [value]
    while stack:
        item = stack.pop()
        if item.__class__ is str:
            if not item.isascii():
                try:
                    item.encode("utf-8")
                except UnicodeEncodeError:
                    return item
        elif item.__class__ is dict:
            stack.extend(item)
            stack.extend(item.values())
        elif item.__class__ is list:
            stack.extend(item)
    return None


def _check_text_only(text: str, value: Any) -> None:
    if _SURROGATE_ESCAPE.search(text) is None:
        return
    bad = lone_surrogate_in(value)
    if bad is not None:
        raise _Violation(
            f"the string {short(bad)} holds a lone surrogate (U+D800-U+DFFF), which is not "
            "Unicode text"
        )


def _where(line: int | None) -> str:
    return f"line {line}: " if line is not None else ""


def loads_json(
    text: str,
    *,
    path: Path | str | None = None,
    line: int | None = None,
    max_depth: int = MAX_DEPTH,
    error: type[Exception] = BoundsError,
    parse_constant: Any = None,
    text_only: bool = False,
) -> Any:
    """Parse JSON ``text`` within the bounds; ``error(message, path=path)`` when it breaks one.

    ``parse_constant`` is ``json.loads``'s (what NaN and Infinity become); ``text_only`` refuses
    a lone surrogate in any string (the graph's own files: hcg never writes one). Invalid JSON is
    reported as ``invalid JSON at line L column C: reason`` (or, with ``line``
    for one line of a JSON Lines file, ``line N: invalid JSON (reason)``).
    """
    try:
        value = _decoder(parse_constant).decode(text)
        # Nesting cannot exceed the number of opening brackets (str.count runs in C): a small
        # record, a JSON Lines row, is never walked.
        if isinstance(value, (dict, list)) and text.count("[") + text.count("{") > max_depth:
            check_depth(value, max_depth)
        if text_only:
            _check_text_only(text, value)
    except _Violation as exc:
        raise error(f"{_where(line)}{exc}; refused", path=path) from None
    except RecursionError:
        raise error(
            f"{_where(line)}nesting deeper than {max_depth} levels; refused", path=path
        ) from None
    except json.JSONDecodeError as exc:
        where = (
            f"line {line}: invalid JSON ({exc.msg})"
            if line is not None
            else f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"
        )
        raise error(where, path=path) from None
    except ValueError as exc:  # e.g. Python's own integer-digit limit, reached before parse_int
        raise error(f"{_where(line)}not acceptable JSON ({str(exc)[:120]})", path=path) from None
    return value


def read_text(path: Path, *, cap: int | None = BASE_CAP) -> str:
    """The UTF-8 text of ``path``, refused when larger than ``cap`` bytes."""
    check_size(path, cap)
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise CorruptFileError(f"cannot be read as UTF-8 text: {exc}", path=path) from None


def read_json(
    path: str | os.PathLike, *, cap: int | None = BASE_CAP, max_depth: int = MAX_DEPTH
) -> Any:
    """Read and parse one JSON file within the bounds (``BoundsError``/``CorruptFileError``)."""
    path = Path(path)
    return loads_json(read_text(path, cap=cap), path=path, max_depth=max_depth)


# ---------------------------------------------------------------- YAML


class BoundedSafeLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` that refuses aliases, deep nesting, huge integers and duplicate keys.

    The checks sit in the composer (aliases and depth, before any node is built) and in the
    mapping constructor (duplicate keys), so a bomb fails after reading its first alias.
    """

    max_depth = MAX_DEPTH

    def __init__(self, stream: Any) -> None:
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(AliasEvent):
            event = self.peek_event()
            raise ComposerError(
                None,
                None,
                f"a YAML alias (*{str(event.anchor)[:40]}) is not accepted; write the value out "
                "in full (aliases can expand a small file into billions of nodes)",
                event.start_mark,
            )
        self._depth += 1
        try:
            if self._depth > self.max_depth:
                raise ComposerError(
                    None,
                    None,
                    f"nesting deeper than {self.max_depth} levels is not accepted",
                    self.peek_event().start_mark,
                )
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        if isinstance(node, yaml.MappingNode):
            seen: set[Any] = set()
            for key_node, _ in node.value:
                if isinstance(key_node, yaml.ScalarNode):
                    key = (key_node.tag, key_node.value)
                    if key in seen:
                        raise ConstructorError(
                            None,
                            None,
                            f"the key {short(str(key_node.value))} appears twice in one mapping",
                            key_node.start_mark,
                        )
                    seen.add(key)
        return super().construct_mapping(node, deep=deep)

    def construct_yaml_int(self, node: Any) -> int:
        digits = sum(ch.isdigit() for ch in str(node.value))
        if digits > MAX_INT_DIGITS:
            raise ConstructorError(
                None,
                None,
                f"an integer of {digits:,} digits is not accepted (at most {MAX_INT_DIGITS})",
                node.start_mark,
            )
        return super().construct_yaml_int(node)


BoundedSafeLoader.add_constructor("tag:yaml.org,2002:int", BoundedSafeLoader.construct_yaml_int)


def _yaml_message(exc: yaml.YAMLError, text: str) -> str:
    """The parser's message without its source snippet (which may hold control characters)."""
    if isinstance(exc, ReaderError):
        # The reader refuses what YAML cannot hold (C0 controls but tab, LF and CR; U+FFFE,
        # U+FFFF; lone surrogates) before parsing: name the character and where it is.
        pos = min(max(int(exc.position), 0), len(text))
        line = text.count("\n", 0, pos) + 1
        column = pos - (text.rfind("\n", 0, pos) + 1) + 1
        char = exc.character
        code = char if isinstance(char, int) else ord(str(char)[:1] or "?")
        return (
            f"the character U+{code:04X} at line {line} column {column} is not allowed in YAML; "
            "remove it, or write it as an escape inside double quotes"
        )
    if isinstance(exc, yaml.MarkedYAMLError):
        mark = exc.problem_mark
        where = f" at line {mark.line + 1} column {mark.column + 1}" if mark is not None else ""
        return f"{exc.problem or exc.context or 'invalid YAML'}{where}"
    return str(exc)[:200]


def loads_yaml(
    text: str, *, path: Path | str | None = None, error: type[Exception] = BoundsError
) -> Any:
    """Parse YAML ``text`` with ``BoundedSafeLoader``; ``error(message, path=path)`` on failure."""
    loader: BoundedSafeLoader | None = None
    try:
        # Built inside the handler: the loader's reader checks every character of the text as
        # it is constructed, so a NUL or U+FFFE is refused here, not later in parsing.
        loader = BoundedSafeLoader(text)
        value = loader.get_single_data()
        _check_text_only(text, value)
        return value
    except _Violation as exc:
        raise error(f"invalid YAML: {exc}", path=path) from None
    except yaml.YAMLError as exc:
        raise error(f"invalid YAML: {_yaml_message(exc, text)}", path=path) from None
    except RecursionError:
        raise error(f"invalid YAML: nesting deeper than {MAX_DEPTH} levels", path=path) from None
    finally:
        if loader is not None:
            loader.dispose()


def read_yaml(path: str | os.PathLike, *, cap: int | None = BASE_CAP) -> Any:
    """Read and parse one YAML file within the bounds."""
    path = Path(path)
    return loads_yaml(read_text(path, cap=cap), path=path)


class _NoAliasDumper(yaml.SafeDumper):
    """A dumper that writes shared objects out in full: what ``BoundedSafeLoader`` reads back."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def dump_yaml(data: Any, **kwargs: Any) -> str:
    """``yaml.safe_dump`` without aliases (every file hcg writes must load under its own bounds)."""
    return yaml.dump(data, Dumper=_NoAliasDumper, **kwargs)
