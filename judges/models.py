"""LLM judges: a model rater (an endpoint, a model and its parameters, with the account its judgements
belong to), its runs over the items of a study task, what happened to each item, and the response cache.

The judgements themselves are ordinary `studies.Judgement` rows of the rater's account (role `model`),
written by the same submission service as every human's. Writes go through judges.services.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

from studies.models import StudyItem, StudyTask


class ModelRater(models.Model):
    """One model at one endpoint with fixed parameters: one rater in the analyses."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="model_rater")
    endpoint = models.URLField(max_length=500, help_text="the chat completions URL")
    model = models.CharField(max_length=200)
    # protocols.llm_judge.ChatParams as a dict: temperature, max_tokens, seed.
    parameters = models.JSONField(default=dict)
    # sha256 of endpoint, model and parameters: the same three are the same rater.
    key = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["model", "pk"]

    def __str__(self) -> str:
        return f"{self.model} at {self.endpoint}"


class JudgeRun(models.Model):
    """A model rater judging the items of one study task, within a budget."""

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        # The budget (requests, tokens or time) ran out: the items judged so far stay.
        STOPPED = "stopped", "Stopped by the budget"
        # The endpoint refused every request (a wrong key, an unknown model, a wrong URL).
        FAILED = "failed", "Failed"

    study_task = models.ForeignKey(StudyTask, on_delete=models.CASCADE, related_name="judge_runs")
    rater = models.ForeignKey(ModelRater, on_delete=models.PROTECT, related_name="runs")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.QUEUED)
    reason = models.TextField(blank=True, help_text="why the run stopped or failed")
    # Where the API key comes from: an environment variable named here, or (api_key) the key given in the
    # form, kept only until the run ends and never shown, exported or logged.
    api_key_variable = models.CharField(max_length=100, blank=True)
    api_key = models.TextField(blank=True)
    max_requests = models.PositiveIntegerField()
    max_tokens = models.PositiveIntegerField()
    max_seconds = models.PositiveIntegerField()
    tries = models.PositiveSmallIntegerField(default=3)
    guidelines_version = models.PositiveIntegerField(default=1)
    items_total = models.PositiveIntegerField(default=0)
    judged = models.PositiveIntegerField(default=0)
    failed = models.PositiveIntegerField(default=0)
    cached = models.PositiveIntegerField(default=0, help_text="items answered from the response cache")
    requests = models.PositiveIntegerField(default=0)
    prompt_tokens = models.PositiveIntegerField(default=0)
    completion_tokens = models.PositiveIntegerField(default=0)
    seconds = models.FloatField(default=0.0, help_text="wall time spent so far")
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-pk"]

    def __str__(self) -> str:
        return f"{self.rater.model} on {self.study_task} ({self.status})"

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


class JudgeItem(models.Model):
    """What one run did with one item: the exact prompt, model and parameters, the answer, and a judged
    item's judgements (in studies) or a failed item's reason (never a label)."""

    class Status(models.TextChoices):
        JUDGED = "judged", "Judged"
        FAILED = "failed", "Failed"

    run = models.ForeignKey(JudgeRun, on_delete=models.CASCADE, related_name="items")
    item = models.ForeignKey(StudyItem, on_delete=models.CASCADE, related_name="judge_items")
    status = models.CharField(max_length=20, choices=Status.choices)
    model = models.CharField(max_length=200)
    endpoint = models.URLField(max_length=500)
    parameters = models.JSONField(default=dict)
    # The chat messages exactly as sent, and their hash (the cache key, protocols.llm_judge.prompt_hash).
    prompt = models.JSONField(default=list)
    prompt_hash = models.CharField(max_length=64)
    response = models.TextField(blank=True, help_text="the last answer's text (cut at 20,000 characters)")
    reason = models.TextField(blank=True, help_text="why each try failed")
    tries = models.PositiveSmallIntegerField(default=0)
    from_cache = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["run", "item__position", "pk"]
        constraints = [models.UniqueConstraint(fields=["run", "item"], name="judge_item_unique")]

    def __str__(self) -> str:
        return f"{self.run} / item {self.item_id}: {self.status}"


class CachedResponse(models.Model):
    """A valid answer to one prompt: the same prompt hash (endpoint, model, parameters, messages) is
    answered from here without a request."""

    prompt_hash = models.CharField(max_length=64, unique=True)
    model = models.CharField(max_length=200)
    content = models.TextField()
    prompt_tokens = models.PositiveIntegerField(default=0)
    completion_tokens = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"{self.model} {self.prompt_hash[:12]}"
