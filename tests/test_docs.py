"""The documentation matches the code: help texts, SKILL.md, README, exit codes."""

import json
import os
import re
import subprocess
import sys

import pytest
import yaml

from conftest import PROJECT, SCRIPTS, run_script
from rag_search import errors

SCRIPT_NAMES = sorted(path.name for path in SCRIPTS.glob("*.py"))


@pytest.mark.parametrize("name", SCRIPT_NAMES)
def test_every_script_answers_help_with_exit_codes(name):
    result = run_script(name, "--help", timeout=30)
    assert result.code == 0, result
    assert result.stdout.startswith("usage:")
    assert "exit codes:" in result.stdout
    assert result.stderr == ""


@pytest.mark.parametrize("name", SCRIPT_NAMES)
def test_every_script_is_executable_on_disk_and_in_git(name):
    """SKILL.md and README run scripts as commands ($S/memory.py …): without the executable bit an agent gets
    `Permission denied` (exit 126). git stores the bit, so a checkout gets it only if the index has it."""
    assert os.access(SCRIPTS / name, os.X_OK), f"chmod +x scripts/{name}"
    staged = subprocess.run(["git", "ls-files", "-s", "--", f"scripts/{name}"], cwd=PROJECT, capture_output=True, text=True)
    if staged.returncode == 0 and staged.stdout:  # a git checkout (an installed copy may have no .git)
        assert staged.stdout.startswith("100755 "), f"git update-index --chmod=+x scripts/{name}"
    assert (SCRIPTS / name).read_text().startswith("#!/usr/bin/env python3\n")


@pytest.mark.parametrize("name", SCRIPT_NAMES)
def test_help_does_not_import_heavy_libraries(name):
    code = (
        "import runpy, sys\n"
        f"sys.argv = [{str(SCRIPTS / name)!r}, '--help']\n"
        "try:\n    runpy.run_path(sys.argv[0], run_name='__main__')\n"
        "except SystemExit:\n    pass\n"
        "heavy = [m for m in ('torch', 'sentence_transformers', 'chromadb', 'transformers', 'numpy') if m in sys.modules]\n"
        "print('HEAVY:' + ','.join(heavy))\n"
    )
    completed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=SCRIPTS)
    assert "HEAVY:\n" in completed.stdout, completed.stdout[-300:]


def skill_frontmatter():
    text = (PROJECT / "SKILL.md").read_text()
    match = re.match(r"^---\n(.*?)\n---\n(.*)$", text, re.DOTALL)
    assert match, "SKILL.md must start with YAML front matter"
    return yaml.safe_load(match.group(1)), match.group(2)


def test_skill_frontmatter_follows_the_agent_skills_spec():
    front, body = skill_frontmatter()
    assert set(front) <= {"name", "description", "license", "compatibility", "allowed-tools", "metadata"}
    assert front["name"] == "rag-search"
    assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", front["name"])
    assert 0 < len(front["description"]) <= 1024
    assert "<" not in front["description"] and ">" not in front["description"]
    assert len(body.splitlines()) < 500


def test_every_script_and_reference_named_in_skill_md_exists():
    _, body = skill_frontmatter()
    named = set(re.findall(r"\b((?:scripts|references)/[\w./-]+\.(?:py|md|json))", body))
    named |= {f"scripts/{name}" for name in re.findall(r"\$S/(\w+\.py)", body)}
    assert named, "SKILL.md should name the scripts it uses"
    for relative in named:
        assert (PROJECT / relative).is_file(), f"SKILL.md names {relative}, which does not exist"


def test_readme_opens_with_the_two_commands_and_ci_runs_the_second():
    readme = (PROJECT / "README.md").read_text()
    first_block = re.search(r"```bash\n(.*?)```", readme, re.DOTALL).group(1)
    commands = [line.split("#")[0].strip() for line in first_block.splitlines() if line.strip()]
    assert commands == ["make demo", "make test"]
    assert "make test" in (PROJECT / ".ci" / "run").read_text()


