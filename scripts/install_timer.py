#!/usr/bin/env python3
"""Install (or remove) the systemd user timer that refreshes the indexes once a day."""

import argparse
import os
import re
import subprocess
import sys
import urllib.parse
from pathlib import Path

from rag_search.cli import use_project_venv

use_project_venv()

from rag_search import cli  # noqa: E402
from rag_search.atomic import write_atomically  # noqa: E402
from rag_search.config import expand, load_settings  # noqa: E402
from rag_search.errors import ConfigError, StoreError  # noqa: E402
from rag_search.timer import TIMER, UNITS, user_manager  # noqa: E402

EPILOG = """what it does:
  renders systemd/rag-index.service and rag-index.timer with this checkout's
  real path (and --data-dir plus the RAG_SEARCH_* variables set now, since the
  timer does not see your shell's environment), writes them to the unit folder
  when they changed, then runs
    systemctl --user daemon-reload
    systemctl --user enable --now rag-index.timer
  where a user service manager is reachable. Where none is (containers, CI, an
  ssh session without XDG_RUNTIME_DIR) it runs nothing and lists these commands
  in "next_steps". Running it again changes nothing.

unit folder: --unit-dir > $XDG_CONFIG_HOME/systemd/user > ~/.config/systemd/user

stdout: one JSON document: "action", "dry_run", "unit_dir", "written",
  "unchanged", "removed", "environment", "systemctl" ("ran", "unavailable" or
  "skipped (dry run)"), "next_steps", "warnings"; with --dry-run also "units"
  (the rendered texts), and the lists say what would be written or removed.
  Exit 6: a path that cannot be put into a unit file; exit 7: the unit folder
  cannot be written, or systemctl failed. See references/timer.md."""

SHIPPED_DIR = cli.SKILL_DIR / "systemd"
SHIPPED_PREFIX = "%h/.claude/skills/rag-search"
PREFIX_TOKEN = re.compile(re.escape(SHIPPED_PREFIX) + r'(?P<rest>/[^\s"]*)?')
# Settings the scripts read from the environment; a timer run starts without your shell's.
PATH_VARIABLES = ("RAG_SEARCH_HOME", "RAG_SEARCH_CONFIG", "RAG_SEARCH_SOURCES", "RAG_SEARCH_MODEL")
# Passed through as they are: the timer must talk to the same server, and embed with the graph searches use.
PLAIN_VARIABLES = ("RAG_SEARCH_CHROMA_URL", "RAG_SEARCH_EMBEDDING")
PATH_LIST_VARIABLES = ("RAG_SEARCH_PERSONAL_DIRS",)
SYSTEMCTL_TIMEOUT = 60
INSTALL_STEPS = [["daemon-reload"], ["enable", "--now", TIMER]]


def build_parser() -> argparse.ArgumentParser:
    parser = cli.make_parser("install_timer.py", __doc__, EPILOG, (0, 1, 2, 6, 7), chroma_url=False)
    parser.add_argument("--unit-dir", metavar="DIR", help="where the unit files go (default: see below)")
    parser.add_argument("--dry-run", action="store_true", help="write nothing and run nothing; print the rendered units")
    parser.add_argument("--uninstall", action="store_true", help="disable the timer and remove the two unit files")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    cli.setup_logging(quiet=True)
    return cli.run(lambda: uninstall(args) if args.uninstall else install(args))


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


def service_environment(data_dir: str | None) -> dict[str, str]:
    """--data-dir and the RAG_SEARCH_* variables set now, paths made absolute.

    RAG_SEARCH_CHROMA_HEADERS is left out on purpose: unit files are world-readable.
    """
    found: dict[str, str] = {}
    for name in PATH_VARIABLES:
        value = data_dir if name == "RAG_SEARCH_HOME" and data_dir else os.environ.get(name)
        if value:
            found[name] = check_representable(str(expand(value)), name)
    for name in PATH_LIST_VARIABLES:
        parts = [part.strip() for part in os.environ.get(name, "").split(",") if part.strip()]
        if parts:
            found[name] = check_representable(",".join(str(expand(part)) for part in parts), name)
    for name in PLAIN_VARIABLES:
        if os.environ.get(name):
            found[name] = check_representable(os.environ[name], name)
    return found


def rendered_units(environment: dict[str, str]) -> dict[str, str]:
    units = {}
    for name in UNITS:
        shipped = SHIPPED_DIR / name
        try:
            text = shipped.read_text(encoding="utf-8")
        except OSError as exc:
            raise StoreError(f"cannot read the shipped unit {shipped}: {exc.strerror}", hint="restore it from the repository") from exc
        units[name] = render(text, cli.SKILL_DIR, environment if name.endswith(".service") else {}, shipped)
    return units


