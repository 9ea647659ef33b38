"""The daily systemd user timer: its units rendered for this checkout, written, and known to the user manager.

install_timer.py installs and removes the units with what is here: the shipped
units rendered with this checkout's real paths and the service's environment,
written only when they changed, and systemctl run. status reports whether the
timer is installed and when it last ran. Where no user manager is reachable
(containers, CI, an ssh session) the answer is "unknown", never an error.
"""

import re
import shutil
import subprocess
import urllib.parse
from pathlib import Path

from ..core.atomic import write_atomically
from ..core.config import SKILL_DIR, expand
from ..core.errors import ConfigError, StoreError

TIMER = "rag-index.timer"
SERVICE = "rag-index.service"
UNITS = (SERVICE, TIMER)
PROBE_TIMEOUT = 5
UNKNOWN = "unknown"
SHIPPED_DIR = SKILL_DIR / "systemd"
SHIPPED_PREFIX = "%h/.claude/skills/rag-search"
PREFIX_TOKEN = re.compile(re.escape(SHIPPED_PREFIX) + r'(?P<rest>/[^\s"]*)?')
# Settings the scripts read from the environment; a timer run starts without your shell's.
PATH_VARIABLES = ("RAG_SEARCH_HOME", "RAG_SEARCH_CONFIG", "RAG_SEARCH_SOURCES", "RAG_SEARCH_MODEL")
# Passed through as they are: the timer must talk to the same server, and embed with the graph searches use.
PLAIN_VARIABLES = ("RAG_SEARCH_CHROMA_URL", "RAG_SEARCH_EMBEDDING")
PATH_LIST_VARIABLES = ("RAG_SEARCH_PERSONAL_DIRS",)
SYSTEMCTL_TIMEOUT = 60
INSTALL_STEPS = [["daemon-reload"], ["enable", "--now", TIMER]]


def user_manager() -> tuple[str | None, str]:
    """(path of systemctl, "") when a user service manager answers, else (None, why not)."""
    systemctl = shutil.which("systemctl")
    if not systemctl:
        return None, "systemctl is not installed"
    try:
        probe = subprocess.run(
            [systemctl, "--user", "show-environment"], capture_output=True, text=True, timeout=PROBE_TIMEOUT, stdin=subprocess.DEVNULL
        )
    except subprocess.TimeoutExpired:
        return None, f"`systemctl --user show-environment` did not answer within {PROBE_TIMEOUT} s"
    except OSError as exc:
        return None, f"cannot run systemctl: {exc.strerror or exc}"
    if probe.returncode != 0:
        return None, (probe.stderr.strip().splitlines() or [f"exit {probe.returncode}"])[-1]
    return systemctl, ""


def timer_state(unit_dir: Path) -> dict:
    """{"installed", "enabled", "last_run", "last_result", "next_run"}: from systemctl where a user manager answers,
    else whether the unit file is in `unit_dir` and "unknown" for the rest."""
    installed = (unit_dir / TIMER).is_file()
    systemctl, why = user_manager()
    if systemctl is None:
        return {"installed": installed, "enabled": UNKNOWN, "last_run": UNKNOWN, "last_result": UNKNOWN, "next_run": UNKNOWN,
                "why_unknown": why}
    timer = _show(systemctl, TIMER, ("UnitFileState", "LastTriggerUSec", "NextElapseUSecRealtime"))
    service = _show(systemctl, SERVICE, ("Result", "ExecMainExitTimestamp"))
    return {
        "installed": installed or timer.get("UnitFileState") not in (None, "", "not-found"),
        "enabled": timer.get("UnitFileState") == "enabled",
        "last_run": _when(timer.get("LastTriggerUSec")),
        "last_result": service.get("Result") if _when(service.get("ExecMainExitTimestamp")) else None,
        "next_run": _when(timer.get("NextElapseUSecRealtime")),
    }


