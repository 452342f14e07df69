from __future__ import annotations

from django.db import models


class Explanation(models.Model):
    """A metric's score for one summary together with the evidence behind it.

    One row per (summary, metric, configuration). The configuration hash covers the model ids, every
    setting that changes the output and the explainer's code version, so a changed configuration is
    computed anew while an unchanged one is skipped.
    """

    summary = models.ForeignKey("corpus.Summary", on_delete=models.CASCADE, related_name="explanations")
    metric = models.CharField(max_length=50)
    config = models.JSONField(default=dict)
    config_hash = models.CharField(max_length=64)
    model_ids = models.JSONField(default=dict)
    code_version = models.CharField(max_length=20)
    # The headline score (BERTScore: precision, the thesis's best variant); null when undefined.
    score = models.FloatField(null=True, blank=True)
    scores = models.JSONField(default=dict, blank=True)
    payload = models.JSONField(default=dict, blank=True)
    # Why no score could be computed (for example an empty summary); empty when all went well.
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["summary", "metric"]
        constraints = [
            models.UniqueConstraint(fields=["summary", "metric", "config_hash"], name="explanation_unique_config")
        ]
        indexes = [models.Index(fields=["metric", "config_hash"])]

    def __str__(self) -> str:
        return f"{self.metric} of summary {self.summary_id}"


class ScoringClaim(models.Model):
    """A worker's claim on one summary while it computes one metric configuration for it.

    The unique constraint makes a claim exclusive: of several workers (threads, processes, machines)
    racing for the same summary only one inserts the row, so no summary is computed twice. A claim is
    deleted in the transaction that stores the explanation; one whose worker died lapses at `expires_at`
    (or at once, when the worker was a process on the same host that no longer runs).
    """

    summary = models.ForeignKey("corpus.Summary", on_delete=models.CASCADE, related_name="+")
    metric = models.CharField(max_length=50)
    config_hash = models.CharField(max_length=64)
    owner = models.CharField(max_length=200)
    expires_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["summary", "metric", "config_hash"], name="scoring_claim_unique_config")
        ]
        indexes = [models.Index(fields=["owner"])]

    def __str__(self) -> str:
        return f"{self.metric} of summary {self.summary_id} claimed by {self.owner}"
