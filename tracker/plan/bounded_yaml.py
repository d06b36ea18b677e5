"""YAML for untrusted mix text: aliases counted while composing, duplicate keys refused.

`yaml.safe_load` constructs no Python objects from tags, but an alias is a reference: ten anchors of ten
aliases each are a 500-byte text that every later walk (validation, error reports, merge keys) sees as
10^10 nodes. The budget is charged while the parser composes the document, each alias for the whole
subtree it stands for, so such a text is refused after a few thousand parser events instead of being
expanded first. An alias to a node still being composed (a self-referring structure) is refused too.

A repeated key in one mapping is refused rather than the last value silently winning (YAML 1.2 forbids
it; PyYAML accepts it); keys brought in by a merge (`<<: *base`) may still be overridden, as YAML intends.
"""

from __future__ import annotations

from typing import Any

import yaml  # type: ignore[import-untyped]  # PyYAML ships no type information
from yaml.composer import ComposerError  # type: ignore[import-untyped]
from yaml.constructor import ConstructorError  # type: ignore[import-untyped]
from yaml.nodes import MappingNode, ScalarNode  # type: ignore[import-untyped]

# A 200-workload mix is ~10,000 nodes; the text itself is bounded by tracker.plan.mix.MAX_SOURCE_CHARS.
MAX_NODES = 50_000
MAX_CHARS = 1_000_000
_MERGE_TAG = "tag:yaml.org,2002:merge"

__all__ = ["MAX_CHARS", "MAX_NODES", "safe_load_bounded"]


class _BoundedLoader(yaml.SafeLoader):  # type: ignore[misc]
    def __init__(self, stream: str, max_nodes: int, max_chars: int) -> None:
        super().__init__(stream)
        self._limits = (max_nodes, max_chars)
        self._sizes: dict[int, tuple[int, int]] = {}  # id(node) → (nodes, characters) once expanded
        self._keep: list[Any] = []  # the sized nodes stay alive, so their ids are never reused
        self._nodes = self._chars = 0

    def _charge(self, nodes: int, chars: int, mark: Any) -> None:
        self._nodes += nodes
        self._chars += chars
        max_nodes, max_chars = self._limits
        if self._nodes > max_nodes or self._chars > max_chars:
            raise ComposerError(
                None,
                None,
                f"the mix expands (through its aliases) to more than {max_nodes:,} values or {max_chars:,} characters",
                mark,
            )

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            target = self.anchors.get(event.anchor)
            if target is not None:  # an unknown anchor: PyYAML's own error below
                size = self._sizes.get(id(target))
                if size is None:
                    raise ComposerError(None, None, f"alias *{event.anchor} refers to itself", event.start_mark)
                self._charge(*size, event.start_mark)
            return super().compose_node(parent, index)
        node = super().compose_node(parent, index)  # its children were charged as they were composed
        if isinstance(node, ScalarNode):
            own = (1, len(node.value))
            size = own
        else:
            own = (1, 0)
            children = [n for pair in node.value for n in pair] if isinstance(node, MappingNode) else node.value
            sizes = [self._sizes[id(c)] for c in children]
            size = (1 + sum(s[0] for s in sizes), sum(s[1] for s in sizes))
        self._sizes[id(node)] = size
        self._keep.append(node)
        self._charge(*own, node.start_mark)
        return node

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        if isinstance(node, MappingNode):
            seen: set[Any] = set()
            for key_node, _value in node.value:
                if key_node.tag == _MERGE_TAG or not isinstance(key_node, ScalarNode):
                    continue
                key = self.construct_object(key_node)
                if key in seen:
                    raise ConstructorError(
                        "while reading a mapping", node.start_mark, f"duplicate key {key!r}", key_node.start_mark
                    )
                seen.add(key)
        return super().construct_mapping(node, deep=deep)


def safe_load_bounded(text: str, max_nodes: int = MAX_NODES, max_chars: int = MAX_CHARS) -> Any:
    """`yaml.safe_load(text)`, refusing (yaml.YAMLError) a document whose aliases expand past the budget
    and a mapping that repeats a key."""
    loader = _BoundedLoader(text, max_nodes, max_chars)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()
