"""The one reader of every JSON and YAML file the package reads: limits that keep a hostile file from crashing or
hanging it.

Configs, claims files, `--params`/`--options`, metrics.json, dataset sidecars, provenance.json and executed notebooks
may come from elsewhere (a results bundle is meant to be shared), so each is read with limits, and a file that breaks
one raises `LoadError` naming the file (and the line where there is one) instead of a traceback, a hang or an
exhausted memory:

* size: at most `max_bytes` (default `MAX_BYTES`, 64 MiB; the environment variable `REPRO_DPADMM_MAX_FILE_MB`
  overrides it), checked before the file is read;
* nesting: at most `MAX_DEPTH` levels of objects and lists (a notebook needs about 10);
* numbers: finite only (no NaN, Infinity, `.inf`, `.nan`, nor a literal such as 1e400 that overflows a double), and
  integers within a signed 64-bit range (10^400 is refused, not carried into float arithmetic);
* YAML: one document, no anchors (`&a`) or aliases (`*a`), so that a few hundred bytes cannot expand into gigabytes
  ("billion laughs"); only the safe loader's types.

PyYAML and the standard json module do the parsing; this module adds the limits around them (neither has them).
"""

from __future__ import annotations

import json
import math
import os
import sys
import re
from pathlib import Path

import yaml

MAX_BYTES = 64 * 2**20
# YAML (configs, claims files, the schema: at most about 100 kB each) is parsed about 100 times slower than JSON, so a
# YAML file gets a smaller cap, one that it parses in seconds; REPRO_DPADMM_MAX_FILE_MB, when set, is the cap of both.
MAX_YAML_BYTES = 2 * 2**20
MAX_BYTES_ENV = "REPRO_DPADMM_MAX_FILE_MB"
MAX_DEPTH = 64
MAX_INT = 2**63 - 1
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)   # libyaml when PyYAML has it: the same result, faster


# Characters that act on a terminal or reorder or hide what it shows: C0 and C1 controls, DEL, and every format
# character of Unicode (category Cf: bidi marks, overrides and isolates, zero-width and invisible characters, the soft
# hyphen, the byte-order mark, tags), with the line and paragraph separators; and lone surrogates (a file name's bytes
# that are not UTF-8, as Python decodes them), which no terminal can be sent.
_FORMAT = ("\ud800-\udfff\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e\u200b-\u200f\u2028-\u202e"
           "\u2060-\u206f\ufeff\ufff9-\ufffb\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3"
           "\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f")
_UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f" + _FORMAT + "]")


def printable(text) -> str:
    """`text` safe to print on a terminal: every control, bidi or invisible character shown as its escape
    (ESC as \\x1b, U+202E as \\u202e, a newline as \\n), so a string from elsewhere can neither move the cursor,
    retitle or clear the terminal, nor start a line of its own."""
    return _UNPRINTABLE.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), str(text))


# The same, less the whitespace a page may hold (tab, newline, carriage return): what `visible` shows as escapes.
_UNPRINTABLE_IN_PAGE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f" + _FORMAT + "]")


def visible(text) -> str:
    """`text` safe to show in a page: control, bidi and invisible characters as their escapes (an unterminated
    U+202E from a bundle would reverse the rest of its table cell); tabs and line breaks stay."""
    return _UNPRINTABLE_IN_PAGE.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), str(text))


# The user:password part of an address (https://user:secret@host/...): never printed, recorded or bundled.
_USERINFO = re.compile(r"(?<=://)[^/\s\"'<>\\]*@")   # to the last `@` before the path: a password may hold one


# An address from its `://` to the next space, quote or bracket, taken whole (one match per run of text, however many
# `://` it holds: a scan from each of them would take quadratic time), and the query in it (https://host/m?token=...
# &X-Amz-Signature=...): signed and token URLs carry their secret there.
_ADDRESS = re.compile(r"(?<=[A-Za-z0-9])://[^\s\"'<>\\]*")   # up to a backslash too: JSON text's `\n` ends it
_QUERY = re.compile(r"\?[^\s\"'<>#\\]*")


