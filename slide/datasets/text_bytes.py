"""What a whitespace-separated corpus must be to be read as words: bytes of an ASCII-compatible
encoding (UTF-8, Latin-1, ...). UTF-16 and UTF-32 put a NUL byte beside every ASCII letter, so
their words would be split at the wrong places and carry NULs into the vocabulary; text never holds
a NUL byte, so one marks such a file, or a binary one, and it is refused instead of trained on."""

from __future__ import annotations

from pathlib import Path

from .errors import DataFormatError

# Longest first: a UTF-32 little-endian mark begins with the UTF-16 little-endian one.
_BYTE_ORDER_MARKS = ((b"\xff\xfe\x00\x00", "UTF-32"), (b"\x00\x00\xfe\xff", "UTF-32"),
                     (b"\xff\xfe", "UTF-16"), (b"\xfe\xff", "UTF-16"))


def check_byte_text(path: "Path | str", data: bytes) -> None:
    """DataFormatError naming `path` and the byte offset when `data` is UTF-16/32 or holds a NUL.

    One memchr-speed scan (a few tens of ms per GB)."""
    for mark, encoding in _BYTE_ORDER_MARKS:
        if data.startswith(mark):
            raise DataFormatError(path, 0, f"byte 0: a {encoding} byte-order mark; a corpus must be UTF-8 (or "
                                           f"another encoding that writes ASCII as single bytes): convert it, "
                                           f"e.g. `iconv -f {encoding} -t UTF-8`")
    nul = data.find(b"\x00")
    if nul >= 0:
        raise DataFormatError(path, 0, f"byte {nul}: a NUL byte, which text never holds: the file is UTF-16 or "
                                       "UTF-32 without a byte-order mark, or not text at all; a corpus must be UTF-8 "
                                       "(convert it, e.g. `iconv -f UTF-16 -t UTF-8`)")
