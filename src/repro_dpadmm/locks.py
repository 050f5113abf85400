"""Who owns what while several processes share a project: locks, temporary folders named by their owner, and
cleanup when a process is stopped.

Snakemake and a run by hand, or two `repro-dpadmm data build` calls, may work on the same files at once.

* `held(lock_file, what)`: an exclusive lock (fcntl.flock) for the duration of a block. The lock file records the
  holder (pid, host, start time, command, any address's user:password redacted), so that a second process waits
  for it saying whom it waits for, or (wait=False) refuses naming it. The lock is the kernel's: it ends with the process however the process ends, so a
  killed run never leaves a stale lock. Lock files stay in place (removing one would let a third process lock a new
  file while the second still waits on the old one); they are hidden files, which bundles leave out.
* `owned_dir(parent, prefix)`: a temporary folder whose name says which process made it (`<prefix><pid>@<host>.`),
  and `sweep(parent, prefix)`, which removes only those whose process is gone (a folder of another host, whose
  process cannot be checked, is left alone).
* `signals_raise()`: SIGTERM and SIGHUP raise SystemExit inside the block, as Ctrl-C raises KeyboardInterrupt, so
  `finally` and `with` blocks run and temporary folders are removed when a job is stopped.

flock needs a POSIX system (Linux, macOS; NFSv4 on Linux supports it). Where fcntl is missing the lock is skipped
with a warning on stderr: it protects against concurrent runs, it does not change any result.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import stat
import sys
import tempfile
import threading
import time
from contextlib import contextmanager
from pathlib import Path

from .safeload import printable, redact

try:
    import fcntl
except ImportError:  # not POSIX: see the module docstring
    fcntl = None

HOST = socket.gethostname() or "localhost"
# A folder whose name does not say its owner (made before owners were recorded) counts as abandoned after this long.
UNNAMED_STALE_S = 3600


class NotALock(ValueError):
    """A file at a lock's name that is not one of this package's locks (a user's file): never written over."""


def _is_lock_record(raw: bytes) -> bool:
    """Whether a lock file's content is empty or a record this module wrote (JSON naming a pid)."""
    if not raw.strip():
        return True
    try:
        info = json.loads(raw.decode("utf-8"))
    except ValueError:
        return False
    return isinstance(info, dict) and "pid" in info


def _special_kind(mode: int) -> str | None:
    """What a file that is not a regular file is, in words (None for a regular file)."""
    if stat.S_ISREG(mode):
        return None
    return ("a folder" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode)
            else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "a link" if stat.S_ISLNK(mode)
            else "a special file")


def _not_a_regular_file(lock_file: Path, what: str, kind: str) -> NotALock:
    return NotALock(f"{printable(str(lock_file))} is {kind}, not a file, and cannot serve as the lock of {what}; "
                    "move it away")


class Busy(RuntimeError):
    """Another process holds the lock (the message names it)."""


def _holder_text(raw: bytes) -> str:
    try:
        info = json.loads(raw.decode("utf-8", "replace") or "{}")
    except ValueError:
        info = {}
    if not isinstance(info, dict) or "pid" not in info:
        return "another process"
    # redacted again when shown: a record written before commands were redacted may still hold a password; and
    # printable: the record holds another run's command line, whose arguments (a file name) may hold ESC or bidi
    text = (f"process {info.get('pid')} on {info.get('host', '?')} (started {info.get('started', '?')}"
            + (f": {info['command']}" if info.get("command") else "") + ")")
    return printable(redact(text))


def holder(lock_file: str | Path) -> str:
    """Who holds (or last held) a lock file, in words."""
    try:
        return _holder_text(Path(lock_file).read_bytes()[:4096])
    except OSError:
        return "another process"


