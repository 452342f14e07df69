from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.contrib.auth.admin import UserAdmin
from django.contrib.auth.forms import UserCreationForm
from django.db.models import QuerySet
from django.http import HttpRequest

from accounts.models import AnnotatorAccount
from accounts.services import role_group
from common import roles


class AnnotatorCreationForm(UserCreationForm):
    class Meta(UserCreationForm.Meta):
        model = AnnotatorAccount
        fields = ("username", "email", "first_name")


@admin.register(AnnotatorAccount)
class AnnotatorAdmin(UserAdmin):
    """Creating a user here makes them an annotator; no group juggling needed."""

    add_form = AnnotatorCreationForm
    add_fieldsets = ((None, {"fields": ("username", "email", "first_name", "password1", "password2")}),)
    list_display = ["username", "email", "first_name", "is_active", "last_login"]
    list_filter = ["is_active"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[AnnotatorAccount]:
        return super().get_queryset(request).filter(groups__name=roles.ANNOTATOR)

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        super().save_model(request, obj, form, change)
        if not change:
            obj.groups.add(role_group(roles.ANNOTATOR))
