"""docker-compose.yml, Dockerfile, the container entry point and .env.example: valid, secret-free, and every
command they run is a real `gpu-tracker` command."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml  # type: ignore[import-untyped]  # PyYAML ships no type information
from typer.testing import CliRunner

from providers.registry import all_providers
from tracker.cli import app

ROOT = Path(__file__).resolve().parent.parent
COMPOSE = ROOT / "docker-compose.yml"
DOCKERFILE = ROOT / "Dockerfile"
ENTRYPOINT = ROOT / "docker" / "entrypoint.sh"
IN_CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}
SECRET_WORDS = re.compile(r"PASSWORD|TOKEN|SECRET|API_KEY|DATABASE_URL", re.I)


def compose() -> dict:
    return yaml.safe_load(COMPOSE.read_text())


def assert_cli_command(argv: list[str]) -> None:
    """`gpu-tracker <argv> --help` parses: the command exists and every option given to it is known."""
    assert argv[0] == "gpu-tracker", argv
    result = CliRunner().invoke(app, [*argv[1:], "--help"])
    assert result.exit_code == 0, f"{shlex.join(argv)}: {result.output}"
    assert "Usage:" in result.output


def test_compose_services_and_their_order():
    everything = compose()["services"]
    # Profiled services (monitoring: tests/test_monitoring.py) start only when asked for.
    services = {name: s for name, s in everything.items() if not s.get("profiles")}
    assert set(services) == {"db", "migrate", "api", "worker"}
    db = services["db"]
    assert db["image"] == "postgres:16" and "pg_isready" in " ".join(db["healthcheck"]["test"])
    volume = db["volumes"][0].split(":")[0]
    assert volume in compose()["volumes"], "the database needs a named volume"
    assert services["migrate"]["restart"] == "no"
    assert services["migrate"]["depends_on"] == {"db": {"condition": "service_healthy"}}
    for name in ("api", "worker"):
        assert services[name]["depends_on"] == {
            "db": {"condition": "service_healthy"},
            "migrate": {"condition": "service_completed_successfully"},
        }, name
    assert services["migrate"]["command"][1:] == ["db", "upgrade"]
    assert services["worker"]["command"][1:] == ["worker"]
    assert services["api"]["command"][1] == "api"


@pytest.mark.parametrize("service", ["migrate", "api", "worker"])
def test_every_compose_command_is_a_cli_command(service):
    command = compose()["services"][service]["command"]
    assert_cli_command(command if isinstance(command, list) else shlex.split(command))


def test_dockerfile_default_command_is_a_cli_command():
    cmd = re.search(r"^CMD\s+(\[.*\])\s*$", DOCKERFILE.read_text(), flags=re.M)
    assert cmd, "Dockerfile needs an exec-form CMD"
    assert_cli_command(json.loads(cmd.group(1)))


def test_a_missing_command_would_be_caught():
    with pytest.raises(AssertionError):
        assert_cli_command(["gpu-tracker", "serve-api"])
    with pytest.raises(AssertionError):
        assert_cli_command(["gpu-tracker", "api", "--no-such-option", "1"])


def test_secrets_come_from_files_never_from_the_compose_file_or_image():
    doc = compose()
    declared = doc["secrets"]
    assert all(spec["file"].startswith("./secrets/") for spec in declared.values())
    for name, service in doc["services"].items():
        for secret in service.get("secrets", []):
            assert secret in declared, f"{name} uses undeclared secret {secret}"
        env = service.get("environment", {})
        for key, value in env.items():
            if SECRET_WORDS.search(key):
                # Only pointers to files: TRACKER_X_FILE, or the secrets directory itself.
                assert key.endswith(("_FILE", "_DIR")) and str(value).startswith("/run/secrets/"), f"{name}: {key}"
    text = DOCKERFILE.read_text()
    for line in re.findall(r"^(?:ENV|ARG)\s+(.*)$", text, flags=re.M):
        assert not SECRET_WORDS.search(line), f"secret-like setting baked into the image: {line}"
    assert not re.search(r"^COPY\s+.*(\.env|secrets)", text, flags=re.M)
    ignored = (ROOT / ".dockerignore").read_text().split()
    assert {".env", "secrets", ".venv", ".git"} <= set(ignored)


def test_dockerfile_runs_as_non_root_with_an_api_healthcheck():
    text = DOCKERFILE.read_text()
    assert re.search(r"^FROM python:3\.11-slim\b", text, flags=re.M)
    users = re.findall(r"^USER\s+(\S+)", text, flags=re.M)
    assert users and users[-1].split(":")[0] not in {"root", "0"}
    assert re.search(r"^HEALTHCHECK .*\n?.*/healthz", text, flags=re.M)
    assert "pip install" in text
    # Services that serve no HTTP must not inherit the API's health check.
    services = compose()["services"]
    assert services["worker"]["healthcheck"] == {"disable": True}
    assert services["migrate"]["healthcheck"] == {"disable": True}


def test_env_example_names_every_setting_and_credential_file():
    text = (ROOT / ".env.example").read_text()
    assert "TRACKER_DATABASE_URL=" in text and "TRACKER_API_TOKEN=" in text
    credentials = {c for p in all_providers().values() for c in p.credentials}
    for credential in credentials:
        assert f"TRACKER_{credential}_FILE=" in text, credential
    # Only placeholders: every assignment is commented out or a non-secret.
    for line in text.splitlines():
        if "=" in line and not line.lstrip().startswith("#"):
            assert not SECRET_WORDS.search(line.split("=", 1)[0]), line


def _entrypoint(env: dict[str, str], *command: str) -> subprocess.CompletedProcess[str]:
    base = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    return subprocess.run(["sh", str(ENTRYPOINT), *command], env=base | env, capture_output=True, text=True, timeout=30)


def test_entrypoint_reads_secret_files_into_the_environment(tmp_path):
    token, url = tmp_path / "api_token", tmp_path / "database_url"
    token.write_text("s3cret-token\n")
    url.write_text("postgresql+psycopg://tracker:pw@db:5432/tracker")
    show = 'printf "%s|%s|%s" "$TRACKER_API_TOKEN" "$TRACKER_DATABASE_URL" "${TRACKER_API_TOKEN_FILE:-unset}"'
    done = _entrypoint({"TRACKER_API_TOKEN_FILE": str(token), "TRACKER_DATABASE_URL_FILE": str(url)}, "sh", "-c", show)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "s3cret-token|postgresql+psycopg://tracker:pw@db:5432/tracker|unset"
    missing = _entrypoint({"TRACKER_API_TOKEN_FILE": str(tmp_path / "nope")}, "true")
    assert missing.returncode == 66 and "not a readable file" in missing.stderr
    both = _entrypoint({"TRACKER_API_TOKEN_FILE": str(token), "TRACKER_API_TOKEN": "x"}, "true")
    assert both.returncode == 64
    plain = _entrypoint({}, "sh", "-c", 'printf "%s" "${TRACKER_API_TOKEN:-none}"')
    assert (plain.returncode, plain.stdout) == (0, "none")


def _compose_tool() -> list[str] | None:
    if shutil.which("docker-compose"):
        return ["docker-compose"]
    if shutil.which("docker"):
        probe = subprocess.run(["docker", "compose", "version"], capture_output=True, timeout=30)
        if probe.returncode == 0:
            return ["docker", "compose"]
    return None


@pytest.fixture
def compose_tool() -> list[str]:
    tool = _compose_tool()
    if tool is None:
        if IN_CI:
            pytest.fail("docker-compose is required in CI (.ci/run installs it)")
        pytest.skip("docker-compose not installed")
    return tool


def _config(tool: list[str], path: Path) -> subprocess.CompletedProcess[str]:
    # Interpolation must not depend on the caller's environment or a local .env.
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRACKER_")}
    return subprocess.run(
        [*tool, "-f", str(path), "config", "-q"], cwd=path.parent, env=env, capture_output=True, text=True, timeout=120
    )


def test_docker_compose_config_accepts_the_file(compose_tool):
    done = _config(compose_tool, COMPOSE)
    assert done.returncode == 0, done.stderr


def test_docker_compose_config_rejects_a_broken_file(compose_tool, tmp_path):
    broken = tmp_path / "docker-compose.yml"
    broken.write_text(COMPOSE.read_text().replace("service_completed_successfully", "service_finished", 1))
    assert _config(compose_tool, broken).returncode != 0
