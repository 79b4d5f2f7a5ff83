"""The documentation's Python examples run: every ```python block of README.md and docs/**/*.md is
one test case (named by file and line), executed in a fresh namespace inside a temporary working
directory. A block that cannot run here (it needs MPI ranks, or a file of a real dataset) carries a
`<!-- skip-test: the reason -->` line right above its fence; the reason is required. Bash and other
blocks are not run."""

import contextlib
import io
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})\s*(?P<info>[^`\n]*)$")
SKIP = re.compile(r"^\s*<!--\s*skip-test\b:?(?P<reason>.*?)-->\s*$")


def _closes(line: str, fence: str) -> bool:
    """Whether `line` closes a block opened by `fence`: the same character, at least as many, alone."""
    s = line.strip()
    return len(s) >= len(fence) and set(s) == {fence[0]}


def _blocks(path: Path):
    """(line of the fence, language, code, skip reason or None, skip marker line or None) per fenced block."""
    lines = path.read_text().splitlines()
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, fence, info = m.group("indent"), m.group("fence"), m.group("info").strip()
        start, body = i + 1, []
        i += 1
        while i < len(lines) and not _closes(lines[i], fence):
            body.append(lines[i][len(indent):] if lines[i].startswith(indent) else lines[i].lstrip())
            i += 1
        i += 1  # past the closing fence
        above = lines[start - 2] if start >= 2 else ""
        skip = SKIP.match(above)
        yield (start, info.split()[0].lower() if info else "", "\n".join(body) + "\n",
               skip.group("reason").strip() if skip else None, start - 1 if skip else None)


def _examples():
    cases = []
    for page in PAGES:
        for line, language, code, reason, _ in _blocks(page):
            if language in ("python", "py"):
                name = f"{page.relative_to(ROOT)}:{line}"
                marks = [pytest.mark.skip(reason=f"skip-test: {reason}")] if reason else []
                cases.append(pytest.param(page, line, code, reason, id=name, marks=marks))
    return cases


EXAMPLES = _examples()


def test_the_pages_have_python_examples():
    pages = {p.values[0] for p in EXAMPLES}
    assert ROOT / "README.md" in pages, "the README's Python example is gone"
    assert len(EXAMPLES) >= 5, f"only {len(EXAMPLES)} Python examples found in {len(PAGES)} pages"


def test_every_skip_marker_gives_a_reason_and_sits_above_a_python_block():
    problems = []
    for page in PAGES:
        marked = {}
        for line, language, _, reason, marker in _blocks(page):
            if marker is not None:
                marked[marker] = (language, reason)
        for n, text in enumerate(page.read_text().splitlines(), start=1):
            if "skip-test" not in text or not text.strip().startswith("<!--"):
                continue
            where = f"{page.relative_to(ROOT)}:{n}"
            if n not in marked:
                problems.append(f"{where}: a skip-test marker not right above a code fence")
            elif marked[n][0] not in ("python", "py"):
                problems.append(f"{where}: a skip-test marker above a {marked[n][0] or 'plain'} block (only Python runs)")
            elif not marked[n][1]:
                problems.append(f"{where}: a skip-test marker without a reason (`<!-- skip-test: why -->`)")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("page, line, code, reason", EXAMPLES)
def test_the_example_runs(page, line, code, reason, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    namespace = {"__name__": "__docs_example__"}
    with contextlib.redirect_stdout(io.StringIO()):
        # padded so that a traceback's line numbers are the page's
        exec(compile("\n" * line + code, str(page.relative_to(ROOT)), "exec"), namespace)


def test_the_readme_is_a_front_page_that_starts_with_the_two_commands():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 250, "the README is the front page: at most 250 lines, the rest in docs/"
    first = next(_blocks(ROOT / "README.md"))
    assert first[1] == "bash" and first[2].splitlines() == [
        'pip install . && slide train                 # build, then train on the small built-in problem (10-30 s)',
        'pip install ".[test]" && pytest              # the test suite (the command CI runs)'], \
        "the README's first code block must be the two commands"
