"""Errors raised by the estimate model.

Every error carries enough structure for the CLI (a one-line message) and the API (which field,
what to try instead) to report it without parsing the message.
"""

from __future__ import annotations


class EstimateError(ValueError):
    """Base class: bad input to the estimate model. Never a bug in it."""

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.field = field


class InvalidJob(EstimateError):
    """A job parameter is out of range or inconsistent; `field` names it (CLI option spelling)."""


class UnknownModel(EstimateError):
    """No catalog model, HF config or parameter count matches; `suggestions` holds close ids."""

    def __init__(self, query: str, suggestions: list[str]) -> None:
        hint = f" — did you mean {', '.join(suggestions)}?" if suggestions else ""
        super().__init__(
            f"unknown model {query!r}{hint} (give a catalog id, a Hugging Face config.json, "
            "or a parameter count like 7B)",
            field="model",
        )
        self.query = query
        self.suggestions = suggestions


class InvalidModelConfig(EstimateError):
    """A Hugging Face config.json lacks a field the estimate needs, or has a nonsensical value."""


class UnknownAssumptions(EstimateError):
    def __init__(self, name: str, known: list[str]) -> None:
        super().__init__(f"unknown assumption set {name!r}; known sets: {', '.join(known)}", field="assumptions")
        self.name = name
        self.suggestions = known