@pytest.mark.parametrize("document", ["SKILL.md", "references/cli.md"])
def test_every_exit_code_is_in_the_tables_an_agent_reads(document):
    """Issue 38: SKILL.md's table lacked 8 (index busy), which an agent meets when it runs index_personal.py while the
    timer runs, and 1."""
    table = (PROJECT / document).read_text()
    codes = {value for name, value in vars(errors).items() if name.startswith("EXIT_") and isinstance(value, int)}
    for code in codes:
        assert re.search(rf"^\| {code} \|", table, re.MULTILINE), f"exit code {code} missing from {document}"
        assert code in errors.EXIT_MEANINGS, f"exit code {code} has no meaning for --help"


def test_the_readme_module_map_names_every_module():
    """Issue 38: README's map of the package had no ranking.py."""
    readme = (PROJECT / "README.md").read_text()
    package = PROJECT / "scripts" / "rag_search"
    modules = [path.relative_to(package).as_posix() for path in package.rglob("*.py") if path.name != "__init__.py"]
    missing = [name for name in modules if not re.search(rf"(^|\s){re.escape(name)}(\s|$)", readme, re.MULTILINE)]
    assert not missing, f"README's module map lacks {missing}"


@pytest.mark.parametrize("document", ["SKILL.md", "references/cli.md"])
def test_the_exit_code_tables_say_how_a_stopped_command_ends(document):
    table = (PROJECT / document).read_text()
    for code in (130, 143):
        assert re.search(rf"^\| {code} \|", table, re.MULTILINE), f"exit {code} missing from the table in {document}"


def test_the_plugin_manifest_ships_the_skill_and_the_mcp_server():
    """Claude Code's plugin layout: .claude-plugin/ holds only plugin.json; components live at the plugin root;
    paths are relative ("./") or start with ${CLAUDE_PLUGIN_ROOT}; a skills path holds SKILL.md folders (here the root)."""
    folder = PROJECT / ".claude-plugin"
    assert [path.name for path in folder.iterdir()] == ["plugin.json"]
    manifest = json.loads((folder / "plugin.json").read_text())
    known = {"name", "version", "description", "author", "homepage", "repository", "license", "keywords", "commands", "agents",
             "skills", "hooks", "mcpServers", "outputStyles", "lspServers"}
    assert set(manifest) <= known and {"name", "version", "description"} <= set(manifest)
    front, _ = skill_frontmatter()
    assert manifest["name"] == front["name"] and re.fullmatch(r"\d+\.\d+\.\d+", manifest["version"])
    assert manifest["skills"].startswith("./") and (PROJECT / manifest["skills"] / "SKILL.md").is_file()
    server = manifest["mcpServers"]["rag-search"]
    assert server["command"].startswith("${CLAUDE_PLUGIN_ROOT}/")
    program = PROJECT / server["command"].removeprefix("${CLAUDE_PLUGIN_ROOT}/")
    assert program.is_file() and os.access(program, os.X_OK) and program.read_text().startswith("#!/usr/bin/env python3")


def test_the_mcp_json_example_and_the_readme_name_the_server():
    example = json.loads((PROJECT / "examples" / "claude-code" / ".mcp.json").read_text())
    assert example["mcpServers"]["rag-search"]["command"].endswith("/rag-search/scripts/mcp_server.py")
    readme = (PROJECT / "README.md").read_text()
    assert "claude mcp add rag-search -- ~/.claude/skills/rag-search/scripts/mcp_server.py" in readme


def test_the_users_registry_is_not_tracked_and_an_example_ships():
    assert json.loads((PROJECT / "references" / "sources.example.json").read_text())["sources"]
    ignored = subprocess.run(["git", "check-ignore", "-q", "references/sources.json"], cwd=PROJECT)
    assert ignored.returncode == 0, "references/sources.json must be ignored by git"
