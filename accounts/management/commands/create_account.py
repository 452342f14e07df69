from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from accounts.services import account_create
from common import roles


class Command(BaseCommand):
    help = "Create an annotator (default), researcher or admin account. Prints the password when generated."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument("--role", choices=roles.ROLES, default=roles.ANNOTATOR)
        parser.add_argument("--email", default="")
        parser.add_argument("--password", help="omit to generate one")
        parser.add_argument("--first-name", default="")

    def handle(
        self,
        *args: Any,
        username: str,
        role: str,
        email: str,
        password: str | None,
        first_name: str,
        **options: Any,
    ) -> None:
        try:
            user, used_password = account_create(
                username=username, role=role, email=email, password=password, first_name=first_name
            )
        except (ValueError, ValidationError) as exc:
            message = "; ".join(exc.messages) if isinstance(exc, ValidationError) else str(exc)
            raise CommandError(message) from exc
        self.stdout.write(f"created {role} '{user.username}'")
        if password is None:
            self.stdout.write(f"password: {used_password}")
