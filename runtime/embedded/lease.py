"""The client side: acquire a lease on the embedded server, start it if nobody has.

Every Alfred process that uses an embedded server holds a lease file named after its
pid. Under an exclusive lock on the data folder, :func:`acquire` either reuses the
running server or starts a supervisor for a new one, and writes the lease *before*
letting go of the lock, so the supervisor never sees a moment without clients. The
supervisor notices dead pids by itself, so a process killed with SIGKILL lets go too.

The API is synchronous (file locks and process starts); from async code call it with
``asyncio.to_thread``.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType

from memory.errors import ConfigurationError, Unavailable
from runtime.embedded.probe import answers
from runtime.embedded.state import (
    COMPONENT,
    KINDS,
    PORT_SETTING,
    EmbeddedPaths,
    Kind,
    ServerState,
    log_tail,
    process_alive,
    read_failure,
    read_state,
    remove,
    write_lease,
)

POLL = 0.02
ORPHAN_WAIT = 10.0  # a server whose supervisor died gets this long to stop on SIGTERM
REPORT_SLACK = 3.0  # extra time for the supervisor to report its own start-up timeout
LOG_ROTATE_BYTES = 1_000_000
_PROJECT_ROOT = Path(__file__).resolve().parents[2]

# Leases this process holds, counted per (data folder, kind): one lease file per pid.
_held: dict[tuple[str, Kind], int] = {}
_held_pid = os.getpid()
_held_lock = threading.Lock()


class EmbeddedLease:
    """A claim on a running embedded server; the server stops after the last release."""

    def __init__(self, paths: EmbeddedPaths, state: ServerState) -> None:
        self.kind: Kind = paths.kind
        self.data_dir = paths.data_dir
        self.url = state.url
        self.port = state.port
        self.server_pid = state.server_pid
        self.supervisor_pid = state.supervisor_pid
        self._paths = paths
        self._released = False

    @property
    def released(self) -> bool:
        return self._released

    def release(self) -> None:
        """Let go of the server (idempotent). It stops once no process holds a lease."""
        if not self._released:
            self._released = True
            _unregister(self._paths)

    def __enter__(self) -> EmbeddedLease:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()

    def __repr__(self) -> str:
        state = "released" if self._released else "held"
        return f"EmbeddedLease({self.kind}, {self.url}, {state})"


def _key(paths: EmbeddedPaths) -> tuple[str, Kind]:
    return str(paths.data_dir), paths.kind


def _register(paths: EmbeddedPaths) -> None:
    global _held_pid
    with _held_lock:
        if _held_pid != os.getpid():  # a forked child inherits no leases
            _held.clear()
            _held_pid = os.getpid()
        write_lease(paths, os.getpid())
        _held[_key(paths)] = _held.get(_key(paths), 0) + 1


def _unregister(paths: EmbeddedPaths) -> None:
    with _held_lock:
        if _held_pid != os.getpid():
            return
        count = _held.get(_key(paths), 0) - 1
        if count > 0:
            _held[_key(paths)] = count
            return
        _held.pop(_key(paths), None)
        remove(paths.lease_file(os.getpid()))


@atexit.register
def _release_all_at_exit() -> None:
    """Fallback for leases nobody released: the supervisor would notice, just later."""
    with _held_lock:
        if _held_pid != os.getpid():
            return
        for data_dir, kind in list(_held):
            remove(EmbeddedPaths(Path(data_dir), kind).lease_file(os.getpid()))
        _held.clear()


def _not_writable(paths: EmbeddedPaths, exc: OSError) -> ConfigurationError:
    return ConfigurationError(
        f"{COMPONENT[paths.kind]}: data folder {paths.data_dir} is not writable "
        f"({exc.strerror or exc})",
        hint="set ALFRED_DATA_DIR to a folder Alfred can write to",
    )


@contextlib.contextmanager
def _folder_lock(paths: EmbeddedPaths, deadline: float) -> Iterator[None]:
    """The data folder's start/stop lock, waited for until ``deadline`` at most."""
    try:
        paths.leases.mkdir(parents=True, exist_ok=True)
        handle = open(paths.lock, "a")  # noqa: SIM115 - closed below, after the lock
    except OSError as exc:
        raise _not_writable(paths, exc) from None
    with handle:
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise Unavailable(
                        COMPONENT[paths.kind],
                        f"another process kept {paths.lock} locked for too long",
                        hint="retry; if it persists, stop the other Alfred processes",
                    ) from None
                time.sleep(0.05)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _running(paths: EmbeddedPaths, port: int, deadline: float) -> ServerState | None:
    """The state of a live server we may share, or ``None`` if a new one must start."""
    while True:
        state = read_state(paths)
        if state is None or not process_alive(state.supervisor_pid, state.supervisor_started):
            return None
        if state.ready and port and port != state.port:
            raise ConfigurationError(
                f"{COMPONENT[paths.kind]} for {paths.data_dir} already runs on port "
                f"{state.port}, not the requested port {port}",
                hint=f"set {PORT_SETTING[paths.kind]} to {state.port} or 0, "
                "or stop the other Alfred processes first",
            )
        if state.ready and answers(paths.kind, state.port):
            return state
        if time.monotonic() >= deadline:
            where = f"on port {state.port}" if state.ready else "while starting"
            raise Unavailable(
                COMPONENT[paths.kind],
                f"the server {where} does not answer (supervisor pid {state.supervisor_pid})",
                hint=f"stop process {state.supervisor_pid} and retry; see {paths.log}",
            )
        time.sleep(0.1)


