"""The package's shape, held: import-linter's contracts (pyproject.toml: slide's layers, no cycles
between siblings at any depth) pass, and would fail on an upward import; no module of slide/ is
over 400 lines and no function over 60 (the CLI's argument tables aside)."""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "slide"
MAX_FILE_LINES = 400
MAX_FUNCTION_LINES = 60
# The argument tables of the command line: one add_argument per option, nothing to split.
ARGUMENT_TABLES = {"add_parser"}


def _lint(package_parent: Path, config: Path = ROOT / "pyproject.toml") -> subprocess.CompletedProcess:
    lint = shutil.which("lint-imports")
    if lint is None:
        pytest.skip("import-linter is not installed (pip install '.[test]')")
    return subprocess.run([lint, str(config), "--no-cache"], cwd=package_parent,
                          env={"PYTHONPATH": str(package_parent), "PATH": "/usr/bin:/bin"},
                          capture_output=True, text=True, timeout=300)


def _contracts_for(name: str, path: Path) -> Path:
    """pyproject.toml's contracts, for a copy of the package under another name (an installed
    `slide` would otherwise be analysed instead of the copy)."""
    text = (ROOT / "pyproject.toml").read_text()
    section = text[text.index("\n[tool.importlinter]\n") + 1:]
    for key in ("root_package", "containers", "ancestors"):
        section = section.replace(f'{key} = "slide"', f'{key} = "{name}"').replace(f'{key} = ["slide"]',
                                                                                  f'{key} = ["{name}"]')
    path.write_text(section)
    return path


def test_the_import_contracts_are_kept():
    result = _lint(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "2 kept, 0 broken" in result.stdout


@pytest.mark.parametrize("module, upward", [
    ("model/checks.py", "from ..network import Network"),   # the model importing its facade
    ("training/loop.py", "from ..runs import run"),         # the shared loop importing the CLI's run loop
    ("cli/run_config.py", "from .train import main"),       # a cycle between two CLI modules
])
def test_the_contracts_fail_on_an_upward_import_or_a_cycle(tmp_path, module, upward):
    copy = tmp_path / "slide_copy"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("*.so", "__pycache__"))
    assert _lint(tmp_path, _contracts_for("slide_copy", tmp_path / "contracts.toml")).returncode == 0
    target = copy / module
    target.write_text(target.read_text() + f"\n{upward}  # added by the test\n")
    result = _lint(tmp_path, tmp_path / "contracts.toml")
    assert result.returncode != 0 and re.search(r"Contracts: \d+ kept, [1-9]\d* broken", result.stdout), result.stdout
    assert Path(module).stem in result.stdout.split("Broken contracts")[1], "the report names the offending module"


def _sources():
    return sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


def test_no_module_is_over_the_line_limit():
    long = {str(p.relative_to(ROOT)): n for p in _sources() if (n := len(p.read_text().splitlines())) > MAX_FILE_LINES}
    assert not long, f"modules over {MAX_FILE_LINES} lines: {long}"


def test_no_function_is_over_the_line_limit():
    long = {}
    for path in _sources():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name not in ARGUMENT_TABLES:
                lines = node.end_lineno - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    long[f"{path.relative_to(ROOT)}:{node.lineno} {node.name}"] = lines
    assert not long, f"functions over {MAX_FUNCTION_LINES} lines (docstrings included): {long}"
