from __future__ import annotations

from django.db import models


class Explanation(models.Model):
    """A metric's score for one summary together with the evidence behind it.

    One row per (summary, metric, configuration). The configuration hash covers the model ids, every
    setting that changes the output and the explainer's code version, so a changed configuration is
    computed anew while an unchanged one is skipped.
    """

    summary = models.ForeignKey("annotations.Summary", on_delete=models.CASCADE, related_name="explanations")
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
