from django.contrib import admin

from scoring.models import Explanation


@admin.register(Explanation)
class ExplanationAdmin(admin.ModelAdmin):
    list_display = ["summary", "metric", "score", "config_hash", "code_version", "error", "created_at"]
    list_filter = ["metric", "config_hash"]
    raw_id_fields = ["summary"]
    list_select_related = ["summary__document__dataset"]
