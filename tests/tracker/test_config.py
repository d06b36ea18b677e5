"""Credentials come from the environment or from files, and say which variables are missing; tuning values
are read and checked."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from tracker.config import Settings


def test_credentials_from_env_file_and_secrets_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("TRACKER_LAMBDA_API_KEY", "from-env")
    key_file = tmp_path / "do"
    key_file.write_text("from-file\n")
    monkeypatch.setenv("TRACKER_DIGITALOCEAN_TOKEN_FILE", str(key_file))
    (tmp_path / "secrets").mkdir()
    (tmp_path / "secrets" / "verda_client_id").write_text("from-dir")
    monkeypatch.delenv("TRACKER_VERDA_CLIENT_SECRET", raising=False)
    settings = Settings(data_dir=tmp_path, secrets_dir=tmp_path / "secrets")
    values, missing = settings.credentials_for(
        ["LAMBDA_API_KEY", "DIGITALOCEAN_TOKEN", "VERDA_CLIENT_ID", "VERDA_CLIENT_SECRET"]
    )
    assert values == {"LAMBDA_API_KEY": "from-env", "DIGITALOCEAN_TOKEN": "from-file", "VERDA_CLIENT_ID": "from-dir"}
    assert missing == ["TRACKER_VERDA_CLIENT_SECRET"]
    assert "from-env" not in repr(settings.credential("LAMBDA_API_KEY"))  # a SecretStr never prints its value


def test_embedded_default_database_file(tmp_path, monkeypatch):
    """The embedded default keeps its file name across releases: a rename would strand users' history."""
    monkeypatch.delenv("TRACKER_DATABASE_URL", raising=False)
    settings = Settings(data_dir=tmp_path)
    assert settings.resolved_database_url() == f"sqlite:///{tmp_path / 'tracker.db'}"


def test_api_compute_slots_from_the_environment(monkeypatch):
    monkeypatch.setenv("TRACKER_API_COMPUTE_SLOTS", "2")
    assert Settings().api_compute_slots == 2
    monkeypatch.setenv("TRACKER_API_COMPUTE_SLOTS", "0")
    with pytest.raises(ValidationError, match="api_compute_slots"):
        Settings()
