"""Alfred's configuration: one typed object, read from the environment and ``.env``.

Nothing configured means embedded defaults: a local MongoDB-wire server, a local Redis
server, the offline LLM and the local embedding model. Each key or URL switches one
production part on. Entry points call :func:`load_settings` once; nothing else reads
the environment.
"""

from __future__ import annotations

import re
from pathlib import Path

from pydantic import Field, SecretStr, ValidationInfo, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from integrations.modes import Mode
from memory.errors import ConfigurationError
from memory.flags import MemoryFlags

__all__ = [
    "CalendarSettings",
    "DatabaseSettings",
    "EmbeddingSettings",
    "FlagSettings",
    "LLMSettings",
    "Mem0Settings",
    "Mode",
    "ProcessSettings",
    "QueueSettings",
    "RetentionSettings",
    "Settings",
    "TelegramSettings",
    "load_settings",
]

#: The accepted values of the settings that are a choice.
_CHOICES: dict[str, tuple[str, ...]] = {
    "embeddings_provider": ("auto", "openai", "local"),
    "mem0_mode": ("auto", "off", "cloud", "oss"),
    "run_worker": ("inprocess", "external"),
    "log_level": ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"),
}


class _Concern(BaseSettings):
    """One concern's settings, read from the same environment and ``.env`` as the rest."""

    model_config = SettingsConfigDict(
        env_file=".env", env_file_encoding="utf-8", extra="ignore", case_sensitive=False
    )


def _lower(value: str) -> str:
    return value.strip().lower()


def _one_of(value: str, info: ValidationInfo) -> str:
    """A mistyped choice fails at start, not as a silent default (or a traceback from the
    logging module) later."""
    choices = _CHOICES[str(info.field_name)]
    if value.upper() not in (c.upper() for c in choices):
        raise ValueError(f"must be one of {', '.join(choices)}")
    return value


class ProcessSettings(_Concern):
    """Where Alfred keeps its files, how it logs, and its operators' endpoints."""

    # Where embedded servers keep their data, relative to the working directory.
    alfred_data_dir: Path = Path(".alfred")
    log_level: str = "INFO"
    embedded_start_timeout: float = Field(default=30.0, gt=0)
    # Prometheus /metrics, /healthz and /readyz for operators (0 turns the server off).
    # Loopback unless configured: metrics name models, job names and queue depths, which
    # nobody outside the machine needs; a container sets 0.0.0.0 for its own network.
    metrics_listen: str = "127.0.0.1"
    metrics_port: int = Field(default=9100, ge=0, le=65535)
    # When set, those endpoints answer only "Authorization: Bearer <token>".
    metrics_token: SecretStr | None = None

    _log_level_choice = field_validator("log_level")(_one_of)

    @field_validator("metrics_token", mode="before")
    @classmethod
    def _blank_token_is_none(cls, value: object) -> object:
        """``METRICS_TOKEN=`` (as left in a copied .env) means no token, not the empty one:
        an empty bearer would be a lock anyone opens."""
        if isinstance(value, str) and not value.strip():
            return None
        return value

    def data_dir(self) -> Path:
        """The absolute data folder (resolved against the working directory)."""
        return self.alfred_data_dir.expanduser().resolve()


class DatabaseSettings(_Concern):
    """MongoDB: unset means the embedded server."""

    mongodb_uri: SecretStr | None = None
    mongodb_database: str = "alfred"
    mongodb_timeout_ms: int = Field(default=5000, ge=100)
    embedded_mongo_port: int = Field(default=0, ge=0, le=65535)

    @property
    def database_mode(self) -> Mode:
        return Mode.CONFIGURED if self.mongodb_uri else Mode.EMBEDDED


class QueueSettings(_Concern):
    """Redis for the job queue (unset means the embedded server), and who runs the jobs."""

    redis_url: SecretStr | None = None
    # "inprocess": the bot runs the job worker itself; "external": arq processes do.
    run_worker: str = "inprocess"
    embedded_redis_port: int = Field(default=0, ge=0, le=65535)

    _run_worker_lower = field_validator("run_worker")(_lower)
    _run_worker_choice = field_validator("run_worker")(_one_of)

    @property
    def queue_mode(self) -> Mode:
        return Mode.CONFIGURED if self.redis_url else Mode.EMBEDDED


class TelegramSettings(_Concern):
    """The bot's token, and the webhook it serves in production."""

    telegram_bot_token: SecretStr | None = None
    telegram_api_base_url: str | None = None
    webhook_url: str | None = None
    webhook_secret: SecretStr | None = None
    webhook_listen: str = "0.0.0.0"
    webhook_port: int = Field(default=8080, ge=1, le=65535)
    # Updates handled at once, each chat's in order; 1: one at a time, in arrival order.
    update_concurrency: int = Field(default=64, ge=1, le=10_000)

    @property
    def telegram_mode(self) -> Mode:
        return Mode.CONFIGURED if self.telegram_bot_token else Mode.OFF


class OpenAIEndpointSettings(_Concern):
    """Any OpenAI-compatible endpoint, shared by the LLM and the embeddings."""

    openai_api_key: SecretStr | None = None
    openai_base_url: str | None = None
    llm_timeout: float = Field(default=30.0, gt=0)


