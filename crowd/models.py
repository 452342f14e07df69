"""Crowd studies: a study's public link and its settings, the workers who arrived by it, the gold items of
training, the attention checks mixed into the queue and what the checks found on each item.

These models only hold state; every write goes through crowd.services and every read through
crowd.selectors. A worker's standing in the study (platform, worker id, exclusion) is the study's
Participation (studies.models); the crowd rows point at it.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

from corpus.models import Document
from studies.models import Assignment, Participation, Study, StudyItem

# The phases a researcher may order; "annotation" and "end" are always there, "end" is always last.
CONSENT = "consent"
PRE_SURVEY = "pre_survey"
INSTRUCTIONS = "instructions"
TRAINING = "training"
ANNOTATION = "annotation"
POST_SURVEY = "post_survey"
END = "end"
PHASES = (CONSENT, PRE_SURVEY, INSTRUCTIONS, TRAINING, ANNOTATION, POST_SURVEY, END)
PHASE_NAMES = {
    CONSENT: "Consent",
    PRE_SURVEY: "Questions before the study",
    INSTRUCTIONS: "Instructions",
    TRAINING: "Training",
    ANNOTATION: "Annotation",
    POST_SURVEY: "Questions after the study",
    END: "End",
}


def default_phases() -> list[str]:
    return list(PHASES)


KEY_MAX_CHARS = 43  # a public link's key (crowd_study_by_key refuses a longer one before asking the database)


class CrowdStudy(models.Model):
    """A study's crowd settings (one row per study): its public link and what a worker goes through."""

    class PassRule(models.TextChoices):
        MIN_CORRECT = "min_correct", "At least N correct"
        MAX_MISTAKES = "max_mistakes", "At most N mistakes"
        ALL_CORRECT = "all_correct", "All correct"

    study = models.OneToOneField(Study, on_delete=models.CASCADE, related_name="crowd")
    # Off: the link answers that the study is closed (nobody new starts; workers who started finish).
    public = models.BooleanField(default=True)
    # The link's unguessable part: /crowd/<key>/.
    key = models.CharField(max_length=KEY_MAX_CHARS, unique=True)
    platform = models.CharField(
        max_length=20, choices=Participation.Platform.choices, default=Participation.Platform.PROLIFIC
    )
    # The names of the link's parameters that carry the worker's id, the platform's study and session ids.
    worker_param = models.CharField(max_length=50)
    study_param = models.CharField(max_length=50, blank=True)
    session_param = models.CharField(max_length=50, blank=True)
    phases = models.JSONField(default=default_phases)
    consent_text = models.TextField(blank=True)
    instructions = models.TextField(blank=True)
    # [{"key", "text", "kind": single|multiple|text|likert, "choices": [...], "required": bool}]
    pre_survey = models.JSONField(default=list, blank=True)
    post_survey = models.JSONField(default=list, blank=True)
    training_rule = models.CharField(max_length=20, choices=PassRule.choices, default=PassRule.ALL_CORRECT)
    training_value = models.PositiveSmallIntegerField(default=0, help_text="N of the pass rule")
    training_attempts = models.PositiveSmallIntegerField(default=2)
    # Share of a worker's items that are attention checks (0: none), spread evenly over the queue.
    check_rate = models.FloatField(default=0.2)
    attention_warn_at = models.PositiveSmallIntegerField(null=True, blank=True, default=1)
    attention_block_at = models.PositiveSmallIntegerField(null=True, blank=True, default=2)
    # Minimum active seconds per item: task key -> seconds (tasks not named: no floor).
    min_seconds = models.JSONField(default=dict, blank=True)
    min_explanation_chars = models.PositiveIntegerField(default=0)
    time_warn_at = models.PositiveSmallIntegerField(null=True, blank=True, default=1)
    time_block_at = models.PositiveSmallIntegerField(null=True, blank=True, default=3)
    completion_code = models.CharField(max_length=100)
    screenout_code = models.CharField(max_length=100)
    failure_code = models.CharField(max_length=100)
    # Where the end page sends the worker; "{code}" is replaced by the code. Empty: the page only shows it.
    completion_url = models.CharField(max_length=500, blank=True)
    screenout_url = models.CharField(max_length=500, blank=True)
    failure_url = models.CharField(max_length=500, blank=True)
    max_items_per_worker = models.PositiveIntegerField(default=20)
    # An item a worker holds longer than this without touching it goes back to the pool.
    timeout_minutes = models.PositiveIntegerField(default=60)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name_plural = "crowd studies"

    def __str__(self) -> str:
        return f"crowd settings of {self.study}"


