"""Settings: nothing configured means embedded; every field is documented."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pydantic import ValidationError

from runtime.settings import Mode, Settings

ROOT = Path(__file__).resolve().parents[3]


def test_nothing_configured_means_embedded_defaults() -> None:
    s = Settings(_env_file=None)  # type: ignore[call-arg]
    assert s.database_mode is Mode.EMBEDDED
    assert s.queue_mode is Mode.EMBEDDED
    assert s.llm_mode is Mode.EMBEDDED
    assert s.embeddings_mode is Mode.EMBEDDED
    assert s.mem0_enabled_mode is Mode.OFF
    assert s.calendar_mode is Mode.OFF
    assert s.telegram_mode is Mode.OFF
    assert s.data_dir().is_absolute()


def test_keys_switch_production_parts_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MONGODB_URI", "mongodb://db.example:27017")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("MEM0_API_KEY", "m0-test")
    s = Settings(_env_file=None)  # type: ignore[call-arg]
    assert s.database_mode is Mode.CONFIGURED
    assert s.llm_mode is Mode.CONFIGURED
    assert s.embeddings_mode is Mode.CONFIGURED
    assert s.mem0_enabled_mode is Mode.CONFIGURED
    # secrets never show in a repr
    assert "sk-test" not in repr(s)


def test_local_embeddings_can_be_forced(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("EMBEDDINGS_PROVIDER", "LOCAL")
    assert Settings(_env_file=None).embeddings_mode is Mode.EMBEDDED  # type: ignore[call-arg]


def test_dotenv_file_is_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / ".env").write_text("MONGODB_DATABASE=from_dotenv\n")
    monkeypatch.chdir(tmp_path)
    assert Settings().mongodb_database == "from_dotenv"


def test_bad_value_is_rejected(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EMBEDDED_MONGO_PORT", "99999")
    with pytest.raises(ValidationError):
        Settings(_env_file=None)  # type: ignore[call-arg]


def test_env_example_documents_every_setting() -> None:
    text = (ROOT / ".env.example").read_text()
    documented = set(re.findall(r"^#?\s*([A-Z][A-Z0-9_]+)=", text, flags=re.MULTILINE))
    fields = {name.upper() for name in Settings.model_fields}
    assert fields - documented == set(), "undocumented settings"
    assert documented - fields == set(), ".env.example names settings that do not exist"
