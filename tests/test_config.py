import json

import pytest

from rag_search.core.config import DEFAULT_REGISTRY, graph_for_cpu, load_settings
from rag_search.core.errors import ConfigError


def write_config(home, data):
    path = home / ".config" / "rag-search" / "config.json"
    path.parent.mkdir(parents=True)
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return path


def test_roots_precedence_cli_then_env_then_config_then_default(isolated_home, monkeypatch):
    config = write_config(isolated_home, {"personal_roots": ["~/from-config"]})
    monkeypatch.setenv("RAG_SEARCH_PERSONAL_DIRS", "~/env-a, ~/env-b")

    settings = load_settings(roots=["~/cli"])
    assert (settings.personal_roots, settings.roots_origin) == ((isolated_home / "cli",), "command line")

    settings = load_settings()
    assert settings.personal_roots == (isolated_home / "env-a", isolated_home / "env-b")
    assert settings.roots_origin == "RAG_SEARCH_PERSONAL_DIRS"

    monkeypatch.delenv("RAG_SEARCH_PERSONAL_DIRS")
    settings = load_settings()
    assert settings.personal_roots == (isolated_home / "from-config",)
    assert settings.roots_origin.startswith("config file")

    config.unlink()
    settings = load_settings()
    assert (settings.personal_roots, settings.roots_origin) == ((isolated_home / ".claude" / "state",), "default")


@pytest.mark.parametrize(
    "flag, env_name, key, attribute, default",
    [
        ("data_dir", "RAG_SEARCH_HOME", "data_dir", "data_dir", "{home}/.claude/data/rag-search"),
        ("sources", "RAG_SEARCH_SOURCES", "sources", "registry", str(DEFAULT_REGISTRY)),
        (None, "RAG_SEARCH_MODEL", "model", "model_dir", None),
        (None, "RAG_SEARCH_RERANK_MODEL", "rerank_model", "rerank_model", None),
        ("memory_file", "RAG_SEARCH_MEMORY_FILE", "memory_file", "memory_file", "{home}/.claude/state/memory/memory.json"),
    ],
)
def test_flag_beats_env_beats_file_beats_default(flag, env_name, key, attribute, default, isolated_home, monkeypatch):
    monkeypatch.delenv(env_name, raising=False)
    expected_default = default.format(home=isolated_home) if default else None
    assert str(getattr(load_settings(), attribute) or "") == (expected_default or "")
    write_config(isolated_home, {key: "~/from-file"})
    assert getattr(load_settings(), attribute) == isolated_home / "from-file"
    monkeypatch.setenv(env_name, "~/from-env")
    assert getattr(load_settings(), attribute) == isolated_home / "from-env"
    if flag:
        assert getattr(load_settings(**{flag: "~/from-flag"}), attribute) == isolated_home / "from-flag"


def test_chroma_url_precedence(isolated_home, monkeypatch):
    assert load_settings().server is None
    write_config(isolated_home, {"chroma_url": "http://file-host:1"})
    assert load_settings().server.host == "file-host"
    monkeypatch.setenv("RAG_SEARCH_CHROMA_URL", "http://env-host:2")
    assert load_settings().server.host == "env-host"
    assert load_settings(chroma_url="http://flag-host:3").server.port == 3


def test_config_file_location_can_be_overridden(tmp_path, monkeypatch):
    path = tmp_path / "custom.json"
    path.write_text(json.dumps({"ignore_patterns": ["*.bak"], "max_file_bytes": 1000}))
    monkeypatch.setenv("RAG_SEARCH_CONFIG", str(path))
    settings = load_settings()
    assert settings.ignore_patterns == ("*.bak",)
    assert settings.max_file_bytes == 1000


def test_only_config_py_reads_the_environment():
    """Settings resolve in one place; every other module gets them passed down (setting a variable for a library is fine).

    Read from the code itself (ast), so a string that mentions os.environ, such as a redaction rule, is not a read.
    """
    import ast
    from pathlib import Path

    package = Path(__file__).resolve().parents[1] / "scripts" / "rag_search"
    offenders = []
    for path in package.rglob("*.py"):
        if path.name == "config.py":
            continue
        tree = ast.parse(path.read_text())
        parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Name) and node.id == "environ":  # from os import environ
                offenders.append(f"{path.name}:{node.lineno}")
            if not (isinstance(node, ast.Attribute) and node.attr in ("environ", "getenv")):
                continue
            parent = parents.get(node)
            writes = (isinstance(parent, ast.Attribute) and parent.attr == "setdefault") or (
                isinstance(parent, ast.Subscript) and isinstance(parent.ctx, ast.Store))
            if not writes:
                offenders.append(f"{path.name}:{node.lineno}")
    assert offenders == []


