"""The one YAML reader of the package: safe, bounded, and precise about where a problem is.

Every YAML file the simulator reads (experiments, profiles, calibration specs, ``--set`` values)
goes through :func:`load_yaml_text` / :func:`load_yaml_file`:

* PyYAML's *safe* loader (plain data only: mappings, lists, strings, numbers, booleans, null);
* duplicate keys are errors (a silent override is a classic YAML trap);
* bounded: file size (:data:`MAX_BYTES`), nesting depth (:data:`MAX_DEPTH`), number of aliases
  (:data:`MAX_ALIASES`) and the size of the document with every alias expanded
  (:data:`MAX_NODES`) -- so a 1 KB "billion laughs" alias bomb is refused before anything copies
  or serialises it;
* every problem is a :class:`~simulator.errors.ConfigError` naming the file, the line and the
  column; the text of the file is never repeated in the message.

Each loaded file's key positions are remembered (:func:`position`), so that validation errors
about a field can name the line and column where the field was written.
"""

from __future__ import annotations

from collections import OrderedDict
from pathlib import Path
from typing import Any

import yaml

from simulator.errors import ConfigError
from simulator.safefile import read_bounded

__all__ = ["MAX_ALIASES", "MAX_BYTES", "MAX_DEPTH", "MAX_NODES", "load_yaml_file", "load_yaml_text", "position"]

#: largest YAML file read, bytes (profiles and experiments are a few KB)
MAX_BYTES = 2 * 1024 * 1024
#: deepest nesting of mappings/lists
MAX_DEPTH = 64
#: most aliases (``*name``) in one document
MAX_ALIASES = 1000
#: most nodes in the document with every alias expanded
MAX_NODES = 200_000

_MARKS: OrderedDict[str, dict[str, tuple[int, int]]] = OrderedDict()
_MARKS_KEEP = 64


