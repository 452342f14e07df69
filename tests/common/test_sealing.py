"""Sealed secrets (common/sealing.py): what is stored does not show the secret, only the server's keys open it,
a rotated key still opens what the old one sealed, and a tampered value is refused. Checked against an
independent Fernet built from the same HKDF derivation."""

from __future__ import annotations

import base64

import pytest
from cryptography.fernet import Fernet
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from common.sealing import SEALED_PREFIX, SealError, secret_open, secret_seal

PURPOSE = "test purpose"
SECRET = "sk-live-0123456789abcdef"


def test_it_stores_nothing_readable_and_opens_with_the_same_key() -> None:
    sealed = secret_seal(SECRET, secrets=["server-key"], purpose=PURPOSE)
    assert sealed.startswith(SEALED_PREFIX) and SECRET not in sealed
    assert secret_open(sealed, secrets=["server-key"], purpose=PURPOSE) == SECRET
    # Fernet tokens carry a random IV: the same secret sealed twice gives two different values.
    assert secret_seal(SECRET, secrets=["server-key"], purpose=PURPOSE) != sealed


def test_it_derives_the_fernet_key_by_hkdf_from_the_server_key() -> None:
    sealed = secret_seal(SECRET, secrets=["server-key"], purpose=PURPOSE)
    derived = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=PURPOSE.encode()).derive(b"server-key")
    independent = Fernet(base64.urlsafe_b64encode(derived))
    assert independent.decrypt(sealed.removeprefix(SEALED_PREFIX).encode()).decode() == SECRET


def test_it_refuses_another_key_another_purpose_and_a_tampered_value() -> None:
    sealed = secret_seal(SECRET, secrets=["server-key"], purpose=PURPOSE)
    with pytest.raises(SealError):
        secret_open(sealed, secrets=["another-key"], purpose=PURPOSE)
    with pytest.raises(SealError):
        secret_open(sealed, secrets=["server-key"], purpose="another purpose")
    flipped = sealed[:-5] + ("A" if sealed[-5] != "A" else "B") + sealed[-4:]
    with pytest.raises(SealError):
        secret_open(flipped, secrets=["server-key"], purpose=PURPOSE)
    with pytest.raises(SealError):
        secret_open(SECRET, secrets=["server-key"], purpose=PURPOSE)  # stored in plain text: never sent


def test_it_opens_what_a_rotated_key_sealed_through_the_fallbacks() -> None:
    sealed = secret_seal(SECRET, secrets=["old-key"], purpose=PURPOSE)
    assert secret_open(sealed, secrets=["new-key", "old-key"], purpose=PURPOSE) == SECRET
    assert secret_seal("", secrets=["new-key"], purpose=PURPOSE) == ""
    assert secret_open("", secrets=["new-key"], purpose=PURPOSE) == ""
