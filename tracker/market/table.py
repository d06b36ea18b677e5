"""The live offers' in-memory shape: one numpy array per column, built by `tracker.market.live`.

Its own module, below both `tracker.market.live` (which builds and caches it) and `tracker.market.quality`
(whose masks read it), so the quality rules need not import the cache for the type.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:  # type-only: importing numpy.typing or pandas costs a command-line call tens of ms
    import numpy.typing as npt
    import pandas as pd

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)  # last_seen_us counts microseconds from here


@dataclass(eq=False)
class OfferTable:
    """Live offers, one numpy array per column (all the same length)."""

    columns: dict[str, npt.NDArray[Any]]
    providers: list[str]  # provider name per `provider_code`
    _frame: pd.DataFrame | None = field(default=None, repr=False)

    def __len__(self) -> int:
        return len(self.columns["id"])

    @property
    def empty(self) -> bool:
        return len(self) == 0

    def __getitem__(self, name: str) -> npt.NDArray[Any]:
        return self.columns[name]

    def __contains__(self, name: object) -> bool:
        return name in self.columns

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
