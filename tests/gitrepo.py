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

    def git(self, *args) -> str:
        import os

        completed = subprocess.run(["git", *args], cwd=self.path, env={**os.environ, **ENV}, capture_output=True, text=True, check=True)
        return completed.stdout.strip()

    def write(self, files: dict[str, str]) -> None:
        for name, text in files.items():
            target = self.path / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)

    def commit(self, message: str, tag: str | None = None) -> str:
        self.git("add", "-A")
        self.git("commit", "-q", "-m", message)
        if tag:
            self.git("tag", tag)
        return self.git("rev-parse", "HEAD")