def _clear_orphan(paths: EmbeddedPaths) -> None:
    """Wait out a server whose supervisor died, so the new one can open the data."""
    state = read_state(paths)
    pid = state.server_pid if state is not None else None
    if state is not None and pid is not None and process_alive(pid, state.server_started):
        if not sys.platform.startswith("linux"):  # on Linux PDEATHSIG has sent it already
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
        give_up = time.monotonic() + ORPHAN_WAIT
        while process_alive(pid, state.server_started):
            if time.monotonic() >= give_up:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
                time.sleep(0.2)
                break
            time.sleep(0.05)
    remove(paths.state)


def _rotate_log(paths: EmbeddedPaths) -> None:
    with contextlib.suppress(OSError):
        if paths.log.stat().st_size > LOG_ROTATE_BYTES:
            os.replace(paths.log, paths.log.with_name(paths.log.name + ".1"))


def _spawn_supervisor(paths: EmbeddedPaths, port: int, timeout: float) -> subprocess.Popen[bytes]:
    remove(paths.error)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(_PROJECT_ROOT), env.get("PYTHONPATH", "")) if p
    )
    argv = [
        sys.executable, "-m", "runtime.embedded.supervisor",
        "--kind", paths.kind,
        "--data-dir", str(paths.data_dir),
        "--port", str(port),
        "--startup-timeout", f"{max(timeout, 1.0):.1f}",
    ]  # fmt: skip
    try:
        with open(paths.log, "ab") as log:
            return subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=log,
                cwd=paths.data_dir,
                env=env,
                start_new_session=True,  # outlives us, and no terminal signals reach it
            )
    except OSError as exc:
        raise Unavailable(
            COMPONENT[paths.kind],
            f"cannot start the supervisor ({exc.strerror or exc})",
            hint=f"check that {sys.executable} runs and {paths.data_dir} is writable",
        ) from None


