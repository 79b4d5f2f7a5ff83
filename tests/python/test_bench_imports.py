"""The benchmarks import what slide has: a bench is run by hand, rarely, so a name it imports
from slide that a refactor moved (benches/label_tree_scale.py and reranker_scale.py imported
ranking_report from slide.neighbours for months after it moved to slide.metrics) would only
show when someone ran it."""

import ast
import importlib
from pathlib import Path

import pytest

BENCHES = Path(__file__).resolve().parents[2] / "benches"


def _slide_imports():
    for path in sorted(BENCHES.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module and \
                    (node.module == "slide" or node.module.startswith("slide.")):
                for alias in node.names:
                    yield path.relative_to(BENCHES.parent), node.module, alias.name


@pytest.mark.parametrize("path, module, name", list(_slide_imports()), ids=lambda v: str(v))
def test_every_name_a_bench_imports_from_slide_exists(path, module, name):
    if module == "slide.torch" or module.startswith("slide.torch."):
        pytest.importorskip("torch")  # slide's PyTorch layer needs it (the torch extra)
    imported = importlib.import_module(module)
    if not hasattr(imported, name):  # a submodule, imported by name
        importlib.import_module(f"{module}.{name}")


def test_the_benches_import_from_slide_at_all():
    assert len(list(_slide_imports())) > 50
