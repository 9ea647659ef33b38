"""The daily systemd user timer: whether a user manager answers, and what it knows of the timer.

install_timer.py installs and removes the units; status reports whether the
timer is installed and when it last ran. Where no user manager is reachable
(containers, CI, an ssh session) the answer is "unknown", never an error.
"""

import shutil
import subprocess
from pathlib import Path

TIMER = "rag-index.timer"
SERVICE = "rag-index.service"
UNITS = (SERVICE, TIMER)
PROBE_TIMEOUT = 5
UNKNOWN = "unknown"


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
