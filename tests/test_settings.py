from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


PRODUCTION_KEY = "x7!kq2#Lr9@vW4$zN8&pT1^mB6*cY3(hD5)jF0-gS2+uA7=eQ9"


def clean_environment(**env: str) -> dict[str, str]:
    # The browser tests set DJANGO_ALLOW_ASYNC_UNSAFE in this process; a deployment must not have it.
    unwanted = {"DEBUG", "SECRET_KEY", "SECRET_KEY_FILE", "ALLOWED_HOSTS", "CACHE_URL", "DJANGO_ALLOW_ASYNC_UNSAFE"}
    return {**{k: v for k, v in os.environ.items() if k not in unwanted}, **env}


def manage(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=clean_environment(**env),
        capture_output=True,
        text=True,
        timeout=120,
    )


def setting_of_a_process(name: str, **env: str) -> subprocess.Popen[str]:
    """A process that loads the settings module (as every manage.py command and gunicorn worker does
    first) and prints one setting."""
    code = (
        "import os; os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'faithanno.settings'); "
        f"from django.conf import settings; print(settings.{name})"
    )
    return subprocess.Popen(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env=clean_environment(**env),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def last_line(text: str) -> str:
    return text.strip().splitlines()[-1]


def test_it_passes_the_deploy_check_with_production_variables() -> None:
    result = manage(
        "check",
        "--deploy",
        "--fail-level",
        "WARNING",
        DEBUG="False",
        SECRET_KEY=PRODUCTION_KEY,
        ALLOWED_HOSTS="faithanno.example.org",
        CACHE_URL="redis://127.0.0.1:6379/1",
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_it_warns_in_the_deploy_check_when_throttle_counts_are_private_to_a_process() -> None:
    result = manage(
        "check", "--deploy", DEBUG="False", SECRET_KEY=PRODUCTION_KEY, ALLOWED_HOSTS="faithanno.example.org"
    )
    assert "faithanno.W001" in result.stderr + result.stdout
    assert "CACHE_URL" in result.stderr + result.stdout


def test_it_runs_without_debug_unless_debug_is_set(tmp_path: Path) -> None:
    process = setting_of_a_process("DEBUG", FAITHANNO_DATA_DIR=str(tmp_path))
    out, err = process.communicate(timeout=120)
    assert process.returncode == 0, err
    assert out.strip() == "False"


def test_it_refuses_the_published_development_key_in_every_mode(tmp_path: Path) -> None:
    for debug in ("", "False", "True"):
        key = "faithanno-development-only-secret-key-not-for-production"
        process = setting_of_a_process("SECRET_KEY", DEBUG=debug, SECRET_KEY=key, FAITHANNO_DATA_DIR=str(tmp_path))
        _, err = process.communicate(timeout=120)
        assert process.returncode != 0
        assert "SECRET_KEY is the development key published" in last_line(err)
        assert "Set SECRET_KEY to a long random string" in last_line(err)


def test_it_keeps_one_random_key_per_installation_when_no_secret_key_is_set(tmp_path: Path) -> None:
    # Four workers starting at the same moment, as gunicorn's do, all sign with the same key.
    processes = [setting_of_a_process("SECRET_KEY", FAITHANNO_DATA_DIR=str(tmp_path)) for _ in range(4)]
    keys = set()
    for process in processes:
        out, err = process.communicate(timeout=120)
        assert process.returncode == 0, err
        keys.add(out.strip())
    key_file = tmp_path / "secret_key"
    assert keys == {key_file.read_text().strip()}
    assert len(keys.pop()) >= 50
    assert key_file.stat().st_mode & 0o777 == 0o600
    assert sorted(path.name for path in tmp_path.iterdir()) == ["secret_key"]  # no drafts left behind
    # A new installation gets a key of its own.
    other = setting_of_a_process("SECRET_KEY", FAITHANNO_DATA_DIR=str(tmp_path / "other"))
    assert other.communicate(timeout=120)[0].strip() != key_file.read_text().strip()


def test_it_refuses_to_start_naming_secret_key_when_no_key_can_be_kept(tmp_path: Path) -> None:
    # The Docker image's case: its data directory is not writable, so a container needs SECRET_KEY.
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    process = setting_of_a_process("SECRET_KEY", FAITHANNO_DATA_DIR=str(blocker / "var"))
    _, err = process.communicate(timeout=120)
    assert process.returncode != 0
    assert "SECRET_KEY is not set and no key could be kept in" in last_line(err)
    assert "Set SECRET_KEY to a long random string" in last_line(err)


@pytest.mark.parametrize(
    ("variable", "value", "message"),
    [
        ("SECURE_SSL_REDIRECT", "ture", "SECURE_SSL_REDIRECT must be True or False"),
        ("DEBUG", "maybe", "DEBUG must be True or False"),
        ("EMAIL_USE_TLS", "Y", "EMAIL_USE_TLS must be True or False"),
        ("API_PAGE_SIZE", "ten", "API_PAGE_SIZE must be a whole number"),
        ("SECURE_HSTS_SECONDS", "1e6", "SECURE_HSTS_SECONDS must be a whole number"),
        ("FAITHANNO_BERTSCORE_LAYER", "four", "FAITHANNO_BERTSCORE_LAYER must be a whole number"),
        ("AXES_FAILURE_LIMIT", "0", "AXES_FAILURE_LIMIT must be at least 1"),
        ("THROTTLE_USER", "600/fortnight", "THROTTLE_USER must be a rate such as 60/minute"),
        ("CACHE_URL", "memcached://127.0.0.1", "CACHE_URL must be locmem://"),
    ],
)
def test_it_stops_on_a_malformed_variable_naming_it(tmp_path: Path, variable: str, value: str, message: str) -> None:
    env = {"DEBUG": "False", "SECRET_KEY": PRODUCTION_KEY, "ALLOWED_HOSTS": "faithanno.example.org", variable: value}
    process = setting_of_a_process("DEBUG", **env)
    _, err = process.communicate(timeout=120)
    assert process.returncode != 0
    assert message in last_line(err), err[-500:]
    assert repr(value) in last_line(err) or "at least" in message


def test_it_defaults_to_a_sqlite_file_without_database_url(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    code = (
        "from django.db import connection; print(connection.settings_dict['ENGINE'], connection.settings_dict['NAME'])"
    )
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            f"import django, os; os.environ['DJANGO_SETTINGS_MODULE']='faithanno.settings'; django.setup(); {code}",
        ],
        cwd=ROOT,
        env={**env, "FAITHANNO_DATA_DIR": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["django.db.backends.sqlite3", str(tmp_path / "faithanno.sqlite3")]
