from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from accounts.services import api_token_get_or_create, api_token_rotate


class Command(BaseCommand):
    help = "Print the API token of an account (created when it has none); --rotate replaces it with a new one."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument("--rotate", action="store_true", help="invalidate the old token and print a new one")

    def handle(self, *args: Any, username: str, rotate: bool, **options: Any) -> None:
        user = get_user_model().objects.filter(username=username, is_active=True).first()
        if user is None:
            raise CommandError(f"No active account named {username!r}.")
        token = api_token_rotate(user=user) if rotate else api_token_get_or_create(user=user)
        self.stdout.write(token.key)
