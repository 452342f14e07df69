"""Secrets kept in the database only as long as background work needs them (an LLM endpoint's API key while its
run is queued or running), sealed so that a copy of the database alone does not reveal them. No Django: the
caller passes the server's secret keys.

Fernet (AES-128-CBC with HMAC-SHA256) from `cryptography`, with a key derived from the server's SECRET_KEY by
HKDF for this one purpose; the fallbacks (SECRET_KEY_FALLBACKS) still open what was sealed before a rotation.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

SEALED_PREFIX = "sealed:v1:"


class SealError(ValueError):
    """A sealed value that none of the server's keys opens (a changed SECRET_KEY, a tampered value)."""


def _fernet(secret: str, purpose: str) -> Fernet:
    derived = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=purpose.encode()).derive(secret.encode())
    return Fernet(base64.urlsafe_b64encode(derived))


def _keys(secrets: Sequence[str], purpose: str) -> MultiFernet:
    if not secrets:
        raise SealError("no secret key to seal with")
    return MultiFernet([_fernet(secret, purpose) for secret in secrets])


def secret_seal(plaintext: str, *, secrets: Sequence[str], purpose: str) -> str:
    """The plaintext sealed with the first of the secrets ("" stays ""): text safe to store."""
    if not plaintext:
        return ""
    return SEALED_PREFIX + _keys(secrets, purpose).encrypt(plaintext.encode()).decode("ascii")


def secret_open(sealed: str, *, secrets: Sequence[str], purpose: str) -> str:
    """What secret_seal sealed with any of the secrets. SealError when none opens it or it was not sealed."""
    if not sealed:
        return ""
    if not sealed.startswith(SEALED_PREFIX):
        raise SealError("the value was not sealed")
    try:
        return _keys(secrets, purpose).decrypt(sealed[len(SEALED_PREFIX) :].encode("ascii")).decode()
    except (InvalidToken, UnicodeError) as error:
        raise SealError("none of the server's secret keys opens the sealed value") from error
