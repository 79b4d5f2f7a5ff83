"""Reading the JSON files slide wrote (config.json, metrics.jsonl, manifests) back from a folder
that anyone may have edited: never blocking on a FIFO, never reading a file of any size whole, and
every failure (not UTF-8, not JSON, nested too deeply, an integer too long for Python) a ValueError
naming the file and line, never a traceback."""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path
from typing import Any, Iterator, Optional, Union

from .paths import PathLike, regular_file

log = logging.getLogger("slide")

# Far above what slide writes (a few KiB), far below what would hurt to read.
MAX_JSON_BYTES = 16 << 20
MAX_LINE_BYTES = 1 << 20


def parse_json(text: Union[str, bytes], where: str) -> Any:
    """json.loads, with every way it can fail as a ValueError naming `where` (a file, or file:line)."""
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as e:
            raise ValueError(f"{where}: not UTF-8 text (byte {e.start}); slide writes its JSON files as UTF-8") \
                from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"{where}: not valid JSON ({e.msg} at line {e.lineno}, column {e.colno})") from None
    except RecursionError:
        raise ValueError(f"{where}: its JSON is nested too deeply") from None
    except ValueError:  # an integer of more digits than Python converts (sys.get_int_max_str_digits)
        raise ValueError(f"{where}: holds an integer of more than {sys.get_int_max_str_digits():,} digits, "
                         "more than any value slide writes") from None


def read_json(path: PathLike, what: str, *, max_bytes: int = MAX_JSON_BYTES) -> Any:
    """The JSON value in `path`, a regular file of at most `max_bytes` (a FIFO or a device is
    refused before it is opened; `what` names the file in messages)."""
    path = regular_file(path, what)
    try:
        with open(path, "rb") as f:
            data = f.read(max_bytes + 1)
    except OSError as e:
        raise OSError(e.errno, f"cannot read the {what} {path}: {e.strerror}") from None
    if len(data) > max_bytes:
        raise ValueError(f"{path}: larger than the {max_bytes:,} bytes a {what} can be; it is not one slide wrote")
    return parse_json(data, str(path))


def read_json_lines(path: PathLike, what: str, *, max_line: int = MAX_LINE_BYTES) \
        -> Iterator[tuple[int, Optional[Any]]]:
    """(line number, value) for each line of a JSON-lines file, read a line at a time; the value
    is None (and a warning names the line) for a line that is not JSON or longer than `max_line`.
    A last line without its newline, which a kill mid-write leaves, is skipped silently."""
    path = regular_file(path, what)
    try:
        with open(path, "rb") as f:
            number = 0
            while True:
                line = f.readline(max_line + 1)
                if not line:
                    return
                number += 1
                if len(line) > max_line and not line.endswith(b"\n"):
                    while line and not line.endswith(b"\n"):  # skip the rest of the long line, in pieces
                        line = f.readline(max_line + 1)
                    log.warning("%s:%d: skipped, a line longer than %s bytes", path, number, f"{max_line:,}")
                    yield number, None
                    continue
                try:
                    yield number, parse_json(line, f"{path}:{number}")
                except ValueError as e:
                    if line.endswith(b"\n"):
                        log.warning("%s; skipped", e)
                    yield number, None
    except OSError as e:
        raise OSError(e.errno, f"cannot read the {what} {path}: {e.strerror}") from None


def is_regular_or_absent(path: Path, what: str) -> bool:
    """Whether `path` is a regular file (False: nothing there); ValueError when it is a FIFO, a
    directory or a device, which opening could block on or misread."""
    try:
        regular_file(path, what)
    except FileNotFoundError:
        return False
    return True
