"""The systemd units and scripts/install_timer.py: units that systemd accepts, an idempotent installer.

No test may reach a real user service manager: the bus variables are removed,
and the tests that need a reachable one put a recording `systemctl` first on PATH.
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import PROJECT, run_script
from rag_search.core.telemetry import FORCED

UNITS = ("rag-index.service", "rag-index.timer")
SHIPPED = PROJECT / "systemd"
ENABLE = "systemctl --user enable --now rag-index.timer"


@pytest.fixture(autouse=True)
def no_user_manager(monkeypatch):
    """Never touch the developer's own user manager or unit folder."""
    for name in ("DBUS_SESSION_BUS_ADDRESS", "XDG_RUNTIME_DIR", "XDG_CONFIG_HOME", "RAG_SEARCH_SOURCES"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def unit_dir(tmp_path) -> Path:
    return tmp_path / "units"


def install(*args, **kwargs):
    return run_script("install_timer.py", *args, timeout=60, **kwargs)


def verify(units: list[Path], home: Path, tmp_path: Path) -> subprocess.CompletedProcess:
    """`systemd-analyze --user verify`: user scope (where %h, the unit search path and the
    available targets are those of a user manager), with no user manager running. It only
    needs a private XDG_RUNTIME_DIR to set up its in-memory manager."""
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.skip("systemd-analyze is not installed")
    if not (PROJECT / ".venv" / "bin" / "python").is_file():
        pytest.skip("the units run .venv/bin/python, which does not exist: run `make setup`")
    runtime = tmp_path / "runtime"
    runtime.mkdir(mode=0o700, exist_ok=True)
    env = {key: value for key, value in os.environ.items() if key not in ("DBUS_SESSION_BUS_ADDRESS", "XDG_RUNTIME_DIR")}
    env.update(HOME=str(home), XDG_RUNTIME_DIR=str(runtime), SYSTEMD_LOG_COLOR="0")
    return subprocess.run(
        [analyze, "--user", "verify", *map(str, units)], env=env, capture_output=True, text=True, timeout=30, cwd=tmp_path
    )


def settings(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip() and not line.lstrip().startswith(("#", ";"))]


# The units -----------------------------------------------------------------


def test_shipped_units_pass_systemd_analyze_verify(isolated_home, tmp_path):
    skills = isolated_home / ".claude" / "skills"
    skills.mkdir(parents=True)
    (skills / "rag-search").symlink_to(PROJECT, target_is_directory=True)
    result = verify([SHIPPED / name for name in UNITS], isolated_home, tmp_path)
    assert (result.returncode, result.stderr) == (0, "")


def test_shipped_service_runs_both_indexers_at_low_priority():
    lines = settings((SHIPPED / "rag-index.service").read_text())
    python = "%h/.claude/skills/rag-search/.venv/bin/python"
    assert [line for line in lines if line.startswith("ExecStart=")] == [
        f"ExecStart=-{python} %h/.claude/skills/rag-search/scripts/index_docs.py --all --quiet --wait 3600",
        f"ExecStart={python} %h/.claude/skills/rag-search/scripts/index_personal.py --quiet --wait 3600",
    ]  # "-": a failing docs step (a malformed sources.json) never keeps the personal index from being refreshed
    for setting in ("Type=oneshot", "SuccessExitStatus=9 143", "Nice=19", "CPUSchedulingPolicy=idle", "IOSchedulingClass=idle"):
        assert setting in lines
    assert any(line.startswith("TimeoutStartSec=") for line in lines)
    assert "[Install]" not in lines
    timer = settings((SHIPPED / "rag-index.timer").read_text())
    for setting in ("OnCalendar=daily", "Persistent=true", "RandomizedDelaySec=3600", "WantedBy=timers.target"):
        assert setting in timer


def test_every_unit_setting_has_a_comment():
    for name in UNITS:
        lines = (SHIPPED / name).read_text().splitlines()
        for number, line in enumerate(lines):
            if line.strip() and not line.startswith(("#", "[")):
                assert lines[number - 1].startswith("#"), f"{name}: no comment above {line!r}"


@pytest.mark.processes
def test_rendered_units_pass_systemd_analyze_verify(isolated_home, tmp_path, unit_dir):
    result = install("--unit-dir", unit_dir, "--data-dir", tmp_path / "data")
    assert result.code == 0, result
    service = (unit_dir / "rag-index.service").read_text()
    assert f"ExecStart=-{PROJECT}/.venv/bin/python {PROJECT}/scripts/index_docs.py --all --quiet --wait 3600" in service
    assert not any("%h" in line for line in settings(service))
    checked = verify([unit_dir / name for name in UNITS], isolated_home, tmp_path)
    assert (checked.returncode, checked.stderr) == (0, "")


@pytest.mark.processes
def test_paths_with_spaces_and_specifier_characters_are_escaped(isolated_home, tmp_path, unit_dir):
    """A checkout and a data folder whose names systemd would otherwise split or expand."""
    checkout = tmp_path / "my skill %z$x"
    for part in ("scripts", "systemd"):
        shutil.copytree(PROJECT / part, checkout / part, ignore=shutil.ignore_patterns("__pycache__"))
    (checkout / ".venv").symlink_to(PROJECT / ".venv", target_is_directory=True)
    data = tmp_path / "data dir %z$y\"q'"
    completed = subprocess.run(
        [sys.executable, str(checkout / "scripts" / "install_timer.py"), "--unit-dir", str(unit_dir), "--data-dir", str(data)],
        capture_output=True, text=True, timeout=60, cwd=tmp_path,
    )
    assert completed.returncode == 0, completed.stderr
    service = (unit_dir / "rag-index.service").read_text()
    python, script = f"{tmp_path}/my skill %%z$x/.venv/bin/python", f"{tmp_path}/my skill %%z$$x/scripts/index_personal.py"
    assert f'ExecStart="{python}" "{script}" --quiet' in service
    docs_script = f"{tmp_path}/my skill %%z$$x/scripts/index_docs.py"
    assert f'ExecStart=-"{python}" "{docs_script}" --all' in service  # the prefix stays outside the quotes
    assert f'Environment="RAG_SEARCH_HOME={tmp_path}/data dir %%z$y\\"q\'"' in service
    assert "/my%%20skill%%20%%25z%%24x/references/timer.md" in service
    # An unescaped % would be an unknown specifier, a lone word a missing program: both make verify speak.
    checked = verify([unit_dir / name for name in UNITS], isolated_home, tmp_path)
    assert (checked.returncode, checked.stderr) == (0, "")


# The installer -------------------------------------------------------------


@pytest.mark.processes
def test_install_is_idempotent_and_lists_the_commands_without_a_user_manager(unit_dir):
    first = install("--unit-dir", unit_dir)
    assert first.code == 0, first
    assert first.json["written"] == [str(unit_dir / name) for name in UNITS]
    assert first.json["systemctl"] == "unavailable"
    assert ENABLE in first.json["next_steps"]
    assert ENABLE in first.stderr
    before = {name: ((unit_dir / name).read_bytes(), (unit_dir / name).stat().st_mtime_ns) for name in UNITS}

    second = install("--unit-dir", unit_dir)
    assert second.code == 0, second
    assert second.json["written"] == []
    assert second.json["unchanged"] == [str(unit_dir / name) for name in UNITS]
    assert ENABLE in second.json["next_steps"]
    assert {name: ((unit_dir / name).read_bytes(), (unit_dir / name).stat().st_mtime_ns) for name in UNITS} == before
    assert sorted(path.name for path in unit_dir.iterdir()) == sorted(UNITS)  # no temporary files left


@pytest.mark.processes
def test_dry_run_writes_nothing_and_shows_the_units(unit_dir):
    result = install("--unit-dir", unit_dir, "--dry-run")
    assert result.code == 0, result
    assert not unit_dir.exists()
    assert result.json["systemctl"] == "skipped (dry run)"
    assert set(result.json["units"]) == set(UNITS)
    assert "[Service]" in result.json["units"]["rag-index.service"]
    assert "OnCalendar=daily" in result.json["units"]["rag-index.timer"]


@pytest.mark.processes
def test_data_dir_and_environment_reach_the_service(tmp_path, unit_dir):
    sources = tmp_path / "sources.json"
    result = install(
        "--unit-dir", unit_dir, "--data-dir", "relative/data", cwd=tmp_path,
        env={"RAG_SEARCH_CONFIG": str(tmp_path / "config.json"), "RAG_SEARCH_SOURCES": str(sources), "RAG_SEARCH_EMBEDDING": "float"},
    )
    assert result.code == 0, result
    lines = settings((unit_dir / "rag-index.service").read_text())
    assert f"Environment=RAG_SEARCH_HOME={tmp_path}/relative/data" in lines
    assert f"Environment=RAG_SEARCH_CONFIG={tmp_path}/config.json" in lines
    assert f"Environment=RAG_SEARCH_SOURCES={sources}" in lines
    assert "Environment=RAG_SEARCH_EMBEDDING=float" in lines, "the timer's runs must embed with the graph searches use"
    assert lines.index("Environment=RAG_SEARCH_HOME=" + str(tmp_path / "relative/data")) > lines.index("[Service]")
    assert not any(line.startswith("Environment=") for line in settings((unit_dir / "rag-index.timer").read_text()))


@pytest.mark.processes
def test_without_data_dir_the_service_has_only_the_libraries_switches(unit_dir):
    """No RAG_SEARCH_* setting; the libraries' telemetry off, as the scripts themselves set it (telemetry.FORCED)."""
    assert install("--unit-dir", unit_dir).code == 0
    environment = [line for line in settings((unit_dir / "rag-index.service").read_text()) if line.startswith("Environment=")]
    assert environment == [f"Environment={name}={value}" for name, value in FORCED.items()]


@pytest.mark.processes
def test_uninstall_removes_the_files_and_can_run_twice(unit_dir):
    assert install("--unit-dir", unit_dir).code == 0
    wants = unit_dir / "timers.target.wants"
    wants.mkdir()
    (wants / "rag-index.timer").symlink_to(unit_dir / "rag-index.timer")  # as `systemctl --user enable` leaves it

    first = install("--unit-dir", unit_dir, "--uninstall")
    assert first.code == 0, first
    assert sorted(first.json["removed"]) == sorted(str(path) for path in [wants / "rag-index.timer", *(unit_dir / name for name in UNITS)])
    assert first.json["systemctl"] == "unavailable"
    assert not any(path.is_file() or path.is_symlink() for path in unit_dir.rglob("*"))

    second = install("--unit-dir", unit_dir, "--uninstall")
    assert second.code == 0, second
    assert second.json["removed"] == [] and second.json["next_steps"] == []


@pytest.mark.processes
def test_default_unit_dir_follows_xdg_config_home(isolated_home, tmp_path):
    assert install("--dry-run").json["unit_dir"] == str(isolated_home / ".config" / "systemd" / "user")
    config_home = tmp_path / "config"
    assert install("--dry-run", env={"XDG_CONFIG_HOME": str(config_home)}).json["unit_dir"] == str(config_home / "systemd" / "user")


@pytest.fixture
def fake_systemctl(tmp_path):
    """A `systemctl` that records its arguments, standing in for a reachable user manager."""
    bin_dir, log = tmp_path / "bin", tmp_path / "systemctl.log"
    bin_dir.mkdir()
    script = bin_dir / "systemctl"
    script.write_text('#!/bin/sh\necho "$*" >> "$SYSTEMCTL_LOG"\n[ "$FAIL_ON" = "$2" ] && { echo "Failed: no" >&2; exit 1; }\nexit 0\n')
    script.chmod(0o755)

    def calls() -> list[str]:
        found = log.read_text().splitlines() if log.exists() else []
        log.unlink(missing_ok=True)
        return found

    env = {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "SYSTEMCTL_LOG": str(log)}
    return env, calls


@pytest.mark.processes
def test_with_a_user_manager_it_reloads_and_enables(unit_dir, fake_systemctl):
    env, calls = fake_systemctl
    result = install("--unit-dir", unit_dir, env=env)
    assert result.code == 0, result
    assert result.json["systemctl"] == "ran" and result.json["next_steps"] == []
    assert calls() == ["--user show-environment", "--user daemon-reload", "--user enable --now rag-index.timer"]

    assert install("--unit-dir", unit_dir, env=env).code == 0
    assert calls() == ["--user show-environment", "--user daemon-reload", "--user enable --now rag-index.timer"]

    assert install("--unit-dir", unit_dir, "--dry-run", env=env).code == 0
    assert calls() == []

    result = install("--unit-dir", unit_dir, "--uninstall", env=env)
    assert result.code == 0, result
    assert calls() == ["--user show-environment", "--user disable --now rag-index.timer", "--user daemon-reload"]
    assert not (unit_dir / "rag-index.timer").exists()

    assert install("--unit-dir", unit_dir, "--uninstall", env=env).code == 0
    assert calls() == ["--user show-environment"]


@pytest.mark.processes
def test_a_failing_systemctl_is_an_error(unit_dir, fake_systemctl):
    env, _ = fake_systemctl
    result = install("--unit-dir", unit_dir, env={**env, "FAIL_ON": "enable"})
    assert result.code == 7, result
    assert result.stderr.splitlines()[-1].startswith("error: `systemctl --user enable --now rag-index.timer` failed: Failed: no")
    assert result.json["error"]["type"] == "StoreError"


@pytest.mark.processes
@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["--unit-dir", "{tmp}/a-file/units"], 7, "cannot write"),
        (["--data-dir", "{tmp}/line\nbreak"], 6, "control character"),
    ],
)
def test_errors_have_an_exit_code_and_one_line(tmp_path, args, code, message):
    (tmp_path / "a-file").write_text("not a folder")
    args = [arg.format(tmp=tmp_path) for arg in args]
    result = install(*args, "--unit-dir", tmp_path / "units") if "--unit-dir" not in args else install(*args)
    assert result.code == code, result
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and message in errors[0]
    assert json.loads(result.stdout)["error"]["code"] == code