def _show(systemctl: str, unit: str, properties: tuple[str, ...]) -> dict[str, str]:
    try:
        shown = subprocess.run([systemctl, "--user", "show", unit, "--property", ",".join(properties)], capture_output=True,
                               text=True, timeout=PROBE_TIMEOUT, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return {}
    return dict(line.split("=", 1) for line in shown.stdout.splitlines() if "=" in line)


def _when(value: str | None) -> str | None:
    """A systemd timestamp as shown ("Sat 2026-11-21 03:12:09 UTC"); None for never (empty, "n/a" or 0)."""
    return value if value and value not in ("n/a", "0") else None


# Rendering ----------------------------------------------------------------


def check_representable(value: str, what: str) -> str:
    if re.search(r"[\x00-\x1f\x7f]", value):
        raise ConfigError(f"{what} contains a control character: {value!r}", hint="use a path without newlines or tabs")
    return value


EXEC_PREFIXES = "-@:+!"  # ExecStart= prefixes before the program, e.g. "-": a failure does not stop the unit


def quote_word(value: str, executable: bool = False) -> str:
    """One word of an ExecStart= line: specifiers (%) escaped, quoted when needed.

    `$` is doubled in arguments only: systemd expands variables there, not in the program path.
    """
    escaped = value.replace("%", "%%") if executable else value.replace("%", "%%").replace("$", "$$")
    if re.search(r"[\s\"'\\]", escaped):
        return '"' + escaped.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return escaped


def quote_assignment(name: str, value: str) -> str:
    """The value of an Environment= line (specifiers are expanded there, $ is not)."""
    escaped = f"{name}={value}".replace("%", "%%")
    if re.search(r"[\s\"'\\]", escaped):
        return '"' + escaped.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return escaped


def file_url_path(path: str) -> str:
    """The path part of a file:// URL in Documentation= (percent-encoded, then % escaped)."""
    return urllib.parse.quote(path).replace("%", "%%")


def render_line(line: str, skill_dir: Path) -> str:
    if line.lstrip().startswith(("#", ";")) or "=" not in line:
        return line
    key, value_start = line.split("=", 1)[0].strip(), line.index("=") + 1
    program_start = value_start + len(line[value_start:]) - len(line[value_start:].lstrip(EXEC_PREFIXES))

    def replace(match: re.Match) -> str:
        path = str(skill_dir) + (match.group("rest") or "")
        if key == "Documentation":
            return file_url_path(path)
        return quote_word(path, executable=key.startswith("Exec") and match.start() == program_start)

    return PREFIX_TOKEN.sub(replace, line)


def render(text: str, skill_dir: Path, environment: dict[str, str], shipped: Path) -> str:
    """A shipped unit with %h/.claude/skills/rag-search replaced by skill_dir, plus Environment= lines."""
    check_representable(str(skill_dir), "the checkout's path")
    if re.search(r"[\"'\\]", str(skill_dir)):
        raise ConfigError(
            f"systemd does not run programs from a path with quotes or backslashes: {skill_dir}",
            hint="move the checkout to a folder without them",
        )
    lines = [
        f"# Rendered by scripts/install_timer.py from {shipped}.",
        "# Edit that file instead and run the installer again.",
        *(render_line(line, skill_dir) for line in text.splitlines()),
    ]
    if environment:
        end = next((i for i, line in enumerate(lines) if line.strip() == "[Service]"), None)
        if end is None:
            return "\n".join(lines) + "\n"
        end += 1
        while end < len(lines) and not lines[end].startswith("["):
            end += 1
        while lines[end - 1].strip() == "":
            end -= 1
        added = ["# Settings the installer was given (a timer does not see your shell's environment)."]
        added += [f"Environment={quote_assignment(name, value)}" for name, value in environment.items()]
        lines[end:end] = added
    return "\n".join(lines) + "\n"


def service_environment(data_dir: str | None, variables: dict[str, str]) -> dict[str, str]:
    """--data-dir and the RAG_SEARCH_* variables set now (in `variables`), paths made absolute.

    RAG_SEARCH_CHROMA_HEADERS is left out on purpose: unit files are world-readable.
    """
    found: dict[str, str] = {}
    for name in PATH_VARIABLES:
        value = data_dir if name == "RAG_SEARCH_HOME" and data_dir else variables.get(name)
        if value:
            found[name] = check_representable(str(expand(value)), name)
    for name in PATH_LIST_VARIABLES:
        parts = [part.strip() for part in variables.get(name, "").split(",") if part.strip()]
        if parts:
            found[name] = check_representable(",".join(str(expand(part)) for part in parts), name)
    for name in PLAIN_VARIABLES:
        if variables.get(name):
            found[name] = check_representable(variables[name], name)
    return found


def rendered_units(environment: dict[str, str]) -> dict[str, str]:
    units = {}
    for name in UNITS:
        shipped = SHIPPED_DIR / name
        try:
            text = shipped.read_text(encoding="utf-8")
        except OSError as exc:
            raise StoreError(f"cannot read the shipped unit {shipped}: {exc.strerror}", hint="restore it from the repository") from exc
        units[name] = render(text, SKILL_DIR, environment if name.endswith(".service") else {}, shipped)
    return units


def missing_programs() -> list[str]:
    """Warnings for files the service will run that are not in this checkout (yet)."""
    shipped = (SHIPPED_DIR / "rag-index.service").read_text(encoding="utf-8")
    needed = sorted({match.group("rest") for match in PREFIX_TOKEN.finditer(shipped) if match.group("rest")})
    return [
        f"{SKILL_DIR / rest.lstrip('/')} does not exist; the service will fail until it does"
        + (" (run `make setup`)" if rest.startswith("/.venv/") else "")
        for rest in needed
        if rest.endswith((".py", "/python")) and not (SKILL_DIR / rest.lstrip("/")).exists()
    ]


# Files --------------------------------------------------------------------


def holds(path: Path, text: str) -> bool:
    try:
        return path.read_bytes() == text.encode("utf-8")
    except OSError:
        return False


def write_if_changed(path: Path, text: str) -> bool:
    """Atomically replace path with text unless it already holds exactly that; True if written."""
    if holds(path, text):
        return False
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(path, text, mode=0o644)
    except OSError as exc:
        raise StoreError(
            f"cannot write {path}: {exc.strerror or exc}", hint="fix the folder's permissions or choose another with --unit-dir"
        ) from exc
    return True


def remove(path: Path) -> bool:
    if not (path.exists() or path.is_symlink()):
        return False
    try:
        path.unlink()
    except OSError as exc:
        raise StoreError(f"cannot remove {path}: {exc.strerror or exc}", hint="remove it by hand") from exc
    return True


# systemctl ----------------------------------------------------------------


def command_line(args: list[str]) -> str:
    return " ".join(["systemctl", "--user", *args])


def systemctl_run(systemctl: str, args: list[str]) -> None:
    try:
        completed = subprocess.run(
            [systemctl, "--user", *args], capture_output=True, text=True, timeout=SYSTEMCTL_TIMEOUT, stdin=subprocess.DEVNULL
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise StoreError(f"`{command_line(args)}` failed: {exc}", hint="run it by hand to see why") from exc
    if completed.returncode != 0:
        why = " ".join(completed.stderr.split()) or f"exit {completed.returncode}"
        raise StoreError(f"`{command_line(args)}` failed: {why}", hint="run it by hand to see why")