# ... and the same address written with its `://` escaped (JSON's `:\/\/`, `:\u002f\u002f`, HTML's `&#58;//`) or
# percent-encoded inside another address (`redirect=https%3A%2F%2Fuser%3Apw%40host`): its user:password to the `@`
_USERINFO_CODED = re.compile(r"(?i)(?<=[a-z0-9])(?::|&#0*58;|&#x0*3a;|%3a)(?:\\?/|\\u002f|&#0*47;|&#x0*2f;|%2f){2}"
                             r"([^\s\"'<>\\/%@]*(?:%(?!40)[0-9a-f]{2}[^\s\"'<>\\/%@]*)*)(?=@|%40)")


def redact(text) -> str:
    """`text` with the credentials of every address in it replaced by `<credentials>`, and its query (where signed or
    token addresses hold their secret) by `<query>` (a data mirror's address may carry them; the fetch errors, the
    sidecars, the lock records and bundled files all pass through here)."""
    text = _USERINFO.sub("<credentials>@", _ADDRESS.sub(lambda m: _QUERY.sub("?<query>", m.group(0)), str(text)))
    return _USERINFO_CODED.sub(lambda m: m.group(0)[:m.start(1) - m.start(0)] + "<credentials>"
                               if m.group(1) else m.group(0), text)


class LoadError(ValueError):
    """A JSON or YAML file (or option) that cannot be read within the limits; names the file and line."""

    def __init__(self, source: str, problem: str, line: int | None = None):
        self.source, self.problem, self.line = str(source), problem, line
        super().__init__(f"{self.source}{f':{line}' if line else ''}: {problem}")


# The most characters of one free-text string (a reason, a note, a sidecar field, a provenance entry) that a report
# takes from results or a bundle: each such string may be repeated on many pages and in claims.json, so a bundle
# within the file caps whose strings ran to megabytes made a report of gigabytes (or a MemoryError).
TEXT_MAX = 2000


def count_values(data, cap: int) -> int:
    """The number of values the JSON value `data` holds (every entry of every object and list, nested), counting no
    further than just past `cap` (a caller's bound on what it keeps of a file: metrics, a notebook's parameters)."""
    n, stack = 0, [data]
    while stack and n <= cap:
        x = stack.pop()
        if isinstance(x, (dict, list)):
            n += len(x)
            stack.extend(x.values() if isinstance(x, dict) else x)
    return n


_CLIPPED_END = re.compile(r"… \([\d,]+ characters\)\Z")


def clipped(text: str, limit: int = TEXT_MAX) -> str:
    """`text` if it has at most `limit` characters (or was clipped so already), else its first `limit` and
    "… (N characters)"."""
    if len(text) <= limit or (len(text) <= limit + 40 and _CLIPPED_END.match(text, limit)):
        return text
    return text[:limit] + f"… ({len(text):,} characters)"


def clip_strings(data, limit: int = TEXT_MAX):
    """A copy of the JSON value `data` with every string value (not key) clipped to `limit` characters (clipped);
    walked with a stack, no recursion (a loaded value is at most MAX_DEPTH deep)."""
    if isinstance(data, str):
        return clipped(data, limit)
    if not isinstance(data, (dict, list)):
        return data
    top = {} if isinstance(data, dict) else []
    stack = [(data, top)]
    while stack:
        src, dst = stack.pop()
        for key, value in (src.items() if isinstance(src, dict) else enumerate(src)):
            if isinstance(value, (dict, list)):
                new = {} if isinstance(value, dict) else []
                stack.append((value, new))
            else:
                new = clipped(value, limit) if isinstance(value, str) else value
            if isinstance(dst, dict):
                dst[key] = new
            else:
                dst.append(new)
    return top