@pytest.mark.parametrize(
    "content, message",
    [
        ("{broken", "not valid JSON"),
        ("[1, 2]", "must hold a JSON object"),
        ({"personal_roots": "~/notes"}, "must be a list of strings"),
        ({"max_file_bytes": -1}, "positive integer"),
        ({"web_timeout_seconds": "fast"}, "positive number"),
        ({"recency_half_life_days": 0}, "positive number"),
        ({"rerank_model": 5}, "must be a non-empty string"),
        ({"data_dir": ""}, "must be a non-empty string"),
        ({"resident_idle_minutes": -1}, "0 or more"),
        ({"resident_idle_minutes": True}, "0 or more"),
    ],
)
def test_malformed_config_is_an_error(isolated_home, content, message):
    write_config(isolated_home, content)
    with pytest.raises(ConfigError, match=message):
        load_settings()


def test_the_resident_searcher_idles_15_minutes_unless_set_or_turned_off(isolated_home, monkeypatch):
    monkeypatch.delenv("RAG_SEARCH_RESIDENT")
    assert load_settings().resident_idle_minutes == 15
    write_config(isolated_home, {"resident_idle_minutes": 2.5})
    assert load_settings().resident_idle_minutes == 2.5
    monkeypatch.setenv("RAG_SEARCH_RESIDENT", "0")
    assert load_settings().resident_idle_minutes == 0


def test_unknown_keys_are_warned_about(isolated_home):
    write_config(isolated_home, {"personal_root": ["typo"]})
    assert "unknown key 'personal_root'" in load_settings().warnings[0]


def test_the_default_memory_file_is_under_the_first_personal_root(isolated_home, monkeypatch):
    monkeypatch.setenv("RAG_SEARCH_PERSONAL_DIRS", "~/notes,~/state")
    assert load_settings().memory_file == isolated_home / "notes" / "memory" / "memory.json"


def test_the_embedding_graph_is_the_data_dirs_unless_one_is_asked_for(isolated_home, monkeypatch, tmp_path):
    data = tmp_path / "data"
    monkeypatch.setenv("RAG_SEARCH_HOME", str(data))
    data.mkdir()
    (data / ".rag-search").write_text(json.dumps({"made_by": "rag-search", "embedding": "float"}))
    assert load_settings().embedding == "float"  # made on another CPU (or switched by a rebuild): kept, not rebuilt
    (data / ".rag-search").write_text(json.dumps({"made_by": "rag-search"}))
    assert load_settings().embedding == "int8"  # a data dir of an earlier version: int8 was the default
    config = write_config(isolated_home, {"embedding": "float"})
    assert load_settings().embedding == "float"
    monkeypatch.setenv("RAG_SEARCH_EMBEDDING", "int8")
    assert load_settings().embedding == "int8"
    monkeypatch.setenv("RAG_SEARCH_EMBEDDING", "fp16")
    with pytest.raises(ConfigError, match="RAG_SEARCH_EMBEDDING must be one of auto, float, int8"):
        load_settings()
    monkeypatch.delenv("RAG_SEARCH_EMBEDDING")
    config.write_text(json.dumps({"embedding": "int4"}))
    with pytest.raises(ConfigError, match="'embedding' must be one of auto, float, int8"):
        load_settings()


XEON = "processor\t: 0\nmodel name\t: Intel(R) Xeon(R)\nflags\t\t: fpu sse2 avx2 avx512f avx512_vnni amx_int8\n"
EPYC = "processor\t: 0\nmodel name\t: AMD EPYC 7B12\nflags\t\t: fpu sse2 avx avx2 fma\n"
GRAVITON = "processor\t: 0\nFeatures\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics asimddp\n"
OLD_ARM = "processor\t: 0\nFeatures\t: fp asimd evtstrm aes crc32\n"


@pytest.mark.parametrize(("cpuinfo", "graph"), [(XEON, "int8"), (EPYC, "float"), (GRAVITON, "int8"), (OLD_ARM, "float"),
                                                (None, "int8"), ("", "int8")])
def test_a_new_data_dir_gets_the_graph_its_cpu_runs_faster(cpuinfo, graph):
    assert graph_for_cpu(cpuinfo) == graph


def test_a_new_data_dir_asks_the_cpu_and_one_of_an_earlier_version_keeps_int8(isolated_home, monkeypatch, tmp_path):
    with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
        this_cpu = graph_for_cpu(cpuinfo.read())
    monkeypatch.setenv("RAG_SEARCH_HOME", str(tmp_path / "new"))
    assert load_settings().embedding == this_cpu
    (tmp_path / "earlier" / "personal").mkdir(parents=True)  # an index of a version before the marker
    monkeypatch.setenv("RAG_SEARCH_HOME", str(tmp_path / "earlier"))
    assert load_settings().embedding == "int8"
