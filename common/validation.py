"""Client input, parsed and checked in one place: numbers that are finite and in range, text a database can
store, JSON whose every string and number is one of those.

Anonymous crowd workers and scripts send whatever they like. A NaN stored as an annotator's time breaks
every JSON answer that shows it; NUL (U+0000) cannot be stored in a PostgreSQL text or jsonb value, and a
lone surrogate (U+D800-U+DFFF on its own) cannot be encoded as UTF-8 at all, so either one, let through,
is a 500 with half a request written. Views, API fields, forms, services and importers call these
functions and turn an InputError into their own answer: a 400 naming the field, or an import error naming
file, line and field. No Django here.
"""

from __future__ import annotations

import json
import math
import re
from decimal import Decimal, InvalidOperation
from typing import Any

# A longer numeric string is no number anyone typed; float("1" * 5000) would also just be inf.
MAX_NUMBER_CHARS = 64
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
# Primary keys are 64-bit.
MAX_ID = 2**63 - 1
# Python's decimal-digit parsing accepts every script's digits, "1_000", "nan" and "infinity"; clients
# send ASCII.
_FLOAT = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?", re.ASCII)
_INT = re.compile(r"[+-]?\d+", re.ASCII)
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
_SHOWN_CHARS = 40


class InputError(ValueError):
    """Bad client input. `field` names where it is (a parameter, or a path such as `notes.3`); the message
    is a sentence that names it too."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


def _escaped(char: str) -> str:
    code = ord(char)
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def printable(text: str) -> str:
    """`text` with NUL, lone surrogates and other non-printable characters escaped (\\u0000), safe to echo
    in any answer."""
    return "".join(char if char.isprintable() else _escaped(char) for char in text)


def _shown(raw: Any) -> str:
    if isinstance(raw, str):
        cut = raw[:_SHOWN_CHARS]
        return repr(cut) + ("…" if len(raw) > _SHOWN_CHARS else "")
    return type(raw).__name__ if not isinstance(raw, int | float) or isinstance(raw, bool) else repr(raw)


def _range(value: float, field: str, minimum: float | None, maximum: float | None) -> None:
    if minimum is not None and value < minimum:
        raise InputError(field, f"{field} must be at least {minimum:g}, got {value:g}")
    if maximum is not None and value > maximum:
        raise InputError(field, f"{field} must be at most {maximum:g}, got {value:g}")


def finite_number(raw: Any, *, field: str, minimum: float | None = None, maximum: float | None = None) -> float:
    """A finite float from a JSON number or a decimal string, within [minimum, maximum] when given.

    Refused: booleans, null, "nan", "inf", 1e999 (which JSON parsers read as infinity), numbers too large
    for a float, and anything outside the range.
    """
    if isinstance(raw, str):
        text = raw.strip()
        if len(text) > MAX_NUMBER_CHARS or not _FLOAT.fullmatch(text):
            raise InputError(field, f"{field} must be a finite number, got {_shown(raw)}")
        value = float(text)
    elif isinstance(raw, int | float) and not isinstance(raw, bool):
        try:
            value = float(raw)
        except OverflowError:
            raise InputError(field, f"{field} must be a finite number, got one too large for a float") from None
    else:
        raise InputError(field, f"{field} must be a number, got {_shown(raw)}")
    if not math.isfinite(value):
        raise InputError(field, f"{field} must be a finite number, got {_shown(raw)}")
    _range(value, field, minimum, maximum)
    return value


def bounded_int(raw: Any, *, field: str, minimum: int, maximum: int) -> int:
    """A whole number from a JSON integer or a string of ASCII digits, within [minimum, maximum]."""
    if isinstance(raw, str):
        text = raw.strip()
        if len(text) > MAX_NUMBER_CHARS or not _INT.fullmatch(text):
            raise InputError(field, f"{field} must be a whole number, got {_shown(raw)}")
        value = int(text)
    elif isinstance(raw, int) and not isinstance(raw, bool):
        value = raw
    else:
        raise InputError(field, f"{field} must be a whole number, got {_shown(raw)}")
    if not minimum <= value <= maximum:
        shown = str(value) if len(str(value)) <= _SHOWN_CHARS else "a longer number"
        raise InputError(field, f"{field} must be between {minimum} and {maximum}, got {shown}")
    return value


_MONEY = re.compile(r"\+?(?:\d+(?:\.\d*)?|\.\d+)", re.ASCII)
CENT = Decimal("0.01")


def money(raw: Any, *, field: str, maximum: Decimal) -> Decimal:
    """An amount of money as a Decimal with two decimal places, from 0 to `maximum`: a decimal string
    ("1.50") or a JSON number. Refused: booleans, negative numbers, NaN and infinities, exponents, more than
    two decimal places (no silent rounding of what a worker is paid) and anything above `maximum`."""
    if isinstance(raw, bool) or not isinstance(raw, str | int | float | Decimal):
        raise InputError(field, f"{field} must be an amount such as 1.50, got {_shown(raw)}")
    if isinstance(raw, float) and not math.isfinite(raw):
        raise InputError(field, f"{field} must be a finite amount, got {_shown(raw)}")
    text = (repr(raw) if isinstance(raw, float) else str(raw)).strip()
    if len(text) > MAX_NUMBER_CHARS or not _MONEY.fullmatch(text):
        raise InputError(field, f"{field} must be an amount of at least 0 such as 1.50, got {_shown(raw)}")
    try:
        value = Decimal(text)
    except InvalidOperation:  # pragma: no cover - the pattern admits only decimal numbers
        raise InputError(field, f"{field} must be an amount such as 1.50, got {_shown(raw)}") from None
    if value != value.quantize(CENT, rounding="ROUND_DOWN"):
        raise InputError(field, f"{field} has more than two decimal places: {text[:_SHOWN_CHARS]}")
    if value > maximum:
        raise InputError(field, f"{field} must be at most {maximum}, got {text[:_SHOWN_CHARS]}")
    return value.quantize(CENT)


def text_problem(value: str) -> str | None:
    """Why `value` cannot be stored as text (NUL, a lone surrogate), or None when it can."""
    found = _UNSTORABLE.search(value)
    if found is None:
        return None
    what = "a NUL character" if found.group() == "\x00" else "a lone surrogate"
    return f"contains {what} ({_escaped(found.group())}) at position {found.start()}"


def storable_text(raw: Any, *, field: str, max_chars: int | None = None) -> str:
    """Text that can be stored: a string without NUL or lone surrogates, at most `max_chars` long."""
    if not isinstance(raw, str):
        raise InputError(field, f"{field} must be text, got {_shown(raw)}")
    problem = text_problem(raw)
    if problem is not None:
        raise InputError(field, f"{field} {problem}")
    if max_chars is not None and len(raw) > max_chars:
        raise InputError(field, f"{field} has {len(raw)} characters; at most {max_chars}")
    return raw


def storable_text_problem(raw: Any, *, what: str, max_chars: int | None = None) -> str | None:
    """Why `raw` cannot be stored as text (not text, NUL, a lone surrogate, too long) as a sentence for a form
    or a service's ValidationError, or None when it can."""
    try:
        storable_text(raw, field=what, max_chars=max_chars)
    except InputError as exc:
        return f"{exc.message[:1].upper()}{exc.message[1:]}."
    return None


