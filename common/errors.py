"""Errors of the model loading and scoring machinery, written for the person who has to fix them.

Here rather than in scoring so that the sentence splitter (corpus.nlp) and the pages that start scoring
name them without importing the scoring code (and torch).
"""

from __future__ import annotations


class ModelLoadError(RuntimeError):
    """A model for one role could not be loaded. The message names the role, the id/path and the fix."""

    def __init__(self, *, role: str, spec: str, hint: str, cause: BaseException | None = None) -> None:
        self.role = role
        self.spec = spec
        self.hint = hint
        reason = f": {type(cause).__name__}: {cause}" if cause else ""
        super().__init__(f"Cannot load the {role} model '{spec}'{reason}. To fix: {hint}.")


class BrokerUnavailable(RuntimeError):
    """The Celery broker cannot be reached, so scoring work cannot be queued."""
