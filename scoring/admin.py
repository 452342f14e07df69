from django.contrib import admin

from scoring.metrics import display_name
from scoring.models import Explanation, ScoringClaim


@admin.register(Explanation)
class ExplanationAdmin(admin.ModelAdmin):
    list_display = ["summary", "metric_name", "score", "config_hash", "code_version", "error", "created_at"]
    list_filter = ["metric", "config_hash"]
    raw_id_fields = ["summary"]
    list_select_related = ["summary__document__dataset"]

    @admin.display(description="metric", ordering="metric")
    def metric_name(self, explanation: Explanation) -> str:
        return display_name(explanation.metric)


@admin.register(ScoringClaim)
class ScoringClaimAdmin(admin.ModelAdmin):
    """Claims held by scoring workers right now (a stuck one can be deleted here)."""

    list_display = ["summary", "metric", "config_hash", "owner", "expires_at"]
    raw_id_fields = ["summary"]
