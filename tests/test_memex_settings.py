"""The memex service's environment variables (memexdb.config.MEMEX_SERVICE_SETTINGS):
each is read as the memexdb setting it names, or stops every command with one line that
says what to use instead; never silently ignored."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from memexdb.config import (
    MEMEX_SERVICE_SETTINGS,
    Alias,
    Refused,
    Settings,
    SettingsError,
    env_name,
)
from tests.live_service import run_cli, service_env

CONFIGURATION_PAGE = Path(__file__).resolve().parent.parent / "docs" / "configuration.md"
REFUSED = [name for name, m in MEMEX_SERVICE_SETTINGS.items() if isinstance(m, Refused)]


def test_aliases_are_read_as_the_memexdb_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DB_MAX_POOL_SIZE", "7")
    monkeypatch.setenv("SUMMARIZATION_ENABLED", "false")
    settings = Settings.from_env()
    assert (settings.pool_size, settings.condense_enabled) == (7, False)
    # the same value under both names is one setting; an empty alias is unset
    monkeypatch.setenv("MEMEX_POOL_SIZE", "7")
    monkeypatch.setenv("MEMEX_CONDENSE_ENABLED", "FALSE")
    assert Settings.from_env().pool_size == 7
    monkeypatch.setenv("DB_MAX_POOL_SIZE", "")
    monkeypatch.setenv("MEMEX_POOL_SIZE", "12")
    assert Settings.from_env().pool_size == 12


def test_an_alias_that_disagrees_or_is_invalid_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DB_MAX_POOL_SIZE", "7")
    monkeypatch.setenv("MEMEX_POOL_SIZE", "8")
    with pytest.raises(SettingsError, match="DB_MAX_POOL_SIZE='7': MEMEX_POOL_SIZE='8'"):
        Settings.from_env()
    monkeypatch.delenv("MEMEX_POOL_SIZE")
    monkeypatch.setenv("DB_MAX_POOL_SIZE", "lots")
    with pytest.raises(SettingsError, match=r"^DB_MAX_POOL_SIZE='lots': Input should be"):
        Settings.from_env()


@pytest.mark.parametrize("name", REFUSED)
def test_a_refused_variable_stops_any_command_with_what_to_use(name: str) -> None:
    code, out = run_cli(["--help"], service_env(**{name: "100"}), timeout=60)
    assert code == 2, out
    assert len(out.strip().splitlines()) == 1, out
    assert out.startswith(f"memexdb: invalid setting: {name}='100' is the memex service's"), out
    field = name.removeprefix("SUMMARIZATION_").lower()
    assert f"dream_config.{field}" in out and "/v1/admin/dream/config" in out, out


def test_a_refused_variable_set_empty_is_unset() -> None:
    """Empty: unset, as for memexdb's own variables. All of them empty in one command (any
    one not taken as unset would stop it with exit 2), not one command each."""
    assert REFUSED
    code, out = run_cli(["--help"], service_env(**dict.fromkeys(REFUSED, "")), timeout=60)
    assert code == 0, out


def test_the_configuration_page_lists_every_one() -> None:
    page = CONFIGURATION_PAGE.read_text()
    for name, meaning in MEMEX_SERVICE_SETTINGS.items():
        row = re.search(rf"^\| `{name}` \|(.*)$", page, flags=re.M)
        assert row, f"docs/configuration.md has no row for {name}"
        if isinstance(meaning, Alias):
            assert f"`{env_name(meaning.field)}`" in row[1], (name, row[1])
        else:
            assert "refused" in row[1], (name, row[1])
