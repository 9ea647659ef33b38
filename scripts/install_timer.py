#!/usr/bin/env python3
"""Install (or remove) the systemd user timer that refreshes the indexes once a day."""

import argparse
import os
import sys
from pathlib import Path

from rag_search.core.launch import use_project_venv

use_project_venv()

from rag_search.core import cli, logs  # noqa: E402
from rag_search.core.config import expand, load_settings  # noqa: E402
from rag_search.serve.timer import (  # noqa: E402
    INSTALL_STEPS,
    TIMER,
    UNITS,
    command_line,
    holds,
    missing_programs,
    remove,
    rendered_units,
    service_environment,
    systemctl_run,
    user_manager,
    write_if_changed,
)

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
  Exit 6: a path that cannot be put into a unit file, or a data dir another
  user owns or can write; exit 7: the unit folder cannot be written, or
  systemctl failed. See references/timer.md."""


def build_parser() -> argparse.ArgumentParser:
    parser = cli.make_parser("install_timer.py", __doc__, EPILOG, (0, 1, 2, 6, 7), chroma_url=False)
    parser.add_argument("--unit-dir", metavar="DIR", help="where the unit files go (default: see below)")
    parser.add_argument("--dry-run", action="store_true", help="write nothing and run nothing; print the rendered units")
    parser.add_argument("--uninstall", action="store_true", help="disable the timer and remove the two unit files")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logs.setup_logging(quiet=True)
    return cli.run(lambda: uninstall(args) if args.uninstall else install(args))


def unit_dir(option: str | None) -> Path:
    return expand(option) if option else load_settings().unit_dir


def report_unavailable(why: str, steps: list[list[str]]) -> None:
    print(f"note: no user service manager reachable ({why}); nothing was run.", file=sys.stderr)
    if steps:
        print("Run these where your user manager is running:", file=sys.stderr)
        for step in steps:
            print(f"  {command_line(step)}", file=sys.stderr)


# Actions ------------------------------------------------------------------


def install(args: argparse.Namespace) -> int:
    target = unit_dir(args.unit_dir)
    environment = service_environment(args.data_dir, dict(os.environ))  # a timer run does not see this shell's
    units = rendered_units(environment)
    warnings = missing_programs()
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)
    written: list[str] = []
    unchanged: list[str] = []
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
