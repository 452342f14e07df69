"""Accounts are Django users in role groups; this app adds no table."""

from __future__ import annotations

from django.contrib.auth.models import User


class AnnotatorAccount(User):
    """The admin's "Annotators" page: people in the annotator role (a proxy over the user model)."""

    class Meta:
        proxy = True
        verbose_name = "annotator"