def json_check(value: Any, *, field: str = "") -> None:
    """Walk parsed JSON: every key and string must be storable text and every number finite; the first
    that is not raises InputError naming its path from `field` (e.g. `draft.task.edit.text`, `notes.3`)."""
    pending: list[tuple[str, Any]] = [(field, value)]
    while pending:  # a loop, not recursion: nesting depth is the client's choice
        path, item = pending.pop()
        if isinstance(item, str):
            problem = text_problem(item)
            if problem is not None:
                raise InputError(path, f"{path or 'the text'} {problem}")
        elif isinstance(item, float):
            if not math.isfinite(item):
                raise InputError(path, f"{path or 'the value'} must be a finite number, got {item!r}")
        elif isinstance(item, dict):
            for key, child in reversed(item.items()):
                name = key if isinstance(key, str) else str(key)
                child_path = f"{path}.{printable(name)}" if path else printable(name)
                problem = text_problem(name)
                if problem is not None:
                    raise InputError(child_path, f"the key of {child_path} {problem}")
                pending.append((child_path, child))
        elif isinstance(item, list | tuple):
            for index in range(len(item) - 1, -1, -1):
                pending.append((f"{path}.{index}" if path else str(index), item[index]))


def json_parse(raw: bytes | str, *, field: str = "") -> Any:
    """Parse a JSON body and json_check it: besides what json_check refuses (including the NaN and Infinity
    literals Python's parser reads), nesting too deep to parse (the parser recurses) is refused."""
    try:
        value = json.loads(raw)
    except RecursionError:
        raise InputError(field, "not valid JSON: nested too deeply") from None
    except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError
        raise InputError(field, f"not valid JSON: {exc}") from None
    json_check(value, field=field)
    return value


def page_size(raw: Any, *, default: int, maximum: int) -> int:
    """A requested page size: a malformed or non-positive one gives the default, a larger one the maximum
    (a page size is a wish, not data; pages and the API have always answered it this way)."""
    if raw is None or raw == "":
        return default
    try:
        size = bounded_int(raw, field="page_size", minimum=1, maximum=10**MAX_NUMBER_CHARS)
    except InputError:
        return default
    return min(size, maximum)


def errors_by_field(exc: Exception) -> dict[str, list[str]]:
    """The messages of a (Django) ValidationError by the field they name; those naming none under "detail",
    as the API answers them. A form shows them on its fields, the API returns them, a command prints them."""
    by_field = getattr(exc, "error_dict", None)
    if by_field is not None:
        # A ValidationError with an error_dict (checked above) has message_dict.
        return dict(exc.message_dict)  # type: ignore[attr-defined]
    return {"detail": list(getattr(exc, "messages", [str(exc)]))}