class _Loader(yaml.SafeLoader):
    """SafeLoader that rejects duplicate keys and counts aliases."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.alias_count = 0

    def compose_node(self, parent: Any, index: Any) -> Any:  # type: ignore[override]
        if self.check_event(yaml.AliasEvent):
            self.alias_count += 1
            if self.alias_count > MAX_ALIASES:
                ev = self.peek_event()
                raise _Limit(f"more than {MAX_ALIASES} aliases", ev.start_mark)
        return super().compose_node(parent, index)


class _Limit(Exception):
    def __init__(self, message: str, mark: Any = None) -> None:
        super().__init__(message)
        self.message = message
        self.mark = mark


def _construct_mapping(loader: _Loader, node: yaml.MappingNode, deep: bool = False) -> dict:
    loader.flatten_mapping(node)  # YAML merge keys (<<)
    mapping: dict = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=deep)
        try:
            hash(key)
        except TypeError:
            raise yaml.constructor.ConstructorError(
                None, None, "a mapping key must be a plain value, not a list or mapping", key_node.start_mark
            ) from None
        if key in mapping:
            raise yaml.constructor.ConstructorError(None, None, "duplicate key", key_node.start_mark)
        mapping[key] = loader.construct_object(value_node, deep=deep)
    return mapping


_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def _where(mark: Any) -> str | None:
    if mark is None:
        return None
    return f"line {mark.line + 1}, column {mark.column + 1}"


def _check_size(root: Any) -> dict[str, tuple[int, int]]:
    """Depth and expanded-size limits over the composed node graph; returns key positions."""
    expanded: dict[int, int] = {}
    marks: dict[str, tuple[int, int]] = {}
    # iterative post-order walk; aliases share node objects, so sizes are memoised by id
    stack: list[tuple[Any, int, str | None, bool]] = [(root, 1, "", False)]
    while stack:
        node, depth, path, done = stack.pop()
        if depth > MAX_DEPTH:
            raise _Limit(f"nested more than {MAX_DEPTH} levels deep", node.start_mark)
        nid = id(node)
        if done:
            if isinstance(node, yaml.MappingNode):
                children = [v for kv in node.value for v in kv]
            elif isinstance(node, yaml.SequenceNode):
                children = list(node.value)
            else:
                children = []
            total = 1 + sum(expanded.get(id(c), 1) for c in children)
            expanded[nid] = total
            if total > MAX_NODES:
                raise _Limit(f"more than {MAX_NODES} values once aliases are expanded", node.start_mark)
            continue
        if nid in expanded:
            continue
        stack.append((node, depth, path, True))
        if isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                sub = None
                if path is not None and isinstance(k, yaml.ScalarNode):
                    sub = f"{path}.{k.value}" if path else str(k.value)
                    if len(marks) < 10_000:
                        marks.setdefault(sub, (k.start_mark.line + 1, k.start_mark.column + 1))
                stack.append((k, depth + 1, None, False))
                stack.append((v, depth + 1, sub, False))
        elif isinstance(node, yaml.SequenceNode):
            for i, v in enumerate(node.value):
                sub = None
                if path is not None:
                    sub = f"{path}.{i}" if path else str(i)
                    if len(marks) < 10_000:
                        marks.setdefault(sub, (v.start_mark.line + 1, v.start_mark.column + 1))
                stack.append((v, depth + 1, sub, False))
    return marks


def load_yaml_text(text: str, source: str | None = None, *, remember: bool = True) -> Any:
    """Parse YAML ``text`` (safe, bounded); problems are a ConfigError naming ``source``, line, column."""
    if len(text) > MAX_BYTES:
        raise ConfigError(f"larger than {MAX_BYTES // (1024 * 1024)} MiB; not a configuration file", source=source)
    try:
        loader = _Loader(text)
        try:
            node = loader.get_single_node()
            if node is None:
                data: Any = None
                marks: dict[str, tuple[int, int]] = {}
            else:
                marks = _check_size(node)
                data = loader.construct_document(node)
        finally:
            loader.dispose()
    except _Limit as e:
        raise ConfigError(f"refused: {e.message}", source=source, field=_where(e.mark)) from None
    except RecursionError:
        raise ConfigError(f"refused: nested more than {MAX_DEPTH} levels deep", source=source) from None
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        problem = e.problem or e.context or "malformed YAML"
        raise ConfigError(f"not valid YAML: {problem}", source=source, field=_where(mark)) from None
    except yaml.reader.ReaderError as e:
        raise ConfigError(
            f"not valid YAML: a control character (#x{e.character:04x}) YAML does not allow" if isinstance(e.character, int)
            else "not valid YAML: bytes that are not text",
            source=source,
            field=f"character {e.position + 1}",
        ) from None
    except yaml.YAMLError:
        raise ConfigError("not valid YAML", source=source) from None
    except (ValueError, OverflowError, TypeError):  # e.g. a timestamp such as 2020-13-45
        raise ConfigError("not valid YAML: a value cannot be read (e.g. an impossible date)", source=source) from None
    if remember and source:
        _MARKS[source] = marks
        _MARKS.move_to_end(source)
        while len(_MARKS) > _MARKS_KEEP:
            _MARKS.popitem(last=False)
    return data


def load_yaml_file(path: str | Path) -> Any:
    """Read and parse a YAML file; any problem becomes a ConfigError naming the file (and line, column)."""
    src = str(path)
    raw = read_bounded(path, MAX_BYTES, "a YAML file")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ConfigError(f"not UTF-8 text (byte {e.start})", source=src) from None
    return load_yaml_text(text.lstrip("\ufeff"), src)


def position(source: str | None, field: str | None) -> tuple[int, int] | None:
    """(line, column) where dotted ``field`` was written in the YAML file ``source``, if known."""
    if not source or not field:
        return None
    marks = _MARKS.get(str(source))
    if not marks:
        return None
    key = field
    while key:
        if key in marks:
            return marks[key]
        key = key.rpartition(".")[0]
    return None