def env_number(var: str) -> float | None:
    """The number an environment variable holds: None when unset or empty, NaN when it is no number (the caller
    names what is allowed)."""
    text = os.environ.get(var, "").strip()
    if not text:
        return None
    try:
        return float(text)
    except ValueError:
        return math.nan


def max_bytes() -> int:
    """The size limit in force: REPRO_DPADMM_MAX_FILE_MB when set (a positive number of MiB), else MAX_BYTES."""
    mb = env_number(MAX_BYTES_ENV)
    if mb is None:
        return MAX_BYTES
    value = os.environ[MAX_BYTES_ENV]
    if not (math.isfinite(mb) and mb * 2**20 >= 1):
        raise LoadError(MAX_BYTES_ENV, f"must be a positive number of MiB (at least one byte), got {value!r}")
    return min(int(mb * 2**20), sys.maxsize // 4)   # "no limit" in practice; a read size must stay a C ssize_t


def max_yaml_bytes() -> int:
    """The size limit of a YAML file: REPRO_DPADMM_MAX_FILE_MB when set, else MAX_YAML_BYTES."""
    return max_bytes() if os.environ.get(MAX_BYTES_ENV) else MAX_YAML_BYTES


def _read_at_most(fh, n: int, chunk: int = 1 << 20) -> bytes:
    """Up to `n` bytes of `fh`, read in chunks: fh.read(n) would allocate all of a large cap (the environment may
    set it far beyond the machine's memory) before reading a byte."""
    parts, got = [], 0
    while got < n:
        part = fh.read(min(chunk, n - got))
        if not part:
            break
        parts.append(part)
        got += len(part)
    return b"".join(parts)


def read_text(path: str | Path, limit: int | None = None) -> str:
    """The UTF-8 text of a file no larger than `limit` bytes (default: max_bytes()), checked before reading."""
    path = Path(path)
    limit = max_bytes() if limit is None else limit
    try:
        with open(path, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            if size > limit:
                raise LoadError(path, f"{size:,} bytes, more than the {limit:,} allowed "
                                      f"(set {MAX_BYTES_ENV} to allow more)")
            data = _read_at_most(fh, limit + 1)
    except OSError as exc:
        raise LoadError(path, f"cannot be read ({exc.strerror or exc})") from None
    if len(data) > limit:   # grew while being read (a FIFO, a file being written)
        raise LoadError(path, f"more than the {limit:,} bytes allowed (set {MAX_BYTES_ENV} to allow more)")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise LoadError(path, f"not UTF-8 text (byte {exc.start})") from None


def _type_name(value) -> str:
    return {dict: "an object (mapping)", list: "a list"}.get(type(value), type(value).__name__)


def _check_type(value, expect, source: str):
    if expect is not None and not isinstance(value, expect):
        want = _type_name(expect()) if isinstance(expect, type) else " or ".join(_type_name(t()) for t in expect)
        raise LoadError(source, f"must hold {want}, got {_type_name(value)}")
    return value


class _Refused:
    """A number literal the JSON parser met that breaks the limits; `_walk` reports it with its path."""

    def __init__(self, token: str, why: str):
        self.token, self.why = token, why


def _bad_value(value, finite: bool = True) -> str:
    """Why a parsed value breaks the limits ('' if it does not)."""
    if isinstance(value, _Refused):
        return value.why
    if finite and isinstance(value, float) and not math.isfinite(value):
        return f"{value} is not a finite number (allowed: finite numbers only)"
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_INT:
        return f"the integer {str(value)[:12]}... ({len(str(abs(value)))} digits) is outside the 64-bit range " \
               f"(allowed: -{MAX_INT:,} to {MAX_INT:,})"
    return ""


def _walk(value, max_depth: int, finite: bool = True):
    """Check depth, numbers and keys of a parsed document without recursion; return the path of the first problem
    (in document order), the problem and the offending value, or (None, '', None). Linear in the document: leaves
    are checked where they sit (a list of a million numbers is one loop), and a path is built only for the problem."""
    def path_of(record) -> tuple:
        out = []
        while record is not None:
            record, key = record
            out.append(key)
        return tuple(reversed(out))[1:]

    stack = [(value, (None, None), 0)]   # (container, its record (parent record, key), depth)
    while stack:
        node, record, depth = stack.pop()
        if not isinstance(node, (dict, list)):
            why = _bad_value(node, finite)
            if why:
                return path_of(record), why, node
            continue
        if depth >= max_depth:
            return path_of(record), f"nested deeper than {max_depth} levels", None
        children = []
        is_dict = isinstance(node, dict)
        for key, child in (node.items() if is_dict else enumerate(node)):
            if is_dict and type(key) is not str:
                why = _bad_value(key, finite)
                if why:
                    return path_of(record), f"key: {why}", key
            kind = type(child)
            if kind is float:
                if finite and child - child != 0:   # NaN or an infinity
                    return path_of((record, key)), _bad_value(child, finite), child
            elif kind is int:
                if not -MAX_INT <= child <= MAX_INT:
                    return path_of((record, key)), _bad_value(child, finite), child
            elif kind is dict or kind is list or isinstance(child, (dict, list, _Refused)) or \
                    (finite and isinstance(child, float)) or (isinstance(child, int) and not isinstance(child, bool)):
                children.append((child, (record, key), depth + 1))
        stack.extend(reversed(children))   # the first problem in document order is found first
    return None, "", None


def value_problem(value, finite: bool = True) -> str:
    """Why an already parsed value (a config Snakemake read itself, `--config`) breaks the limits of this module:
    its depth or an integer beyond 64 bits (and, with `finite`, NaN or an infinity), naming the key ('' if none)."""
    where, why, _ = _walk(value, MAX_DEPTH, finite)
    if where is None:
        return ""
    return f"{'.'.join(map(str, where)) or '(top)'}: {why}"


def _path_text(path) -> str:
    text = ".".join(map(str, path)) or "top level"
    return text if len(text) <= 80 else text[:77] + "..."


# ---------------------------------------------------------------------------------------------------------- JSON

def _json_float(text: str):
    value = float(text)
    if not math.isfinite(value):
        return _Refused(text, f"{text} is not a finite number: it overflows a double (allowed: finite numbers only)")
    return value


def _json_int(text: str):
    digits = text.lstrip("-")
    if len(digits) > 19 or not -MAX_INT <= int(text) <= MAX_INT:
        return _Refused(text, f"the integer {text[:12]}{'...' if len(text) > 12 else ''} ({len(digits)} digits) "
                              f"is outside the 64-bit range (allowed: -{MAX_INT:,} to {MAX_INT:,})")
    return int(text)


def _json_constant(name: str):
    return _Refused(name, f"{name} is not a finite number (allowed: finite numbers only)")


def _line_of(text: str, token: str) -> int | None:
    """The line of the first occurrence of a number literal (outside strings, roughly: not inside quotes)."""
    match = re.search(rf'(?<![\w."]){re.escape(token)}(?![\w."])', text)
    return text.count("\n", 0, match.start()) + 1 if match else None


class _Duplicate(Exception):
    def __init__(self, key):
        self.key = key


def _unique_pairs(pairs):
    out = {}
    for key, value in pairs:
        if key in out:
            raise _Duplicate(key)
        out[key] = value
    return out


def loads_json(text: str, source: str, *, expect=None, max_depth: int = MAX_DEPTH, limit: int | None = None,
               finite: bool = True, unique_keys: bool = True):
    """Parse JSON text within the limits (`source` names it in errors: a file or an option such as --params).
    finite=False lets NaN and infinities through, for a caller whose own validation refuses them naming the key.
    unique_keys: a key given twice in one object is an error (the standard parser keeps the last: a bundle's
    `metrics.json` could show one number to a reader and another to the judge)."""
    limit = max_bytes() if limit is None else limit
    if len(text) > limit:
        raise LoadError(source, f"{len(text):,} characters, more than the {limit:,} allowed "
                                f"(set {MAX_BYTES_ENV} to allow more)")
    try:   # the standard parser at C speed; only NaN and Infinity (rare) go through a hook
        value = json.loads(text, **({"parse_constant": _json_constant} if finite else {}),
                           **({"object_pairs_hook": _unique_pairs} if unique_keys else {}))
    except _Duplicate as exc:
        spots = [m.start() for m in re.finditer(re.escape(json.dumps(exc.key)) + r"\s*:", text)]
        line = text.count("\n", 0, spots[1]) + 1 if len(spots) > 1 else None
        raise LoadError(source, f"key {str(exc.key)[:80]!r} appears twice in one object; give it once", line) \
            from None
    except json.JSONDecodeError as exc:
        raise LoadError(source, f"not valid JSON: {exc.msg} (column {exc.colno})", exc.lineno) from None
    except RecursionError:
        raise LoadError(source, f"nested deeper than {max_depth} levels") from None
    except ValueError:   # an integer literal of more than 4,300 digits: parsed again, integers through a hook that
        # refuses them by their digits, so that the error names the key and line (only on this error path)
        value = json.loads(text, parse_int=_json_int, **({"parse_constant": _json_constant} if finite else {}))
    path, why, bad = _walk(value, max_depth, finite)
    if why:
        token = bad.token if isinstance(bad, _Refused) else None
        if isinstance(bad, float) and not isinstance(bad, bool) and bad - bad != 0:   # a literal that overflowed
            token = _overflowing_literal(text)
            if token:
                why = (f"{token} is not a finite number: it overflows a double (allowed: finite numbers only)")
        elif isinstance(bad, int) and not isinstance(bad, bool):
            token = str(bad)
        raise LoadError(source, f"{_path_text(path)}: {why}", _line_of(text, token) if token else None)
    return _check_type(value, expect, source)


_FLOAT_LITERAL = re.compile(r"-?\d+(?:\.\d+)?[eE][+-]?\d+")


def _overflowing_literal(text: str) -> str | None:
    """The first number literal of `text` that overflows a double (only looked for when one did)."""
    for match in _FLOAT_LITERAL.finditer(text):
        if math.isinf(float(match.group())):
            return match.group()
    return None


def load_json(path: str | Path, *, expect=None, max_depth: int = MAX_DEPTH, limit: int | None = None,
              finite: bool = True, name: str | None = None):
    """Read a JSON file within the limits; `expect` a type (or tuple) the top level must have; `name`: how errors
    name the file (default its path; e.g. its path inside a bundle, not the temporary folder it was unpacked to)."""
    try:
        text = read_text(path, limit)
    except LoadError as exc:
        raise LoadError(name or str(path), exc.problem) from None
    return loads_json(text, name or str(path), expect=expect, max_depth=max_depth, limit=limit, finite=finite)


# ---------------------------------------------------------------------------------------------------------- YAML

def _mark_line(exc) -> int | None:
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    return mark.line + 1 if mark is not None else None


def _check_events(text: str, source: str, max_depth: int) -> None:
    """One pass over the parser's events: no anchors or aliases, no nesting deeper than max_depth, one document."""
    loader = _LOADER(text)
    depth = documents = 0
    try:
        while loader.check_event():
            event = loader.get_event()
            line = event.start_mark.line + 1 if event.start_mark is not None else None
            if isinstance(event, yaml.AliasEvent):
                raise LoadError(source, f"YAML alias *{event.anchor} is not allowed (anchors and aliases can "
                                        "expand a small file into gigabytes; write the values out)", line)
            if getattr(event, "anchor", None):
                raise LoadError(source, f"YAML anchor &{event.anchor} is not allowed (write the values out)", line)
            if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
                depth += 1
                if depth > max_depth:
                    raise LoadError(source, f"nested deeper than {max_depth} levels", line)
            elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
                depth -= 1
            elif isinstance(event, yaml.DocumentStartEvent):
                documents += 1
                if documents > 1:
                    raise LoadError(source, "more than one YAML document (a second '---')", line)
    finally:
        loader.dispose()


def _node_line(node, path) -> int | None:
    """The line of the node at `path` (keys and list positions) in a composed document, or of its nearest parent."""
    line = node.start_mark.line + 1 if node is not None else None
    for part in path:
        if isinstance(node, yaml.MappingNode):
            match = [(k, v) for k, v in node.value if isinstance(k, yaml.ScalarNode) and k.value == str(part)]
            if not match:
                break
            key, node = match[-1]
            line = key.start_mark.line + 1
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
            node = node.value[part]
            line = node.start_mark.line + 1
        else:
            break
    return line


def _unique_keys(node, source: str) -> None:
    """LoadError naming the key and both lines if a mapping of the node tree has a key twice."""
    stack = [node] if node is not None else []
    while stack:
        current = stack.pop()
        if isinstance(current, yaml.MappingNode):
            seen = {}
            for key, value in current.value:
                if isinstance(key, yaml.ScalarNode):
                    ident = (key.tag, key.value)
                    if ident in seen:
                        raise LoadError(source, f"key {key.value[:80]!r} appears twice in one mapping (first on line "
                                                f"{seen[ident]}); give it once", key.start_mark.line + 1)
                    seen[ident] = key.start_mark.line + 1
                stack.append(value)
        elif isinstance(current, yaml.SequenceNode):
            stack.extend(current.value)


def compose_yaml(text: str, source: str, *, max_depth: int = MAX_DEPTH, limit: int | None = None,
                 finite: bool = True):
    """(data, node tree) of YAML text within the limits; the node tree gives every value's line
    (node.start_mark). Raises LoadError naming `source` and the line. finite=False: as in loads_json. A key given
    twice in one mapping is an error (PyYAML keeps the last silently)."""
    limit = max_yaml_bytes() if limit is None else limit
    if len(text) > limit:
        raise LoadError(source, f"{len(text):,} characters, more than the {limit:,} allowed "
                                f"(set {MAX_BYTES_ENV} to allow more)")
    try:
        _check_events(text, source, max_depth)
        loader = _LOADER(text)
        try:   # one parse: the node tree gives the lines, the same tree the data
            node = loader.get_single_node()
            _unique_keys(node, source)
            data = loader.construct_document(node) if node is not None else None
        finally:
            loader.dispose()
    except yaml.YAMLError as exc:
        detail = re.sub(r'\s*in "<unicode string>", line (\d+), column (\d+)', r" (line \1, column \2)", str(exc))
        detail = " ".join(detail.split())
        raise LoadError(source, f"not valid YAML: {detail}", _mark_line(exc)) from None
    except (ValueError, OverflowError) as exc:   # e.g. an integer literal of more than 4300 digits
        if isinstance(exc, LoadError):
            raise
        raise LoadError(source, f"a value cannot be read: {exc}") from None
    path, why, _ = _walk(data, max_depth, finite)
    if why:
        raise LoadError(source, f"{_path_text(path)}: {why}", _node_line(node, path))
    return data, node


def loads_yaml(text: str, source: str, *, expect=None, max_depth: int = MAX_DEPTH, limit: int | None = None,
               finite: bool = True):
    """Parse YAML text within the limits (`expect`: a type, or tuple, the top level must have; an empty document
    is None)."""
    data, _ = compose_yaml(text, source, max_depth=max_depth, limit=limit, finite=finite)
    return data if data is None else _check_type(data, expect, source)


def load_yaml(path: str | Path, *, expect=None, max_depth: int = MAX_DEPTH, limit: int | None = None,
              finite: bool = True):
    """Read a YAML file within the limits (an empty file is None)."""
    limit = max_yaml_bytes() if limit is None else limit
    return loads_yaml(read_text(path, limit), str(path), expect=expect, max_depth=max_depth, limit=limit,
                      finite=finite)
