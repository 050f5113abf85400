"""The text a figure file carries, for a bundle to check before it copies the figure byte for byte.

A figure is never edited (its bytes would break), so a bundle refuses one whose text holds a path or an address's
credentials (bundle._copy_scrubbed). A clean run's figures hold none: matplotlib writes its name and address into a
PNG's one `tEXt` chunk and a PDF's information dictionary, and draws the rest.

- PNG: every chunk but the image data (`IDAT`) is text a reader's tools may show (`tEXt`, `zTXt` and `iTXt` inflated,
  private chunks as they are); bytes after `IEND` are refused.
- PDF: the file outside its streams, and every stream that is not an image, inflated (matplotlib writes FlateDecode
  only); strings are read with their escapes (`\\057` and `<2F>` are `/`) and without the zero bytes of UTF-16.
"""
from __future__ import annotations

import bisect
import re
import struct
import zlib
from typing import Iterator

MAX_INFLATED = 64 * 2**20   # a figure's stream or text chunk inflated: matplotlib's are a few MB at most
MAX_TEXT = 32 * 2**20       # a figure's text in all (its chunks or streams together): it is scrubbed to be checked


class FigureError(ValueError):
    """A file named as a figure (.png, .pdf) that is not one this check can read."""


PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _inflate(data: bytes, what: str) -> bytes:
    inflater = zlib.decompressobj()
    try:
        out = inflater.decompress(data, MAX_INFLATED)
    except zlib.error as exc:
        raise FigureError(f"{what} does not inflate ({exc})") from None
    if inflater.unconsumed_tail:
        raise FigureError(f"{what} inflates to more than {MAX_INFLATED // 2**20} MiB")
    return out


def _capped(texts: Iterator[str]) -> Iterator[str]:
    """`texts`, refused (FigureError) once they hold more than MAX_TEXT characters together: many chunks or streams
    each under MAX_INFLATED would otherwise take the check hours."""
    total = 0
    for text in texts:
        total += len(text)
        if total > MAX_TEXT:
            raise FigureError(f"its text is more than {MAX_TEXT // 2**20} MiB in all (a run's figure holds far less)")
        yield text


def png_texts(data: bytes) -> Iterator[str]:
    """The text of every PNG chunk but the image data, as Latin-1 (the PNG specification's text encoding; iTXt's
    UTF-8 bytes read so too, which keeps every ASCII path as it is); at most MAX_TEXT in all."""
    return _capped(_png_texts(data))


def _png_texts(data: bytes) -> Iterator[str]:
    if not data.startswith(PNG_SIGNATURE):
        raise FigureError("it does not start as a PNG image does")
    i = len(PNG_SIGNATURE)
    while True:
        if i + 8 > len(data):
            raise FigureError("it ends inside a chunk (no IEND)")
        (n,), kind = struct.unpack(">I", data[i:i + 4]), data[i + 4:i + 8]
        body = data[i + 8:i + 8 + n]
        if len(body) < n or i + 12 + n > len(data):
            raise FigureError(f"its {kind!r} chunk runs past the end of the file")
        if kind == b"zTXt":
            key, _, rest = body.partition(b"\0")
            body = key + b"\0" + _inflate(rest[1:], "a zTXt chunk")
        elif kind == b"iTXt":
            key, _, rest = body.partition(b"\0")
            if rest[:1] == b"\1":   # compressed: the flag, the method, then language and keyword before the text
                lang, _, rest2 = rest[2:].partition(b"\0")
                translated, _, text = rest2.partition(b"\0")
                body = b"\0".join((key, lang, translated, _inflate(text, "an iTXt chunk")))
        if kind != b"IDAT":
            yield kind.decode("latin-1") + ":" + body.decode("latin-1")
        i += 12 + n
        if kind == b"IEND":
            if data[i:].strip(b"\0"):
                raise FigureError(f"{len(data) - i:,} bytes follow its end (IEND)")
            return


_STREAM_START = re.compile(rb"\bstream\r?\n")
_STREAM_END = re.compile(rb"\r?\n?endstream\b")


def _streams(data: bytes) -> Iterator[tuple[int, int, int, int]]:
    """(start, body start, body end, end) of each `stream ... endstream` in turn, each the shortest; one pass (a
    lazy pattern over the file searched to its end for every `stream` that no `endstream` follows)."""
    pos = 0
    while (head := _STREAM_START.search(data, pos)) and (tail := _STREAM_END.search(data, head.end())):
        yield head.start(), head.end(), tail.start(), tail.end()
        pos = tail.end()
_FILTERS = re.compile(rb"/Filter\s*(\[[^\]]*\]|/[^\s/<>\[\]()]+)")
_HEX_STRING = re.compile(rb"(?<!<)<([0-9A-Fa-f\s]+)>(?!>)")
_OCTAL = re.compile(rb"\\([0-7]{1,3})")
_CONTINUED = re.compile(rb"\\(?:\r\n|\r|\n)")
_KERNED = re.compile(rb"(?<!\\)\)\s*(?:-?[\d.]+\s*)?\(")


def _hex(digits: bytes) -> bytes:
    digits = re.sub(rb"\s", b"", digits)
    return bytes.fromhex((digits + b"0" * (len(digits) % 2)).decode())   # an odd last digit is followed by 0


def _readable(raw: bytes) -> str:
    """PDF syntax as a reader shows its strings: the pieces of a kerned string joined, octal escapes and hex strings
    decoded, UTF-16's zero bytes dropped."""
    raw = _CONTINUED.sub(b"", raw)   # a backslash at a line's end continues a string on the next line
    raw = _KERNED.sub(b"", raw)   # `[ (fro) 0.29 (m) ] TJ` shows "from"
    raw = _OCTAL.sub(lambda m: bytes([int(m.group(1), 8) & 0xFF]), raw)
    raw = _HEX_STRING.sub(lambda m: _hex(m.group(1)), raw)
    return raw.replace(b"\0", b"").decode("latin-1")


def pdf_texts(data: bytes) -> Iterator[str]:
    """The text of a PDF: its syntax outside streams, then each stream that is not an image, inflated where it is
    FlateDecode. FigureError for another filter (matplotlib writes FlateDecode only: any other would hide its text
    from this check) or a stream that does not inflate."""
    if not data.lstrip(b"\0\t\n\r ").startswith(b"%PDF-"):
        raise FigureError("it does not start as a PDF does")
    return _capped(_pdf_texts(data))


def _pdf_texts(data: bytes) -> Iterator[str]:
    streams = list(_streams(data))
    outside, pos = [], 0
    for start, _, _, end in streams:
        outside += [data[pos:start], b"stream endstream"]
        pos = end
    yield _readable(b"".join(outside) + data[pos:])
    starts = [m.start() for m in re.finditer(rb"\bobj\b", data)]
    for start, body_start, body_end, _ in streams:
        k = bisect.bisect_left(starts, start)   # the object the stream belongs to: the last `obj` before it
        head = data[starts[k - 1] if k else 0:start]
        if re.search(rb"/Subtype\s*/Image\b", head):
            continue   # pixels: an image draws, it holds no text a reader is shown
        filters = [f.decode("latin-1") for f in re.findall(rb"/(\w+)", b"".join(_FILTERS.findall(head)))]
        if any(f != "FlateDecode" for f in filters):
            raise FigureError(f"a stream is encoded with {', '.join(sorted(set(filters) - {'FlateDecode'}))}, which "
                              "this check does not read (matplotlib writes FlateDecode only)")
        body = data[body_start:body_end]
        for _ in filters:
            body = _inflate(body, "a stream")
        yield _readable(body)
