"""The documentation matches the code: help texts, SKILL.md, README, docs/, references/cli.md against the parsers, exit codes."""

import importlib
import json
import os
import re
import subprocess
import sys

import pytest
import yaml

from conftest import PROJECT, SCRIPTS, run_script
from rag_search.core import errors
from test_cli_contract import parsers_of

SCRIPT_NAMES = sorted(path.name for path in SCRIPTS.glob("*.py"))


@pytest.mark.processes
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


@pytest.mark.processes
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
    """SKILL.md's table once lacked 8 (index busy), which an agent meets when it runs index_personal.py while the
    timer runs, and 1."""
    table = (PROJECT / document).read_text()
    codes = {value for name, value in vars(errors).items() if name.startswith("EXIT_") and isinstance(value, int)}
    for code in codes:
        assert re.search(rf"^\| {code} \|", table, re.MULTILINE), f"exit code {code} missing from {document}"
        assert code in errors.EXIT_MEANINGS, f"exit code {code} has no meaning for --help"


def test_the_design_module_map_names_every_module():
    """README's map of the package once had no ranking.py; the map now lives in docs/design.md."""
    design = (PROJECT / "docs" / "design.md").read_text()
    package = PROJECT / "scripts" / "rag_search"
    modules = [path.relative_to(package).as_posix() for path in package.rglob("*.py") if path.name != "__init__.py"]
    missing = [name for name in modules if not re.search(rf"(^|\s){re.escape(name)}(\s|$)", design, re.MULTILINE)]
    assert not missing, f"docs/design.md's module map lacks {missing}"


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


def documents() -> list:
    """Every page of documentation a user or an agent reads."""
    return [PROJECT / "README.md", PROJECT / "SKILL.md", *sorted((PROJECT / "docs").glob("*.md")),
            *sorted((PROJECT / "references").glob("*.md"))]


def test_the_front_doors_stay_short():
    """The README is the front door (the rest is in docs/); SKILL.md is read on every use, so it holds the agent's loop
    only (the rest one level down in references/)."""
    assert len((PROJECT / "README.md").read_text()) <= 25_000
    assert len((PROJECT / "SKILL.md").read_text()) <= 6_000


def test_no_document_or_code_cites_an_issue_the_repository_cannot_resolve():
    """An issue's number means nothing to a reader of the repository: say what is meant."""
    code = [path for folder in ("scripts", "tests", "bench") for path in sorted((PROJECT / folder).rglob("*.py"))]
    cited = [(path.relative_to(PROJECT).as_posix(), match.group(0)) for path in [*documents(), *code]
             for match in re.finditer(r"\bissues? #?\d+|\bfindings? \d+", path.read_text(), re.IGNORECASE)]
    assert not cited, cited


def test_every_relative_link_in_the_documents_resolves():
    """Pages moved from the README to docs/ link each other and references/ by relative paths."""
    broken = []
    for path in documents():
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", path.read_text()):
            if not re.match(r"[a-z]+:", target) and not (path.parent / target).exists():
                broken.append((path.relative_to(PROJECT).as_posix(), target))
    assert not broken, broken


def test_each_benchmark_says_its_command_and_the_commit_it_was_measured_at():
    """docs/benchmarks.md holds the current figures only, so that each can be measured again and replaced."""
    page = (PROJECT / "docs" / "benchmarks.md").read_text()
    sections = re.split(r"^## ", page, flags=re.MULTILINE)[1:]
    assert len(sections) >= 5
    for section in sections:
        title = section.splitlines()[0]
        assert re.search(r"\.venv/bin/python bench/\w+\.py", section), f"{title}: no command"
        assert re.search(r"`[0-9a-f]{7,40}`", section), f"{title}: no commit"
        assert re.search(r"^\|.*\|$", section, re.MULTILINE), f"{title}: no table"


def cli_reference_sections() -> dict[str, str]:
    """references/cli.md's section of each script (`## search.py` … up to the next `## `), by script name."""
    text = (PROJECT / "references" / "cli.md").read_text()
    return {match.group(1): match.group(2)
            for match in re.finditer(r"^## (\w+\.py)\b[^\n]*\n(.*?)(?=^## |\Z)", text, re.MULTILINE | re.DOTALL)}


def long_options(parser) -> set[str]:
    """Every long option `parser` and its subcommands' parsers take, but --help."""
    return {option for _, each in parsers_of(parser) for action in each._actions for option in action.option_strings
            if option.startswith("--") and option != "--help"}


def listed_exit_codes(parser) -> set[int]:
    """The exit codes the script's --help lists (its own and the stopped ones)."""
    listing = parser.format_help().split("\nexit codes:\n", 1)[1]
    return {int(code) for code in re.findall(r"^  (\d+)  ", listing, re.MULTILINE)}


@pytest.mark.parametrize("name", SCRIPT_NAMES)
def test_the_command_reference_names_each_scripts_options_and_exit_codes(name):
    """references/cli.md cannot drift from the parsers: a script's synopsis block names exactly the long options its
    parser takes, and its section's `Exit codes:` line exactly the codes its --help lists."""
    section = cli_reference_sections().get(name)
    assert section is not None, f"references/cli.md has no '## {name}' section"
    parser = importlib.import_module(name.removesuffix(".py")).build_parser()
    synopsis = re.search(r"^```\n(.*?)^```", section, re.MULTILINE | re.DOTALL)
    assert synopsis, f"the {name} section of references/cli.md has no synopsis block"
    named = set(re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", synopsis.group(1))) - {"--help"}
    taken = long_options(parser)
    assert named == taken, f"{name}: not in the synopsis {sorted(taken - named)}, not taken {sorted(named - taken)}"
    line = re.search(r"^Exit codes: (.*?)(?:\n\n|\Z)", section, re.MULTILINE | re.DOTALL)
    assert line, f"the {name} section of references/cli.md has no 'Exit codes:' paragraph"
    codes = re.findall(r"\b\d+\b", re.sub(r"\([^)]*\)", "", line.group(1)))  # what brackets say is no code
    assert {int(code) for code in codes} == listed_exit_codes(parser), f"{name}: {line.group(0)}"
