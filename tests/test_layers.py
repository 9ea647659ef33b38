"""The package's architecture (pyproject.toml, [tool.importlinter]): layers that import only downwards, no cycles."""

import logging
import tomllib

from importlinter.cli import lint_imports

from conftest import PROJECT, SCRIPTS

PACKAGE = SCRIPTS / "rag_search"


def layered_packages() -> set[str]:
    config = tomllib.loads((PROJECT / "pyproject.toml").read_text())["tool"]["importlinter"]
    layers = next(contract["layers"] for contract in config["contracts"] if contract["type"] == "layers")
    return {name.strip().removeprefix("rag_search.") for layer in layers for name in layer.split("|")}


def test_each_layer_imports_only_those_below_it_and_no_module_imports_itself_round_a_cycle(capsys):
    loggers = {logger: logger.disabled for logger in logging.root.manager.loggerDict.values() if isinstance(logger, logging.Logger)}
    try:
        code = lint_imports(config_filename=str(PROJECT / "pyproject.toml"), no_cache=True, no_logo=True)
    finally:  # its CLI configures logging with dictConfig, which disables every logger that exists (ours: no warnings)
        for logger, disabled in loggers.items():
            logger.disabled = disabled
    assert code == 0, capsys.readouterr().out


def test_every_module_of_the_package_is_in_a_layer():
    """A module beside the layers, or a package the contract does not name, would be checked by no layer rule."""
    assert [path.name for path in PACKAGE.glob("*.py")] == ["__init__.py"]
    assert {path.parent.name for path in PACKAGE.glob("*/__init__.py")} == layered_packages()