def missing_programs() -> list[str]:
    """Warnings for files the service will run that are not in this checkout (yet)."""
    shipped = (SHIPPED_DIR / "rag-index.service").read_text(encoding="utf-8")
    needed = sorted({match.group("rest") for match in PREFIX_TOKEN.finditer(shipped) if match.group("rest")})
    return [
        f"{cli.SKILL_DIR / rest.lstrip('/')} does not exist; the service will fail until it does"
        + (" (run `make setup`)" if rest.startswith("/.venv/") else "")
        for rest in needed
        if rest.endswith((".py", "/python")) and not (cli.SKILL_DIR / rest.lstrip("/")).exists()
    ]


# Files --------------------------------------------------------------------


def unit_dir(option: str | None) -> Path:
    return expand(option) if option else load_settings().unit_dir


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


def report_unavailable(why: str, steps: list[list[str]]) -> None:
    print(f"note: no user service manager reachable ({why}); nothing was run.", file=sys.stderr)
    if steps:
        print("Run these where your user manager is running:", file=sys.stderr)
        for step in steps:
            print(f"  {command_line(step)}", file=sys.stderr)


# Actions ------------------------------------------------------------------


def install(args: argparse.Namespace) -> int:
    target = unit_dir(args.unit_dir)
    environment = service_environment(args.data_dir)
    units = rendered_units(environment)
    warnings = missing_programs()
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)
    written, unchanged = [], []
    for name, text in units.items():
        path = target / name
        if args.dry_run:
            (unchanged if holds(path, text) else written).append(str(path))
        else:
            (written if write_if_changed(path, text) else unchanged).append(str(path))
    if args.dry_run:
        state, next_steps = "skipped (dry run)", [command_line(step) for step in INSTALL_STEPS]
    else:
        systemctl, why = user_manager()
        if systemctl:
            # Reload even when nothing changed: files written while no manager ran are news to it.
            for step in INSTALL_STEPS:
                systemctl_run(systemctl, step)
            state, next_steps = "ran", []
            print(f"{TIMER} is enabled; see `systemctl --user list-timers {TIMER}`.", file=sys.stderr)
        else:
            report_unavailable(why, INSTALL_STEPS)
            state, next_steps = "unavailable", [command_line(step) for step in INSTALL_STEPS]
    payload = {
        "action": "install",
        "dry_run": args.dry_run,
        "unit_dir": str(target),
        "written": written,
        "unchanged": unchanged,
        "removed": [],
        "environment": environment,
        "systemctl": state,
        "next_steps": next_steps,
        "warnings": warnings,
    }
    if args.dry_run:
        payload["units"] = units
    cli.emit_json(payload)
    return 0


def uninstall(args: argparse.Namespace) -> int:
    target = unit_dir(args.unit_dir)
    # What `systemctl --user enable` created; disable removes it, and so do we where it cannot run.
    candidates = [target / "timers.target.wants" / TIMER, *(target / name for name in UNITS)]
    present = [path for path in candidates if path.exists() or path.is_symlink()]
    timer_installed = (target / TIMER).exists()
    if args.dry_run:
        steps = ([["disable", "--now", TIMER]] if timer_installed else []) + ([["daemon-reload"]] if present else [])
        removed, state, next_steps = [str(path) for path in present], "skipped (dry run)", [command_line(step) for step in steps]
    else:
        systemctl, why = user_manager()
        if systemctl and timer_installed:
            systemctl_run(systemctl, ["disable", "--now", TIMER])
        removed = [str(path) for path in candidates if remove(path)]
        next_steps = []
        if systemctl:
            if removed:
                systemctl_run(systemctl, ["daemon-reload"])
            state = "ran"
        else:
            # A manager we cannot reach (say, from an ssh session) may still run the timer.
            steps = [["stop", TIMER], ["daemon-reload"]] if removed else []
            report_unavailable(why, steps)
            state, next_steps = "unavailable", [command_line(step) for step in steps]
    cli.emit_json(
        {
            "action": "uninstall",
            "dry_run": args.dry_run,
            "unit_dir": str(target),
            "written": [],
            "unchanged": [],
            "removed": removed,
            "environment": {},
            "systemctl": state,
            "next_steps": next_steps,
            "warnings": [],
        }
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