@contextmanager
def held(lock_file: str | Path, what: str, *, wait: bool = True, log=None):
    """Hold an exclusive lock on `lock_file` (created if needed) for the duration of the block. If another process
    holds it: wait for it (saying so on `log`, default stderr), or with wait=False raise Busy naming it."""
    lock_file = Path(lock_file)
    if fcntl is None:
        print(f"warning: no file locks on this system; {what} is not protected against a concurrent run",
              file=sys.stderr)
        yield
        return
    lock_file.parent.mkdir(parents=True, exist_ok=True)
    try:
        kind = _special_kind(lock_file.lstat().st_mode)
    except OSError:
        kind = None
    if kind:   # a FIFO, device or socket is never opened (opening or reading one may block or act on a device)
        raise _not_a_regular_file(lock_file, what, kind)
    try:   # never through a link: the lock is a file of its own folder; never blocking (a FIFO put there since)
        fd = os.open(lock_file, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0)
                     | getattr(os, "O_NONBLOCK", 0), 0o666)
    except OSError as exc:
        raise NotALock(f"{lock_file} cannot serve as the lock of {what} ({exc.strerror}): a link or a folder has "
                       "its name; move it away") from None
    try:
        kind = _special_kind(os.fstat(fd).st_mode)
        if kind:
            raise _not_a_regular_file(lock_file, what, kind)
        if os.fstat(fd).st_size > 4096 or not _is_lock_record(os.pread(fd, 4096, 0)):
            raise NotALock(f"{lock_file} holds a file that is not a lock of this package, and {what} would write "
                           "its lock there; move the file away or give another output folder")
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            other = _holder_text(os.pread(fd, 4096, 0))
            if not wait:
                raise Busy(f"{what} is already being run by {other} (lock {lock_file}); wait for it to finish or "
                           "stop it") from None
            (log or (lambda m: print(m, file=sys.stderr, flush=True)))(
                f"{what}: waiting for the run by {other} to finish (lock {lock_file})")
            fcntl.flock(fd, fcntl.LOCK_EX)
        me = {"pid": os.getpid(), "host": HOST, "started": time.strftime("%Y-%m-%d %H:%M:%S"),
              # an argument may be a mirror's address with its user:password (README: never written)
              "command": redact(" ".join(os.path.basename(a) if i == 0 else a for i, a in enumerate(sys.argv)))[:300]}
        os.ftruncate(fd, 0)
        os.pwrite(fd, (json.dumps(me) + "\n").encode(), 0)
        yield
    finally:
        os.close(fd)   # releases the lock


# ------------------------------------------------------------------------------------------------ owned folders

def owner_prefix(prefix: str) -> str:
    return f"{prefix}{os.getpid()}@{HOST}."


def owned_dir(parent: str | Path, prefix: str) -> Path:
    """A new temporary folder in `parent` whose name records this process (see `owner_alive`)."""
    Path(parent).mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(dir=parent, prefix=owner_prefix(prefix)))


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:   # exists, owned by someone else
        return True
    except OSError:
        return True
    return True


def owner_alive(path: Path, prefix: str, unnamed_stale: bool = True) -> bool:
    """Whether the process that made the owned folder `path` may still use it. A folder of another host counts as
    alive (its process cannot be checked); one whose name records no owner, as alive for UNNAMED_STALE_S, or for
    ever without `unnamed_stale` (in a folder others share, such as the system's temporary folder, a name without
    an owner may be another program's, never ours to remove)."""
    rest = path.name[len(prefix):]
    pid, at, tail = rest.partition("@")
    host = tail.rpartition(".")[0]
    if not (at and pid.isdigit() and host):
        if not unnamed_stale:
            return True
        try:
            return time.time() - path.lstat().st_mtime < UNNAMED_STALE_S
        except OSError:
            return False
    if host != HOST:
        return True
    return int(pid) == os.getpid() or _pid_alive(int(pid))


def sweep(parent: str | Path, prefix: str, unnamed_stale: bool = True) -> list[Path]:
    """Remove the folders (and files) `parent/<prefix>*` whose owner is gone; return what was removed. In a shared
    folder (the system's temporary folder) pass `unnamed_stale=False`: only names that record an owner are ours."""
    parent = Path(parent)
    removed = []
    for path in sorted(parent.glob(f"{prefix}*")) if parent.is_dir() else []:
        if owner_alive(path, prefix, unnamed_stale):
            continue
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)
        removed.append(path)
    return removed


# ---------------------------------------------------------------------------------------------------- signals

def _raise_exit(signum, frame):
    raise SystemExit(128 + signum)


@contextmanager
def signals_raise():
    """Within the block, SIGTERM and SIGHUP raise SystemExit (exit status 128 + signal), so that cleanup runs as it
    does for Ctrl-C. Only the main thread can set handlers; elsewhere the block runs unchanged."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    names = [s for s in ("SIGTERM", "SIGHUP") if hasattr(signal, s)]
    old = {name: signal.signal(getattr(signal, name), _raise_exit) for name in names}
    try:
        yield
    finally:
        for name, handler in old.items():
            signal.signal(getattr(signal, name), handler)