class LLMSettings(OpenAIEndpointSettings):
    """The language models; an unset key means the offline provider."""

    llm_fast_model: str = "gpt-4o-mini"
    llm_slow_model: str = "gpt-4o"
    llm_chat_model: str = "gpt-4o-mini"
    # Seconds an explicit "remember that …" (or "actually …") waits for the model to
    # read it, all retries included; after that the words are stored as said. The
    # person is waiting, and LLM_TIMEOUT with its retries would be minutes.
    llm_explicit_budget: float = Field(default=5.0, gt=0)

    @property
    def llm_mode(self) -> Mode:
        """The offline provider counts as embedded: it is the no-key default."""
        return Mode.CONFIGURED if self.openai_api_key else Mode.EMBEDDED


class EmbeddingSettings(OpenAIEndpointSettings):
    """Embeddings: "auto" uses OpenAI when a key is set, the local model otherwise."""

    embeddings_provider: str = "auto"
    embeddings_model: str = "text-embedding-3-small"

    _provider_lower = field_validator("embeddings_provider")(_lower)
    _provider_choice = field_validator("embeddings_provider")(_one_of)

    @property
    def embeddings_mode(self) -> Mode:
        if self.embeddings_provider == "openai" or (
            self.embeddings_provider == "auto" and self.openai_api_key
        ):
            return Mode.CONFIGURED
        return Mode.EMBEDDED


class Mem0Settings(_Concern):
    """The mem0 semantic layer: off unless a key (cloud) or MEM0_MODE=oss is set."""

    mem0_api_key: SecretStr | None = None
    mem0_host: str | None = None
    mem0_mode: str = "auto"

    _mode_lower = field_validator("mem0_mode")(_lower)
    _mode_choice = field_validator("mem0_mode")(_one_of)

    @property
    def mem0_enabled_mode(self) -> Mode:
        if self.mem0_mode == "off":
            return Mode.OFF
        if self.mem0_mode in ("cloud", "oss") or self.mem0_api_key:
            return Mode.CONFIGURED
        return Mode.OFF


class FlagSettings(_Concern):
    """Feature flags (seed 004 rollout); all on by default."""

    memory_enabled: bool = True
    memory_retrieval: bool = True
    memory_extraction: bool = True
    memory_conflicts: bool = True
    memory_cross_partner: bool = True
    memory_calendar: bool = True
    memory_allowed_circles: str = ""

    @field_validator("memory_allowed_circles")
    @classmethod
    def _chat_ids(cls, value: str) -> str:
        """Circles are Telegram group chat ids; a name or a typo would silently switch
        memory off everywhere, so it is refused."""
        for item in (c.strip() for c in value.split(",")):
            if item and not re.fullmatch(r"-?\d{1,20}", item):
                raise ValueError(
                    f"{item[:30]!r} is not a chat id (a comma-separated list like -100123,-100456)"
                )
        return value

    def flags(self) -> MemoryFlags:
        """The feature flags as the domain reads them."""
        allowed = frozenset(c.strip() for c in self.memory_allowed_circles.split(",") if c.strip())
        return MemoryFlags(
            enabled=self.memory_enabled,
            retrieval=self.memory_retrieval,
            extraction=self.memory_extraction,
            conflicts=self.memory_conflicts,
            cross_partner=self.memory_cross_partner,
            calendar=self.memory_calendar,
            allowed_circles=allowed,
        )


class RetentionSettings(_Concern):
    """How long archived circles and formed messages are kept."""

    circle_retention_days: int = Field(default=30, ge=0)
    message_retention_days: int = Field(default=30, ge=0)


class CalendarSettings(_Concern):
    """Google Calendar: off unless an OAuth client is configured."""

    google_client_id: str | None = None
    google_client_secret: SecretStr | None = None
    google_redirect_url: str | None = None
    calendar_encryption_key: SecretStr | None = None
    # Minutes between two incremental syncs of each connected calendar.
    calendar_sync_minutes: int = Field(default=15, ge=1, le=1440)
    # Other Google endpoints (a proxy, or a local server in tests); unset means Google's.
    google_calendar_api_url: str | None = None
    google_oauth_base_url: str | None = None

    @property
    def calendar_mode(self) -> Mode:
        return Mode.CONFIGURED if self.google_client_id else Mode.OFF


class Settings(
    ProcessSettings,
    DatabaseSettings,
    QueueSettings,
    TelegramSettings,
    LLMSettings,
    EmbeddingSettings,
    Mem0Settings,
    FlagSettings,
    RetentionSettings,
    CalendarSettings,
):
    """Every setting Alfred reads, one concern per base class (``.env.example`` documents
    each). A builder that needs one concern takes that class, so what it may read is
    written in its signature; entry points hold the whole."""


def load_settings(**overrides: object) -> Settings:
    """Read settings from the environment and ``.env``; ``overrides`` win (for tests).

    Raises :class:`ConfigurationError` for a ``.env`` that is not UTF-8 text (pydantic's
    ``ValidationError`` covers values that are wrong)."""
    try:
        return Settings(**overrides)  # type: ignore[arg-type]
    except UnicodeDecodeError as exc:
        raise ConfigurationError(
            f".env is not UTF-8 text (byte {exc.start + 1})",
            hint="save it as UTF-8, or remove it",
        ) from None
