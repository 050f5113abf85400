"""A figure's text as a bundle checks it (repro_dpadmm.figure_files): clean matplotlib figures hold no path, and a
path written anywhere a reader's tools show text is found, whatever encoding the file gives it."""
from __future__ import annotations

import io
import struct
import zlib
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from repro_dpadmm.bundle import scrub_paths  # noqa: E402
from repro_dpadmm.figure_files import FigureError, pdf_texts, png_texts  # noqa: E402

SECRET = "/home/alice/secret/x.csv"


def figure(fmt: str, title: str = "a figure", metadata: dict | None = None) -> bytes:
    fig, ax = plt.subplots(figsize=(2, 2))
    ax.plot([0, 1], [1, 0])
    ax.set_title(title)
    buf = io.BytesIO()
    fig.savefig(buf, format=fmt, metadata=metadata)
    plt.close(fig)
    return buf.getvalue()


def holds_path(texts, root: Path) -> bool:
    return any(scrub_paths(t, root) != t for t in texts)


def chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def with_chunk(png: bytes, extra: bytes) -> bytes:
    return png[:33] + extra + png[33:]   # after the 8-byte signature and the 25-byte IHDR chunk


@pytest.mark.parametrize("fmt", ["png", "pdf"])
def test_a_clean_figure_holds_no_path(fmt, tmp_path):
    texts = list((png_texts if fmt == "png" else pdf_texts)(figure(fmt)))
    assert texts and not holds_path(texts, tmp_path)


@pytest.mark.parametrize("extra", [
    chunk(b"tEXt", b"Comment\0" + SECRET.encode()),
    chunk(b"zTXt", b"Comment\0\0" + zlib.compress(SECRET.encode())),
    chunk(b"iTXt", b"Comment\0\1\0en\0\0" + zlib.compress(SECRET.encode())),
    chunk(b"prIv", SECRET.encode()),
])
def test_a_path_in_any_text_chunk_of_a_png_is_found(extra, tmp_path):
    assert holds_path(png_texts(with_chunk(figure("png"), extra)), tmp_path)


def test_a_png_with_bytes_after_its_end_or_cut_short_is_refused():
    png = figure("png")
    with pytest.raises(FigureError, match="bytes follow its end"):
        list(png_texts(png + SECRET.encode()))
    with pytest.raises(FigureError, match="runs past the end|no IEND"):
        list(png_texts(png[:-20]))
    with pytest.raises(FigureError, match="does not start as a PNG"):
        list(png_texts(b"GIF89a" + png))


@pytest.mark.parametrize("title, metadata", [
    ("a figure", {"Title": SECRET}),                      # the information dictionary
    ("a figure", {"Subject": "\u00e9 " + SECRET}),       # written as UTF-16 (a non-Latin-1 character)
    (f"from {SECRET}", None),                             # drawn text, inside a compressed content stream
])
def test_a_path_in_a_pdf_is_found(title, metadata, tmp_path):
    assert holds_path(pdf_texts(figure("pdf", title, metadata)), tmp_path)


@pytest.mark.parametrize("written", [b"(\\057home\\057alice\\057secret)", b"<2F686F6D652F616C6963652F736563726574>",
                                     b"% /home/alice/secret",
                                     b"<< /Title (/\\\nhome/alice/secret) >>",      # a string continued on the next line
                                     b"<< /Title (/home/\\\r\nalice/secret) >>"])
def test_a_path_written_with_pdf_escapes_or_after_the_end_is_found(written, tmp_path):
    pdf = figure("pdf") + b"\n" + written + b"\n"
    assert holds_path(pdf_texts(pdf), tmp_path)


def test_a_pdf_stream_of_another_filter_or_that_does_not_inflate_is_refused():
    body = b"hidden"
    other = b"%PDF-1.4\n1 0 obj\n<< /Length 6 /Filter /LZWDecode >>\nstream\n" + body + b"\nendstream\nendobj\n"
    with pytest.raises(FigureError, match="encoded with LZWDecode"):
        list(pdf_texts(other))
    broken = other.replace(b"/LZWDecode", b"/FlateDecode")
    with pytest.raises(FigureError, match="does not inflate"):
        list(pdf_texts(broken))
    bomb = zlib.compress(b"\0" * (65 * 2**20))
    bombed = (b"%PDF-1.4\n1 0 obj\n<< /Filter /FlateDecode >>\nstream\n" + bomb + b"\nendstream\nendobj\n")
    with pytest.raises(FigureError, match="inflates to more than 64 MiB"):
        list(pdf_texts(bombed))


def test_a_figure_whose_texts_together_exceed_the_cap_is_refused(monkeypatch):
    """Each chunk or stream is capped when inflated, and their text together too: many chunks each under the one cap
    would take the check hours to scrub."""
    import repro_dpadmm.figure_files as ff

    monkeypatch.setattr(ff, "MAX_TEXT", 3 * 2**20)
    block = zlib.compress(b"x" * 2**20)
    png = with_chunk(figure("png"), b"".join(chunk(b"zTXt", b"C\0\0" + block) for _ in range(4)))
    with pytest.raises(FigureError, match="its text is more than 3 MiB in all"):
        list(png_texts(png))
    pdf = b"%PDF-1.4\n" + b"".join(b"%d 0 obj\n<< /Filter /FlateDecode >>\nstream\n" % k + block +
                                   b"\nendstream\nendobj\n" for k in range(4))
    with pytest.raises(FigureError, match="its text is more than 3 MiB in all"):
        list(pdf_texts(pdf))
    assert len(list(png_texts(with_chunk(figure("png"), chunk(b"zTXt", b"C\0\0" + block))))) > 1


def test_pdf_streams_are_read_as_the_shortest_stream_endstream_pieces_and_a_stream_without_an_end_is_none():
    """The stream scan finds what the pattern `stream EOL (.*?) EOL? endstream` finds, in one pass: a `stream` that
    no `endstream` follows is no stream (it is read as syntax), and each stream's object is the last `obj` before."""
    from repro_dpadmm.figure_files import _streams

    data = (b"%PDF-1.4\n1 0 obj\n<< >>\nstream\nA1\nendstream\nendobj\n2 0 obj\n<< /Subtype /Image >>\nstream\r\n"
            b"PIX\r\nendstream\nendobj\n3 0 obj\n<< >>\nstream\nB2 (/home/alice/x/y)\nendstream\n" + b" stream\n" * 50)
    pieces = [data[b:e] for _, b, e, _ in _streams(data)]
    assert pieces == [b"A1", b"PIX", b"B2 (/home/alice/x/y)"]
    texts = list(pdf_texts(data))
    assert texts[1:] == ["A1", "B2 (/home/alice/x/y)"] and "PIX" not in texts[0]   # the image's pixels skipped
    assert "stream endstream" in texts[0] and texts[0].count(" stream") >= 50