def _start(paths: EmbeddedPaths, port: int, deadline: float, timeout: float) -> ServerState:
    """Start a supervisor and wait until its server answers."""
    _rotate_log(paths)
    log_start = paths.log.stat().st_size if paths.log.exists() else 0
    proc = _spawn_supervisor(paths, port, deadline - time.monotonic())
    give_up = deadline + REPORT_SLACK
    while time.monotonic() < give_up:
        state = read_state(paths)
        if state is not None and state.supervisor_pid == proc.pid and state.ready:
            # Reap it whenever it exits, so it never lingers as our zombie.
            threading.Thread(target=proc.wait, name="embedded-reaper", daemon=True).start()
            return state
        if proc.poll() is not None:
            failure = read_failure(paths)
            if failure is not None:
                raise failure
            raise Unavailable(
                COMPONENT[paths.kind],
                f"supervisor exited with code {proc.returncode} during start-up"
                f" ({log_tail(paths.log, log_start) or 'no output'})",
                hint=f"see {paths.log}",
            )
        time.sleep(POLL)
    proc.terminate()  # it stops its server on SIGTERM
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=REPORT_SLACK * 5)
    raise Unavailable(
        COMPONENT[paths.kind],
        f"server did not start within {timeout:g}s"
        f" ({log_tail(paths.log, log_start) or 'no output'})",
        hint=f"raise EMBEDDED_START_TIMEOUT, or see {paths.log}",
    )


def acquire(
    kind: Kind, data_dir: str | os.PathLike[str], *, port: int = 0, timeout: float = 20.0
) -> EmbeddedLease:
    """Share the ``kind`` server for ``data_dir``, starting it if none runs.

    ``port=0`` picks a free port; a fixed port that is taken raises
    :class:`ConfigurationError`. Raises :class:`Unavailable` when the server cannot
    start within ``timeout`` seconds. Release the lease (or use ``with``) when done.
    """
    if kind not in KINDS:
        raise ConfigurationError(f"unknown embedded server kind {kind!r}, expected {KINDS}")
    if not 0 <= port <= 65535:
        raise ConfigurationError(
            f"{COMPONENT[kind]}: port {port} is not a valid port",
            hint=f"set {PORT_SETTING[kind]} to 1-65535, or 0 to pick a free one",
        )
    paths = EmbeddedPaths(Path(data_dir).expanduser().absolute(), kind)
    deadline = time.monotonic() + timeout
    with _folder_lock(paths, deadline):
        state = _running(paths, port, deadline)
        try:
            _register(paths)
        except OSError as exc:
            raise _not_writable(paths, exc) from None
        if state is None:
            try:
                _clear_orphan(paths)
                state = _start(paths, port, deadline, timeout)
            except BaseException:
                _unregister(paths)
                raise
    return EmbeddedLease(paths, state)


def _kill(pid: int | None, started: int | None) -> None:
    if pid is not None and process_alive(pid, started):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def stop_before_removal(data_dir: str | os.PathLike[str], *, timeout: float = 10.0) -> None:
    """Stop the embedded servers of a data folder that is about to be deleted.

    A command that made a throw-away folder calls this after releasing its leases and
    before removing the folder: otherwise the servers outlive it, stopping only after
    the supervisor's grace period, and try to save into a folder that no longer exists.
    Each supervisor gets ``SIGUSR1`` (stop now, nothing worth saving) while we hold the
    folder's lock, so no other process can take the server over meanwhile; whatever is
    still alive after ``timeout`` seconds is killed. Leases do not count: whoever holds
    one would lose the folder anyway.
    """
    folder = Path(data_dir).expanduser().absolute()
    for kind in KINDS:
        paths = EmbeddedPaths(folder, kind)
        if not paths.state.exists():
            continue
        deadline = time.monotonic() + timeout
        with _folder_lock(paths, deadline):
            state = read_state(paths)
            if state is None:
                continue
            sup, sup_started = state.supervisor_pid, state.supervisor_started
            if process_alive(sup, sup_started):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(sup, signal.SIGUSR1)
            while time.monotonic() < deadline and (
                process_alive(sup, sup_started)
                or process_alive(state.server_pid, state.server_started)
            ):
                time.sleep(POLL)
            _kill(state.server_pid, state.server_started)
            _kill(sup, sup_started)
            remove(paths.state)
