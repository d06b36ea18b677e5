"""Response shapes: which JSON fields a provider's responses carry, and which of them its parser reads.

The drift check (`tracker.pipeline.drift`) learns what a parser needs by running it, not from a hand-kept
list that would go stale with every adapter change: while `capture_json(trace=True)` is active, every body
decoded by `providers.http.decode_json` (or streamed item by item through `decode_stream`) reaches the
adapter wrapped so that each key it looks up is recorded as a key path. A key path names a field in
every item at once: `offers[].dph_total` (`[]` is "any element of a list"), `data.*.instance_type` (`*` is
"any key of an object the parser iterates", such as a map keyed by instance type, whose keys are data
rather than schema).

Only JSON decoded through `providers.http` is seen; an adapter reading CSV or calling `response.json()`
itself leaves no shapes, and the drift check says so instead of guessing.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeAlias
from urllib.parse import urlsplit

import providers.http as http

if TYPE_CHECKING:
    import httpx

__all__ = [
    "ANY_ELEMENT",
    "ANY_KEY",
    "Capture",
    "KeyPath",
    "Shape",
    "capture_json",
    "endpoint_of",
    "format_path",
    "kind_of",
    "owner_of",
]

KeyPath: TypeAlias = tuple[str, ...]
ANY_ELEMENT = "[]"
ANY_KEY = "*"


def endpoint_of(request: httpx.Request) -> str:
    """`POST console.vast.ai/api/v0/bundles`: what responses are compared by. The query is left out (page
    cursors and API keys live there) and so is the body (GraphQL sends every query to one URL): the fields of
    all responses of one endpoint are pooled."""
    parts = urlsplit(str(request.url))
    return f"{request.method.upper()} {parts.netloc}{parts.path.rstrip('/') or '/'}"


def format_path(path: KeyPath) -> str:
    """('offers', '[]', 'dph_total') → 'offers[].dph_total'; the whole body is '(body)'."""
    text = ""
    for segment in path:
        text += segment if segment == ANY_ELEMENT or not text else f".{segment}"
    return text or "(body)"


def owner_of(path: KeyPath) -> KeyPath:
    """The path of the object holding the last key: ('offers', '[]', 'id') → ('offers', '[]')."""
    return path[:-1]


def kind_of(value: Any) -> str:
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    return "null" if value is None else "string"


@dataclass
class Shape:
    """The fields of some JSON bodies: for each key path, how often it occurs and the kinds of value it
    holds; for each object path, how many objects were there. Counts tell an optional field (in some objects)
    from one every object carries, and an empty list (no objects to judge) from a field that vanished."""

    keys: Counter[KeyPath] = field(default_factory=Counter)
    objects: Counter[KeyPath] = field(default_factory=Counter)
    kinds: dict[KeyPath, set[str]] = field(default_factory=dict)

    def add(self, document: Any, at: KeyPath = ()) -> None:
        """Count `document`, found at `at` (the body itself by default; a streamed item at `offers[]`, whose
        kind, as any list element's, is not recorded)."""
        if not at:
            self.kinds.setdefault(at, set()).add(kind_of(document))  # a body turned from object to list is news
        # Iterative: a hostile or merely deep body must not hit the recursion limit.
        todo: list[tuple[Any, KeyPath]] = [(document, at)]
        while todo:
            node, path = todo.pop()
            if isinstance(node, dict):
                self.objects[path] += 1
                for key, value in dict.items(node):  # dict's own: never recorded as a read on a traced body
                    child = (*path, str(key))
                    self.keys[child] += 1
                    self.kinds.setdefault(child, set()).add(kind_of(value))
                    todo.append((value, child))
            elif isinstance(node, list):
                child = (*path, ANY_ELEMENT)
                todo.extend((item, child) for item in node)

    @property
    def paths(self) -> set[KeyPath]:
        return set(self.keys)

    def in_every_object(self, path: KeyPath) -> bool:
        """Whether every object that could hold `path` does."""
        return self.keys[path] >= self.objects[owner_of(path)] > 0

    def normalized(self, maps: Iterable[KeyPath]) -> Shape:
        """This shape with each key of an object at `maps` (concrete paths) pooled under `*`."""
        normal = _normal_maps(maps)
        if not normal:
            return self
        out = Shape()
        for path, count in self.keys.items():
            out.keys[_normalize_one(path, normal)] += count
        for path, kinds in self.kinds.items():
            out.kinds.setdefault(_normalize_one(path, normal), set()).update(kinds)
        for path, count in self.objects.items():
            out.objects[_normalize_one(path, normal)] += count
        return out


def _normal_maps(maps: Iterable[KeyPath]) -> set[KeyPath]:
    # Shortest first, so that the path of a map nested in a map is itself normalised by its parent.
    normal: set[KeyPath] = set()
    for concrete in sorted(set(maps), key=len):
        normal.add(_normalize_one(concrete, normal))
    return normal


def _normalize_one(path: KeyPath, normal_maps: set[KeyPath]) -> KeyPath:
    out: KeyPath = ()
    for segment in path:
        out = (*out, ANY_KEY if out in normal_maps and segment != ANY_ELEMENT else segment)
    return out


def normalize(paths: Iterable[KeyPath], maps: Iterable[KeyPath]) -> set[KeyPath]:
    """Concrete paths with each key under one of `maps` (concrete) replaced by `*`."""
    normal = _normal_maps(maps)
    return {_normalize_one(p, normal) for p in paths}


@dataclass
class Capture:
    """What one fetch decoded, per endpoint: the shape of the bodies (concrete: real keys, list elements
    pooled) and, when tracing, the paths the parser looked up and the objects it iterated (its maps)."""

    trace: bool = False
    shapes: dict[str, Shape] = field(default_factory=dict)
    reads: dict[str, set[KeyPath]] = field(default_factory=dict)
    maps: dict[str, set[KeyPath]] = field(default_factory=dict)
    bodies: int = 0  # JSON bodies decoded

    @classmethod
    def of(cls, bodies: Iterable[tuple[str, Any]]) -> Capture:
        """A capture of bodies decoded elsewhere: (endpoint, body) pairs, an endpoint once per page."""
        capture = cls()
        for endpoint, body in bodies:
            capture.seen(endpoint, body)
        return capture

    def seen(self, endpoint: str, body: Any) -> Any:
        """Record `body`, decoded from a response of `endpoint`; returns what the parser is to be given."""
        self.bodies += 1
        # Concrete now, normalised when compared: which objects are maps is only known once the parser ran.
        self.shapes.setdefault(endpoint, Shape()).add(body)
        if not self.trace:
            return body
        return _wrap(body, (), self.reads.setdefault(endpoint, set()), self.maps.setdefault(endpoint, set()))

    def streaming(self, endpoint: str, prefix: str) -> Callable[[Any], Any]:
        """Record an answer of `endpoint` read as it streams (`providers.http.post_json_items`): the envelope
        down to the array at `prefix` now, then each item as the parser is handed it, so the shape and the
        reads are those the whole body, decoded at once, would have given (but for envelope keys beside
        the array, which a streamed read never sees)."""
        self.bodies += 1
        shape = self.shapes.setdefault(endpoint, Shape())
        reads = self.reads.setdefault(endpoint, set()) if self.trace else None
        maps = self.maps.setdefault(endpoint, set())
        path: KeyPath = ()
        shape.kinds.setdefault(path, set()).add("object")
        names = prefix.split(".")
        for n, name in enumerate(names):
            shape.objects[path] += 1
            path = (*path, name)
            shape.keys[path] += 1
            shape.kinds.setdefault(path, set()).add("array" if n == len(names) - 1 else "object")
            if reads is not None:
                reads.add(path)  # the stream looks the array up, as `require(body, "offers")` would
        where = (*path, ANY_ELEMENT)

        def item(value: Any) -> Any:
            shape.add(value, where)
            return value if reads is None else _wrap(value, where, reads, maps)

        return item

    def endpoints(self) -> list[str]:
        return sorted(self.shapes)

    def shape(self, endpoint: str, maps: Iterable[KeyPath] | None = None) -> Shape:
        """The shape at `endpoint` with `maps` pooled (default: the maps this capture's parser iterated)."""
        chosen = self.maps.get(endpoint, set()) if maps is None else maps
        return self.shapes.get(endpoint, Shape()).normalized(chosen)

    def read_paths(self, endpoint: str) -> set[KeyPath]:
        return normalize(self.reads.get(endpoint, ()), self.maps.get(endpoint, ()))

    def normal_maps(self, endpoint: str) -> set[KeyPath]:
        return _normal_maps(self.maps.get(endpoint, ()))


class _TracedDict(dict[str, Any]):
    """A JSON object that records the keys looked up in it (and, when iterated, that it is a map).

    A real dict subclass: adapters check `isinstance(x, dict)` and must behave exactly as on plain JSON."""

    __slots__ = ("_maps", "_path", "_reads")

    def __init__(
        self, items: Iterable[tuple[str, Any]], path: KeyPath, reads: set[KeyPath], maps: set[KeyPath]
    ) -> None:
        super().__init__(items)
        self._path, self._reads, self._maps = path, reads, maps

    def _read(self, key: object) -> None:
        self._reads.add((*self._path, str(key)))

    def __getitem__(self, key: str) -> Any:
        self._read(key)
        return super().__getitem__(key)

    def get(self, key: str, default: Any = None) -> Any:
        self._read(key)
        return super().get(key, default)

    def __contains__(self, key: object) -> bool:
        self._read(key)
        return super().__contains__(key)

    def pop(self, key: str, *default: Any) -> Any:
        self._read(key)
        return super().pop(key, *default)

    # Walking an object's keys means they are data (instance types, regions), not a schema: a map.
    def __iter__(self) -> Iterator[str]:
        self._maps.add(self._path)
        return super().__iter__()

    def keys(self) -> Any:
        self._maps.add(self._path)
        return super().keys()

    def values(self) -> Any:
        self._maps.add(self._path)
        return super().values()

    def items(self) -> Any:
        self._maps.add(self._path)
        return super().items()


def _wrap(value: Any, path: KeyPath, reads: set[KeyPath], maps: set[KeyPath]) -> Any:
    # Eagerly, so that iterating a list (native, never recorded) already yields traced elements.
    if isinstance(value, dict):
        return _TracedDict(((k, _wrap(v, (*path, str(k)), reads, maps)) for k, v in value.items()), path, reads, maps)
    if isinstance(value, list):
        return [_wrap(v, (*path, ANY_ELEMENT), reads, maps) for v in value]
    return value


_active: ContextVar[Capture | None] = ContextVar("providers_schema_capture", default=None)
_plain_decode = http.decode_json


def _decode_and_capture(response: httpx.Response) -> Any:
    body = _plain_decode(response)
    capture = _active.get()
    return body if capture is None else capture.seen(endpoint_of(response.request), body)


_plain_stream = http.decode_stream


def _stream_and_capture(response: httpx.Response, prefix: str) -> Callable[[Any], Any]:
    capture = _active.get()
    if capture is None:
        return _plain_stream(response, prefix)
    return capture.streaming(endpoint_of(response.request), prefix)


@contextmanager
def capture_json(*, trace: bool = False) -> Iterator[Capture]:
    """Record the shape of every JSON body decoded through `providers.http` in this context (this task and
    the tasks it starts); with `trace`, hand the adapter traced bodies and record what it reads.

    The hook replaces `providers.http.decode_json` (which `get_json`/`post_json` look up at each call) and
    `providers.http.decode_stream` (which `post_json_items` looks up per answer) and
    stays: with no capture active it is the plain function, so fetches running alongside (the worker runs
    providers side by side) are untouched, and a capture that ends cannot restore a stale function under
    another one still running."""
    http.decode_json = _decode_and_capture
    http.decode_stream = _stream_and_capture
    capture = Capture(trace=trace)
    token = _active.set(capture)
    try:
        yield capture
    finally:
        _active.reset(token)
