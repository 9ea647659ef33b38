import json

import pytest

from rag_search.config import data_dir, load_config, personal_roots
from rag_search.errors import ConfigError


def write_config(home, data):
    path = home / ".config" / "rag-search" / "config.json"
    path.parent.mkdir(parents=True)
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return path


def test_roots_precedence_cli_then_env_then_config_then_default(isolated_home, monkeypatch):
    write_config(isolated_home, {"personal_roots": ["~/from-config"]})
    monkeypatch.setenv("RAG_SEARCH_PERSONAL_DIRS", "~/env-a, ~/env-b")
    config = load_config()

    roots, origin = personal_roots(["~/cli"], config)
    assert (roots, origin) == ([isolated_home / "cli"], "command line")

    roots, origin = personal_roots([], config)
    assert roots == [isolated_home / "env-a", isolated_home / "env-b"]
    assert origin == "RAG_SEARCH_PERSONAL_DIRS"

    monkeypatch.delenv("RAG_SEARCH_PERSONAL_DIRS")
    roots, origin = personal_roots([], config)
    assert roots == [isolated_home / "from-config"]
    assert origin.startswith("config file")

    config.personal_roots = []
    roots, origin = personal_roots([], config)
    assert (roots, origin) == ([isolated_home / ".claude" / "state"], "default")


def test_data_dir_precedence(isolated_home, monkeypatch):
    assert data_dir() == isolated_home / ".claude" / "data" / "rag-search"
    monkeypatch.setenv("RAG_SEARCH_HOME", "~/elsewhere")
    assert data_dir() == isolated_home / "elsewhere"
    assert data_dir("~/flag") == isolated_home / "flag"


def test_config_file_location_can_be_overridden(tmp_path, monkeypatch):
    path = tmp_path / "custom.json"
    path.write_text(json.dumps({"ignore_patterns": ["*.bak"], "max_file_bytes": 1000}))
    monkeypatch.setenv("RAG_SEARCH_CONFIG", str(path))
    config = load_config()
    assert config.ignore_patterns == ["*.bak"]
    assert config.max_file_bytes == 1000


@pytest.mark.parametrize(
    "content, message",
    [
        ("{broken", "not valid JSON"),
        ("[1, 2]", "must hold a JSON object"),
        ({"personal_roots": "~/notes"}, "must be a list of strings"),
        ({"max_file_bytes": -1}, "positive integer"),
        ({"web_timeout_seconds": "fast"}, "positive number"),
        ({"recency_half_life_days": 0}, "positive number"),
        ({"rerank_model": 5}, "must be a folder path"),
    ],
)
def test_malformed_config_is_an_error(isolated_home, content, message):
    write_config(isolated_home, content)
    with pytest.raises(ConfigError, match=message):
        load_config()


def test_unknown_keys_are_warned_about(isolated_home):
    write_config(isolated_home, {"personal_root": ["typo"]})
    assert "unknown key 'personal_root'" in load_config().warnings[0]
