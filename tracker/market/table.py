"""The live offers' in-memory shape: one numpy array per column, built by `tracker.market.live`.

Its own module, below both `tracker.market.live` (which builds and caches it) and `tracker.market.quality`
(whose masks read it), so the quality rules need not import the cache for the type.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

if TYPE_CHECKING:  # type-only: importing numpy.typing or pandas costs a command-line call tens of ms
    import numpy.typing as npt
    import pandas as pd

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)  # last_seen_us counts microseconds from here
T = TypeVar("T")


@dataclass(eq=False)
class OfferTable:
    """Live offers, one numpy array per column (all the same length)."""

    columns: dict[str, npt.NDArray[Any]]
    providers: list[str]  # provider name per `provider_code`
    _frame: pd.DataFrame | None = field(default=None, repr=False)
    # Values computed from the whole table (`derived`): a table never changes once built, so each is
    # computed once and every ranking, plan or filter over it gathers from it.
    _derived: dict[str, Any] = field(default_factory=dict, repr=False)

    def __len__(self) -> int:
        return len(self.columns["id"])

    @property
    def empty(self) -> bool:
        return len(self) == 0

    def __getitem__(self, name: str) -> npt.NDArray[Any]:
        return self.columns[name]

    def __contains__(self, name: object) -> bool:
        return name in self.columns

    def derived(self, name: str, build: Callable[[OfferTable], T]) -> T:
        """`build(self)`, computed the first time `name` is asked for and kept with the table. Two threads
        asking at once may both build it: the value is a function of the table, so either is the same."""
        if name not in self._derived:
            self._derived[name] = build(self)
        value: T = self._derived[name]
        return value

    def codes(self, column: str) -> tuple[npt.NDArray[np.intp], list[object]]:
        """A small integer per offer for its value of `column`, and the distinct values (by first
        appearance): a filter decides once per distinct value, not once per offer."""
        return self.derived("codes:" + column, lambda t: factorize(t.columns[column].tolist()))

    def without(self, *names: str) -> OfferTable:
        return OfferTable({k: v for k, v in self.columns.items() if k not in names}, self.providers)

    def last_seen(self, rows: npt.NDArray[np.intp]) -> list[datetime]:
        return [EPOCH + timedelta(microseconds=int(us)) for us in self.columns["last_seen_us"][rows]]

    @property
    def frame(self) -> pd.DataFrame:
        """The same offers as a pandas DataFrame (for grouped statistics), built once per table."""
        if self._frame is None:
            import pandas as pd

            df = pd.DataFrame({k: v for k, v in self.columns.items() if k != "last_seen_us"})
            df["last_seen"] = pd.to_datetime(self.columns["last_seen_us"], unit="us", utc=True)
            df.attrs["providers"] = self.providers
            self._frame = df
        return self._frame


def factorize(values: Iterable[object]) -> tuple[npt.NDArray[np.intp], list[object]]:
    """A small integer per distinct value, in order of first appearance (NaN and None are values too)."""
    index: dict[object, int] = {}
    # The dict's own setdefault, mapped in C: each value's first position, no Python frame per value
    # (a generator costs ~30 ms per 200,000 offers, this ~15); then first positions to dense codes.
    first = np.fromiter(map(index.setdefault, values, itertools.count()), dtype=np.intp)
    dense = np.zeros(len(first), dtype=np.intp)
    dense[np.fromiter(index.values(), dtype=np.intp, count=len(index))] = np.arange(len(index), dtype=np.intp)
    codes: npt.NDArray[np.intp] = dense[first]
    return codes, list(index)


def positions(
    ids: npt.NDArray[np.int64], wanted: npt.NDArray[np.int64]
) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.bool_]]:
    """(position in `ids`, whether it is there) of each of `wanted`: rows naming their offer by id, mapped
    to the offer's place. `ids` are unique, in any order. The offer ids of one card are few and close
    together: a table over their span answers by one gather, where a binary search of 185,000 ids took 4 ms."""
    if not len(ids):
        return np.zeros(len(wanted), dtype=np.intp), np.zeros(len(wanted), dtype=bool)
    low = int(ids.min())
    span = int(ids.max()) - low + 1
    if span <= 8 * len(wanted) + 4096:
        table = np.full(span, -1, dtype=np.intp)
        table[ids - low] = np.arange(len(ids))
        inside = (wanted >= low) & (wanted < low + span)
        pos = np.where(inside, table[np.where(inside, wanted - low, 0)], -1)
        found = pos >= 0
        return np.where(found, pos, 0), found
    order = np.argsort(ids)
    at = order[np.searchsorted(ids, wanted, sorter=order).clip(0, len(ids) - 1)]
    return at, ids[at] == wanted
