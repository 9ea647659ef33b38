"""Real git repositories in tmp dirs, for doc-source tests (cloned over file://)."""

import subprocess
from pathlib import Path

ENV = {"GIT_AUTHOR_NAME": "Docs Writer", "GIT_AUTHOR_EMAIL": "docs@example.org",
       "GIT_COMMITTER_NAME": "Docs Writer", "GIT_COMMITTER_EMAIL": "docs@example.org"}


class GitRepo:
    def __init__(self, path: Path):
        self.path = path
        path.mkdir(parents=True)
        self.git("init", "-q", "-b", "main")

    @property
    def url(self) -> str:
        return f"file://{self.path}"

    def git(self, *args, env: dict | None = None) -> str:
        import os

        completed = subprocess.run(["git", *args], cwd=self.path, env={**os.environ, **ENV, **(env or {})}, capture_output=True, text=True,
                                   check=True)
        return completed.stdout.strip()

    def write(self, files: dict[str, str]) -> None:
        for name, text in files.items():
            target = self.path / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)

    def commit(self, message: str, tag: str | None = None, date: str | None = None) -> str:
        """Commit everything; `date` (ISO 8601) sets the author and committer dates."""
        self.git("add", "-A")
        self.git("commit", "-q", "-m", message, env={"GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date} if date else None)
        if tag:
            self.git("tag", tag)
        return self.git("rev-parse", "HEAD")
