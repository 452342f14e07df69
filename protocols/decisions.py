"""Warn and block decisions about crowd workers, the one shape every check gives (docs/CROWD_CHECKS.md).

A check flags items of a worker (a failed attention check, an item done too fast, a short or pasted
explanation); per kind of flag, thresholds say after how many flagged items the worker is warned and after
how many blocked. No database here: the crowd app stores the decisions and acts on them.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

OK = "ok"
WARN = "warn"
BLOCK = "block"
ACTIONS = (OK, WARN, BLOCK)  # in order of severity


@dataclass(frozen=True, slots=True)
class Thresholds:
    """Warn at `warn_at` flagged items, block at `block_at`; None: never."""

    warn_at: int | None = 1
    block_at: int | None = None

    def __post_init__(self) -> None:
        for name in ("warn_at", "block_at"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
                raise ValueError(f"{name}: a whole number of at least 1, or None for never (got {value!r})")
        if self.warn_at is not None and self.block_at is not None and self.warn_at > self.block_at:
            raise ValueError(f"warn_at ({self.warn_at}) must not be above block_at ({self.block_at})")

    def action(self, flagged: int) -> str:
        if self.block_at is not None and flagged >= self.block_at:
            return BLOCK
        if self.warn_at is not None and flagged >= self.warn_at:
            return WARN
        return OK


@dataclass(frozen=True, slots=True)
class Flag:
    """One flagged item: `kind` names the check (attention, fast, short_explanation, paste)."""

    kind: str
    item: Hashable
    reason: str


@dataclass(frozen=True, slots=True)
class WorkerDecision:
    worker: str
    action: str  # ok, warn or block
    reasons: tuple[str, ...]  # one line per kind of flag that reached a threshold
    flags: tuple[Flag, ...]

    def as_dict(self) -> dict[str, Any]:
        return {
            "worker": self.worker,
            "action": self.action,
            "reasons": list(self.reasons),
            "flags": [{"kind": flag.kind, "item": flag.item, "reason": flag.reason} for flag in self.flags],
        }


KIND_NAMES = {
    "attention": "failed attention check(s)",
    "fast": "item(s) done faster than the minimum active time",
    "short_explanation": "item(s) with an explanation shorter than the minimum",
    "paste": "item(s) with text pasted into an explanation",
}


def worker_decision(worker: str, flags: Sequence[Flag], thresholds: Mapping[str, Thresholds]) -> WorkerDecision:
    """The worker's action: the most severe one any kind of flag reaches (flags on the same item count once)."""
    action, reasons = OK, []
    for kind in sorted({flag.kind for flag in flags}):
        if kind not in thresholds:
            raise ValueError(f"no thresholds for flags of kind {kind!r} (kinds: {', '.join(sorted(thresholds))})")
        flagged = len({flag.item for flag in flags if flag.kind == kind})
        reached = thresholds[kind].action(flagged)
        if reached != OK:
            reasons.append(f"{reached}: {flagged} {KIND_NAMES.get(kind, kind)}")
        action = max(action, reached, key=ACTIONS.index)
    return WorkerDecision(worker=worker, action=action, reasons=tuple(reasons), flags=tuple(flags))


def decisions_merge(*groups: Iterable[WorkerDecision]) -> list[WorkerDecision]:
    """One decision per worker from several checks' decisions: the most severe action, all reasons and flags."""
    merged: dict[str, WorkerDecision] = {}
    for decision in (decision for group in groups for decision in group):
        before = merged.get(decision.worker)
        if before is None:
            merged[decision.worker] = decision
            continue
        merged[decision.worker] = WorkerDecision(
            worker=decision.worker,
            action=max(before.action, decision.action, key=ACTIONS.index),
            reasons=before.reasons + decision.reasons,
            flags=before.flags + decision.flags,
        )
    return [merged[worker] for worker in sorted(merged)]