class TrainingItem(models.Model):
    """A gold item of the training: a summary of a document, its correct judgement and why."""

    crowd_study = models.ForeignKey(CrowdStudy, on_delete=models.CASCADE, related_name="training_items")
    document = models.ForeignKey(Document, on_delete=models.PROTECT, related_name="+")
    summary_text = models.TextField()
    expected = models.CharField(max_length=20)  # protocols.tasks.FAITHFUL or UNFAITHFUL
    explanation = models.TextField(blank=True)
    position = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["crowd_study", "position", "pk"]

    def __str__(self) -> str:
        return f"training item {self.position} of {self.crowd_study}"


class CrowdCheck(models.Model):
    """A study item that is an attention check (looks like any item to the worker)."""

    item = models.OneToOneField(StudyItem, on_delete=models.CASCADE, related_name="crowd_check")
    kind = models.CharField(max_length=20)  # protocols.attention: verbatim, fusion, entity_swap, ... researcher
    expected = models.CharField(max_length=20)
    span_start = models.PositiveIntegerField(null=True, blank=True)
    span_end = models.PositiveIntegerField(null=True, blank=True)
    source = models.JSONField(default=dict, blank=True)

    def __str__(self) -> str:
        return f"{self.kind} check {self.item}"


class CrowdWorker(models.Model):
    """A worker who arrived by the public link: their account (no password), where they are, how it ended."""

    class Status(models.TextChoices):
        ACTIVE = "active", "Working"
        COMPLETED = "completed", "Completed"
        SCREENED_OUT = "screened_out", "Screened out (training)"
        BLOCKED = "blocked", "Blocked (checks)"
        LEFT = "left", "Left on the platform (returned, timed out, rejected)"

    crowd_study = models.ForeignKey(CrowdStudy, on_delete=models.CASCADE, related_name="workers")
    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="crowd_worker")
    participation = models.OneToOneField(Participation, on_delete=models.CASCADE, related_name="crowd_worker")
    platform_study_id = models.CharField(max_length=100, blank=True)
    platform_session_id = models.CharField(max_length=100, blank=True)
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.ACTIVE)
    phase = models.CharField(max_length=20)
    consented_at = models.DateTimeField(null=True, blank=True)
    training_attempt = models.PositiveSmallIntegerField(default=1)
    # The current attempt's answers: {training item id: label}; every finished attempt in training_results.
    training_answers = models.JSONField(default=dict, blank=True)
    training_results = models.JSONField(default=list, blank=True)
    # {"pre_survey": {question key: answer}, "post_survey": {...}}
    survey_answers = models.JSONField(default=dict, blank=True)
    # The warn/block reasons already shown to the worker (a notice appears once per new reason).
    warnings = models.JSONField(default=list, blank=True)
    end_reason = models.TextField(blank=True)
    started_at = models.DateTimeField(auto_now_add=True)
    last_seen_at = models.DateTimeField(auto_now=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["crowd_study", "started_at", "pk"]

    def __str__(self) -> str:
        return f"{self.participation.external_id} in {self.crowd_study.study}"


class CrowdItemRecord(models.Model):
    """What the checks found on one item a worker did: the attention check's outcome (frozen when first
    graded, so a later resubmission cannot change it), and how often text was pasted into an explanation."""

    assignment = models.OneToOneField(Assignment, on_delete=models.CASCADE, related_name="crowd_record")
    worker = models.ForeignKey(CrowdWorker, on_delete=models.CASCADE, related_name="records")
    paste_events = models.PositiveIntegerField(default=0)
    evaluated_at = models.DateTimeField(null=True, blank=True)
    check_passed = models.BooleanField(null=True, blank=True)
    check_reason = models.TextField(blank=True)

    def __str__(self) -> str:
        return f"checks of {self.assignment}"
