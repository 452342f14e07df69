"""Time and explanation checks on crowd work (issue 14, point 5; docs/CROWD_CHECKS.md).

Per item a worker did: the active seconds already recorded for it (`Assignment.time_spent`), the written
explanations of its judgements and how often text was pasted into them. An item is flagged when it took
less active time than the task's minimum (QAGS used a floor), when an explanation the task asks for is
shorter than the minimum, or when anything was pasted into an explanation (workers pasting model output
is a documented problem). The flags become warn/block decisions like the attention checks'.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from protocols.decisions import Flag, Thresholds, WorkerDecision, worker_decision
from protocols.tasks import get_task

FAST = "fast"
SHORT_EXPLANATION = "short_explanation"
PASTE = "paste"


@dataclass(frozen=True, slots=True)
class ItemWork:
    worker: str
    item: Hashable
    task: str  # the task's key (protocols.tasks.TASKS)
    active_seconds: float
    explanations: Sequence[str] = ()
    paste_events: int = 0


def _non_negative(value: float, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
        raise ValueError(f"{name}: a finite number of at least 0 (got {value!r})")
    return float(value)


# The defaults: warn at the first flagged item; block at the third too fast or too briefly explained one; pasting
# only warns (the researcher decides from the dashboard).
FAST_THRESHOLDS = Thresholds(warn_at=1, block_at=3)
SHORT_THRESHOLDS = Thresholds(warn_at=1, block_at=3)
PASTE_THRESHOLDS = Thresholds(warn_at=1, block_at=None)


@dataclass(frozen=True, slots=True)
class TimeRules:
    """Minimum active seconds per item, per task key (tasks not named: `default_min_seconds`); minimum
    characters of each explanation where the task asks for one (0: no minimum); and the thresholds."""

    min_seconds: Mapping[str, float] = field(default_factory=dict)
    default_min_seconds: float = 0.0
    min_explanation_chars: int = 0
    fast: Thresholds = FAST_THRESHOLDS
    short_explanation: Thresholds = SHORT_THRESHOLDS
    paste: Thresholds = PASTE_THRESHOLDS

    def __post_init__(self) -> None:
        for task, seconds in self.min_seconds.items():
            get_task(task)  # KeyError naming the known tasks
            _non_negative(seconds, f"min_seconds[{task!r}]")
        _non_negative(self.default_min_seconds, "default_min_seconds")
        if isinstance(self.min_explanation_chars, bool) or not isinstance(self.min_explanation_chars, int):
            raise ValueError(f"min_explanation_chars: a whole number (got {self.min_explanation_chars!r})")
        _non_negative(self.min_explanation_chars, "min_explanation_chars")

    def floor(self, task: str) -> float:
        return float(self.min_seconds.get(task, self.default_min_seconds))

    @property
    def thresholds(self) -> dict[str, Thresholds]:
        return {FAST: self.fast, SHORT_EXPLANATION: self.short_explanation, PASTE: self.paste}


def item_flags(work: ItemWork, rules: TimeRules) -> list[Flag]:
    """What is wrong with one item's work (nothing: [])."""
    seconds = _non_negative(work.active_seconds, "active_seconds")
    pastes = _non_negative(work.paste_events, "paste_events")
    flags = []
    floor = rules.floor(work.task)
    if seconds < floor:
        flags.append(Flag(FAST, work.item, f"{seconds:.1f} s of active work; the minimum is {floor:g} s"))
    if rules.min_explanation_chars and get_task(work.task).note_required:
        short = [text for text in work.explanations if len(text.strip()) < rules.min_explanation_chars]
        if short:
            flags.append(
                Flag(
                    SHORT_EXPLANATION,
                    work.item,
                    f"{len(short)} explanation(s) shorter than {rules.min_explanation_chars} characters",
                )
            )
    if pastes:
        flags.append(Flag(PASTE, work.item, f"text pasted into an explanation {int(pastes)} time(s)"))
    return flags


def time_decisions(works: Iterable[ItemWork], rules: TimeRules) -> list[WorkerDecision]:
    """Per worker (sorted): warn or block after the thresholds' number of fast, short-explained or pasted items."""
    flags: dict[str, list[Flag]] = {}
    for work in works:
        flags.setdefault(work.worker, []).extend(item_flags(work, rules))
    return [worker_decision(worker, flags[worker], rules.thresholds) for worker in sorted(flags)]
