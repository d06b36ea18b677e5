"""Every live fetch gets the provider's optional credentials when they are set, and is never skipped
for lacking them."""

from __future__ import annotations

from pydantic import SecretStr

from providers.adapters.runpod import RunPod
from providers.registry import PROVIDERS
from tracker.config import Settings
from tracker.pipeline.credentials import credentials_of


def test_optional_key_is_passed_when_set_and_absent_otherwise(tmp_path, monkeypatch):
    (name,) = RunPod.optional_credentials
    monkeypatch.delenv(f"TRACKER_{name}", raising=False)
    values, missing = credentials_of(RunPod, Settings(data_dir=tmp_path))
    assert (values, missing) == ({}, [])  # keyless: runs, on the anonymous path
    monkeypatch.setenv(f"TRACKER_{name}", "k-123")
    values, missing = credentials_of(RunPod, Settings(data_dir=tmp_path))
    assert values == {name: "k-123"} and missing == []


def test_required_and_optional_never_overlap():
    for provider in PROVIDERS:
        assert not set(provider.credentials) & set(provider.optional_credentials), provider.name
        assert provider.describe()["optional_credentials"] == list(provider.optional_credentials)


def test_secret_values_stay_secret(tmp_path, monkeypatch):
    (name,) = RunPod.optional_credentials
    monkeypatch.setenv(f"TRACKER_{name}", "k-123")
    settings = Settings(data_dir=tmp_path)
    assert isinstance(settings.credential(name), SecretStr) and "k-123" not in repr(settings.credential(name))
