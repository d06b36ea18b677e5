"""The GPU catalog: cards (model, memory and form factor kept apart), their specs, the names providers
use for them, and MIG slices as fractions of a card. Data in `gpus.toml`; resolution in `gpus.py`."""

from tracker.catalog.gpus import (
    AmbiguousGpuName,
    GpuCatalog,
    GpuNameError,
    GpuSlice,
    GpuSpec,
    MigSliceName,
    UnknownGpuName,
    get_catalog,
)

__all__ = [
    "AmbiguousGpuName",
    "GpuCatalog",
    "GpuNameError",
    "GpuSlice",
    "GpuSpec",
    "MigSliceName",
    "UnknownGpuName",
    "get_catalog",
]
