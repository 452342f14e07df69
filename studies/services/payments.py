"""The researcher's payment rules of a study (protocols/payments.py computes the payments from them)."""

from __future__ import annotations

import re
from decimal import Decimal

from django.contrib.auth.models import User
from django.core.exceptions import ValidationError

from common.validation import InputError, bounded_int, money
from studies.models import PaymentRules, Study
from studies.services.participation import MAX_BONUS

# The most one item earns; a typo of 1000 instead of 1.00 is refused rather than paid.
MAX_ITEM_RATE = Decimal("100.00")
CURRENCY = re.compile(r"[A-Z]{3}", re.ASCII)


def payment_rules_set(
    *,
    study: Study,
    per_item: object,
    per_accepted_item: object,
    gold_bonus: object,
    gold_min_percent: object,
    currency: object,
    by: User | None,
) -> PaymentRules:
    """Check every value (amounts: Decimal, 0 to their maximum, at most two decimal places; the percent a
    whole number 0-100; the currency three capital letters) and store the rules. Problems come back by field
    at once and nothing changes. Replaying stores the same rules."""
    errors: dict[str, str] = {}
    values: dict[str, object] = {}
    for field, raw, maximum in (
        ("per_item", per_item, MAX_ITEM_RATE),
        ("per_accepted_item", per_accepted_item, MAX_ITEM_RATE),
        ("gold_bonus", gold_bonus, MAX_BONUS),
    ):
        try:
            values[field] = money(raw, field=field, maximum=maximum)
        except InputError as exc:
            errors[field] = exc.message
    try:
        values["gold_min_percent"] = bounded_int(gold_min_percent, field="gold_min_percent", minimum=0, maximum=100)
    except InputError as exc:
        errors["gold_min_percent"] = exc.message
    if not isinstance(currency, str) or not CURRENCY.fullmatch(currency):
        errors["currency"] = "currency must be a three-letter code such as GBP or USD."
    else:
        values["currency"] = currency
    if errors:
        raise ValidationError(errors)
    rules, _ = PaymentRules.objects.update_or_create(study=study, defaults={**values, "updated_by": by})
    return rules
