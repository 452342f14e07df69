"""The API's side of common.validation: a JSON parser and a float field that refuse what it refuses."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers
from rest_framework.exceptions import ParseError, ValidationError
from rest_framework.parsers import JSONParser

from common.validation import InputError, finite_number, json_parse


class CheckedJSONParser(JSONParser):
    """DRF's JSON parser reads 1e999 as infinity, keeps NUL and lone surrogates (which no database column
    stores and which the JSON renderer cannot even encode in its error answer) and fails with a 500 on
    deeply nested input. This one answers 400 naming the path of the first such value."""

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        raw = stream.read() if stream is not None else b""
        try:
            return json_parse(raw)
        except InputError as exc:
            if not exc.field:
                raise ParseError(f"JSON parse error - {exc}") from None
            raise ValidationError({exc.field: [exc.message]}) from None


class FiniteFloatField(serializers.FloatField):
    """A FloatField that refuses "nan", "inf", 1e999 and numbers outside [min_value, max_value] (DRF's own
    accepts the string "nan" and answers with it)."""

    def to_internal_value(self, data: Any) -> float:
        try:
            return finite_number(data, field=self.field_name or "value", minimum=self.min_value, maximum=self.max_value)
        except InputError as exc:
            raise serializers.ValidationError(exc.message, code="invalid") from None
