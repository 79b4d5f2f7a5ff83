"""Multi-label ARFF files, as Mulan and MEKA distribute Bibtex, Delicious, Mediamill, ...

    @relation NAME                      (MEKA: 'NAME: -C 159' says the first 159 attributes are labels)
    @attribute word {0,1}               (or numeric / real / integer)
    ...
    @data
    {3 1,17 1,1840 1}                   (sparse rows: attribute index and value)
    0,1,0,...                           (or dense rows)

Which attributes are labels comes from, in order: the `labels` argument, Mulan's XML file beside
the ARFF file (same name, ``.xml``, one ``<label name=...>`` per label), or MEKA's ``-C`` option in
the relation name. Labels must be 0/1; features become float32 CSR, labels a CSR indicator matrix.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Optional, Sequence, Union
from xml.etree import ElementTree

import numpy as np
import scipy.sparse as sp

from ..paths import regular_file
from .errors import DataFormatError
from .synthetic import Split
from .xc_files import read_bytes

PathLike = Union[str, Path]
_NUMERIC = ("numeric", "real", "integer")
_MEKA_C = re.compile(r"-C\s+(-?\d+)")


def load_arff(path: PathLike, *, labels: Union[int, Sequence[str], None] = None,
              xml: Optional[PathLike] = None) -> Split:
    """Load a multi-label ARFF file (plain or gzip) as CSR features and a CSR label matrix.

    Args:
        path: the ARFF file.
        labels: which attributes are labels: a count N (the last N attributes, Mulan's layout; -N
            for the first N, MEKA's) or their names. Default: Mulan's XML file, else MEKA's ``-C``.
        xml: Mulan's label file, when it is not ``path`` with ``.xml`` for ``.arff``.

    Features keep the order of the remaining attributes; labels that of the names given (list or XML),
    or of the file for a count.
    Raises FileNotFoundError for a missing file and DataFormatError (a ValueError) naming the file,
    the line and what was expected.
    """
    path = regular_file(path, "ARFF file")
    try:
        text = read_bytes(path).decode("utf-8")
    except UnicodeDecodeError as e:
        raise DataFormatError(path, 0, f"not UTF-8 text (byte {e.start})") from None
    lines = text.splitlines()
    relation, names, kinds, data_at = _header(lines, path)
    is_label, label_column = _label_columns(path, names, relation, labels, xml)
    return _rows(lines, data_at, kinds, is_label, label_column, path)


def _header(lines: list[str], path: Path) -> tuple[str, list[str], list[str], int]:
    relation, names, kinds = "", [], []
    for number, raw in enumerate(lines, 1):
        line = raw.strip()
        if not line or line.startswith("%"):
            continue
        keyword = line.split(None, 1)[0].lower()
        if keyword == "@relation":
            relation = line.split(None, 1)[1] if " " in line or "\t" in line else ""
        elif keyword == "@attribute":
            name, kind = _attribute(line, number, path)
            names.append(name)
            kinds.append(kind)
        elif keyword == "@data":
            if not names:
                raise DataFormatError(path, number, "@data before any @attribute")
            return relation, names, kinds, number
        else:
            raise DataFormatError(path, number, f"expected @relation, @attribute or @data, got {line[:40]!r}")
    raise DataFormatError(path, 0, "no @data line: not an ARFF file")


def _attribute(line: str, number: int, path: Path) -> tuple[str, str]:
    rest = line.split(None, 1)[1].strip() if len(line.split(None, 1)) == 2 else ""
    if rest[:1] in ("'", '"'):  # a quoted name: backslash escapes the next character
        quote, name, i = rest[0], [], 1
        while i < len(rest) and rest[i] != quote:
            i += 1 if rest[i] != "\\" else 2
            name.append(rest[i - 1])
        if i >= len(rest):
            raise DataFormatError(path, number, "unterminated quoted attribute name")
        name, kind = "".join(name), rest[i + 1:].strip()
    else:  # unquoted names are literal (Mulan's label files keep their backslashes)
        name, _, kind = rest.partition(" ") if " " in rest else rest.partition("\t")
        kind = kind.strip()
    if not name or not kind:
        raise DataFormatError(path, number, "expected '@attribute NAME TYPE'")
    if kind.lower() in _NUMERIC:
        return name, "numeric"
    if kind.startswith("{") and kind.endswith("}"):
        values = {v.strip().strip("'\"") for v in kind[1:-1].split(",")}
        if values <= {"0", "1"}:
            return name, "binary"
    raise DataFormatError(path, number, f"attribute {name!r} has type {kind!r}; "
                                        "expected numeric, real, integer or {0,1}")


def _label_columns(path: Path, names: list[str], relation: str, labels, xml) -> tuple[np.ndarray, np.ndarray]:
    """(is_label per attribute, label column per attribute): labels named in a list or an XML file
    take the list's order; counted ones the file's."""
    n = len(names)
    mask = np.zeros(n, dtype=bool)
    if labels is None:
        xml_path = Path(xml) if xml is not None else path.with_suffix(".xml")
        if xml is not None or xml_path.is_file():
            labels = _xml_labels(regular_file(xml_path, "Mulan label file"))
        else:
            found = _MEKA_C.search(relation)
            if not found:
                raise DataFormatError(path, 0, "cannot tell which attributes are labels: pass labels=N (the last N "
                                               f"attributes) or names, put Mulan's {xml_path.name} beside it, or use "
                                               "MEKA's '-C N' in @relation")
            labels = -int(found.group(1))  # MEKA's positive C: the first C attributes
    if isinstance(labels, (int, np.integer)) and not isinstance(labels, bool):
        count = abs(int(labels))
        if not 1 <= count < n:
            raise ValueError(f"labels={labels}: {path} has {n} attributes, so a label count must be in [1, {n - 1}]")
        mask[n - count:] = labels > 0
        mask[:count] = mask[:count] | (labels < 0)
        return mask, np.cumsum(mask) - 1
    if isinstance(labels, (str, bytes)) or not hasattr(labels, "__iter__"):
        raise ValueError(f"labels must be a count or a list of attribute names, got {labels!r}")
    position = {name: i for i, name in enumerate(names)}
    missing = [name for name in labels if name not in position]
    if missing:
        raise DataFormatError(path, 0, f"label attributes {missing[:5]} are not attributes of this file")
    if len(set(labels)) != len(labels):
        raise ValueError("labels names an attribute twice")
    mask[[position[name] for name in labels]] = True
    if mask.all():
        raise DataFormatError(path, 0, "every attribute is a label: no features left")
    column = np.full(n, -1)
    column[[position[name] for name in labels]] = np.arange(len(labels))
    return mask, column


def _xml_labels(path: Path) -> list[str]:
    try:
        root = ElementTree.parse(path).getroot()
    except ElementTree.ParseError as e:
        raise DataFormatError(path, e.position[0], f"not well-formed XML ({e})") from None
    names = [el.get("name") for el in root.iter() if el.tag.rsplit("}", 1)[-1] == "label"]
    if not names or None in names:
        raise DataFormatError(path, 0, "expected <label name=\"...\"> elements (Mulan's label file)")
    return names


def _rows(lines: list[str], data_at: int, kinds: list[str], is_label: np.ndarray, label_column: np.ndarray,
          path: Path) -> Split:
    n_attr = len(kinds)
    column = np.cumsum(~is_label) - 1           # attribute -> feature column
    x_indptr, x_indices, x_data, y_indptr, y_indices = [0], [], [], [0], []
    for number in range(data_at + 1, len(lines) + 1):
        line = lines[number - 1].strip()
        if not line or line.startswith("%"):
            continue
        pairs = _sparse_row(line, n_attr, number, path) if line.startswith("{") else _dense_row(line, n_attr, number,
                                                                                                 path)
        for a, value in pairs:
            if is_label[a]:
                if value not in (0.0, 1.0):
                    raise DataFormatError(path, number, f"label attribute {a} has value {value:g}; labels are 0 or 1")
                if value:
                    y_indices.append(label_column[a])
            elif value:
                x_indices.append(column[a])
                x_data.append(value)
        x_indptr.append(len(x_indices))
        y_indptr.append(len(y_indices))
    n = len(x_indptr) - 1
    X = sp.csr_matrix((np.asarray(x_data, np.float32), np.asarray(x_indices, np.int32), np.asarray(x_indptr)),
                      shape=(n, int((~is_label).sum())))
    Y = sp.csr_matrix((np.ones(len(y_indices), np.float32), np.asarray(y_indices, np.int32), np.asarray(y_indptr)),
                      shape=(n, int(is_label.sum())))
    X.sort_indices()
    Y.sort_indices()
    return Split(X, Y)


def _sparse_row(line: str, n_attr: int, number: int, path: Path):
    if not line.endswith("}"):
        raise DataFormatError(path, number, "a sparse row must end with '}'")
    body = line[1:-1].strip()
    out, seen = [], set()
    for item in body.split(",") if body else ():
        parts = item.split()
        if len(parts) != 2:
            raise DataFormatError(path, number, f"expected 'INDEX VALUE' in a sparse row, got {item.strip()!r}")
        a = _index(parts[0], n_attr, number, path)
        if a in seen:
            raise DataFormatError(path, number, f"attribute {a} appears twice")
        seen.add(a)
        out.append((a, _value(parts[1], number, path)))
    return out


def _dense_row(line: str, n_attr: int, number: int, path: Path):
    values = line.split(",")
    if len(values) != n_attr:
        raise DataFormatError(path, number, f"expected {n_attr} comma-separated values, got {len(values)}")
    return [(a, _value(v.strip(), number, path)) for a, v in enumerate(values)]


def _index(token: str, n_attr: int, number: int, path: Path) -> int:
    if not token.isdigit() or int(token) >= n_attr:
        raise DataFormatError(path, number, f"attribute index {token!r} is not in [0, {n_attr - 1}]")
    return int(token)


def _value(token: str, number: int, path: Path) -> float:
    token = token.strip("'\"")
    try:
        value = float(np.float32(token))
    except (ValueError, OverflowError):
        raise DataFormatError(path, number, f"value {token!r} is not a number (missing values '?' are not supported)") \
            from None
    if not np.isfinite(value):
        raise DataFormatError(path, number, f"value {token!r} is not a finite float32")
    return value
