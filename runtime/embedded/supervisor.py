"""The supervisor: one small process that owns an embedded server for its lifetime.

Run as ``python -m runtime.embedded.supervisor --kind mongo|redis --data-dir DIR``.
Alfred's processes come and go (the bot, the worker, one-off commands); the server must
outlive each of them but not all of them. The supervisor starts the server as its child,
publishes where it listens in ``DIR/<kind>.json``, and stops it once no live process has
held a lease in ``DIR/<kind>.leases/`` for ``--grace`` seconds. If the supervisor itself
is killed, the kernel stops the server too (``PR_SET_PDEATHSIG`` on Linux), so a server is
never left running without anyone to stop it.

A data folder may also vanish: a command that made a throw-away folder removes it after
asking us to stop (``SIGUSR1``: stop now, nothing worth saving), and someone may delete a
data folder right after a run. Either way there is nothing left to save, so the server is
killed rather than asked to save into a folder that is gone (Valkey refuses to exit when
it cannot save), and the supervisor exits cleanly instead of failing on the missing files.

A server that dies on its own (``kill -9``, a crash, the OOM killer) while clients hold
leases is started again at once, on the same port and the same data folder, so the bot
and the worker reconnect by themselves instead of waiting for someone to restart them.
A server that keeps dying (``RESTART_LIMIT`` times within ``RESTART_WINDOW`` seconds) is
not restarted again: the supervisor exits and the next client to ask starts a new one.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import fcntl
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType
from typing import IO, cast

from memory.errors import AlfredError, ConfigurationError, Unavailable
from runtime.embedded.probe import answers, pick_free_port, port_problem
from runtime.embedded.servers import find_program, server_command, url_for
from runtime.embedded.state import (
    COMPONENT,
    KINDS,
    PORT_SETTING,
    EmbeddedPaths,
    Kind,
    ServerState,
    live_leases,
    log_tail,
    process_alive,
    process_start_time,
    read_state,
    remove,
    write_failure,
    write_state,
)

TICK = 0.1  # how often the child and the stop flag are checked
LEASE_SCAN = 0.5  # how often dead clients' leases are pruned
STOP_TIMEOUT = 15.0  # SIGTERM, then SIGKILL: WiredTiger needs a moment to checkpoint
AUTO_PORT_ATTEMPTS = 3  # another program may grab a free port before the server binds it
RESTART_LIMIT = 5  # restarts of a dead server within RESTART_WINDOW before giving up
RESTART_WINDOW = 60.0
RESTART_DELAYS = (0.0, 0.5, 1.0, 2.0, 4.0)  # before each restart: a crash loop backs off
_PR_SET_PDEATHSIG = 1

EXIT_OK, EXIT_CONFIG, EXIT_UNAVAILABLE, EXIT_SERVER_DIED = 0, 2, 3, 4


class _StopRequested(Exception):
    """SIGTERM or SIGINT arrived while the server was still starting."""


def _die_with_parent() -> Callable[[], None] | None:
    """A ``preexec_fn`` that makes the kernel SIGTERM the server when we die."""
    if not sys.platform.startswith("linux"):
        return None
    libc = ctypes.CDLL(None, use_errno=True)  # loaded before fork, not in the child
    parent = os.getpid()

    def preexec() -> None:
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
        if os.getppid() != parent:  # we died before prctl took effect
            os.kill(os.getpid(), signal.SIGKILL)

    return preexec


class Supervisor:
    """Starts, watches and stops one server; see the module docstring."""

    def __init__(
        self,
        paths: EmbeddedPaths,
        *,
        port: int,
        grace: float,
        startup_timeout: float,
        program: Path | None = None,
    ) -> None:
        self.paths = paths
        self.kind: Kind = paths.kind
        self.component = COMPONENT[self.kind]
        self.requested_port = port
        self.grace = grace
        self.startup_timeout = startup_timeout
        self.program = program
        self.proc: subprocess.Popen[bytes] | None = None
        self.stop_requested = False
        self.discard_requested = False  # SIGUSR1: the folder is about to be deleted
        self._folder_id = _identity(paths.data_dir)
        self._log_offset = 0  # where this run's server output starts in the log
        self.log: IO[str] = open(paths.log, "a", encoding="utf-8", buffering=1)  # noqa: SIM115

    def note(self, message: str) -> None:
        stamp = time.strftime("%Y-%m-%d %H:%M:%S")
        self.log.write(f"{stamp} alfred-supervisor[{os.getpid()}] {self.kind}: {message}\n")

    def _on_signal(self, signum: int, _frame: FrameType | None) -> None:
        self.stop_requested = True
        if signum == signal.SIGUSR1:
            self.discard_requested = True

    def folder_gone(self) -> bool:
        """Whether the data folder was deleted (or replaced by another) under us."""
        return _identity(self.paths.data_dir) != self._folder_id

    # -- start ---------------------------------------------------------------------

    def _spawn(self, port: int) -> subprocess.Popen[bytes]:
        program = self.program or find_program(self.kind)
        try:
            argv = server_command(self.kind, self.paths, port, program)
        except OSError as exc:
            raise ConfigurationError(
                f"{self.component}: cannot write to {self.paths.server_dir} "
                f"({exc.strerror or exc})",
                hint="set ALFRED_DATA_DIR to a folder Alfred can write to",
            ) from None
        try:
            return subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=self.log,
                stderr=self.log,
                cwd=self.paths.server_dir,
                process_group=0,  # terminal signals go to us; we stop the server in order
                preexec_fn=_die_with_parent(),  # safe: the supervisor has one thread
            )
        except OSError as exc:
            raise Unavailable(
                self.component,
                f"cannot run the server program {program} ({exc.strerror or exc})",
                hint="reinstall Alfred with its dependencies (pip install -e .)",
            ) from None

    def _wait_ready(self, proc: subprocess.Popen[bytes], port: int, deadline: float) -> bool:
        """True once the server answers; False if it exited. Raises on timeout."""
        while True:
            if self.stop_requested:
                raise _StopRequested
            if proc.poll() is not None:
                return False
            if answers(self.kind, port, timeout=0.5):
                return True
            if time.monotonic() >= deadline:
                self._stop_server("it did not answer in time")
                raise Unavailable(
                    self.component,
                    f"server did not answer on port {port} within {self.startup_timeout:.0f}s"
                    f" ({log_tail(self.paths.log, self._log_offset) or 'no output'})",
                    hint=f"raise EMBEDDED_START_TIMEOUT, or see {self.paths.log}",
                )
            time.sleep(0.02)

    def _port_in_use(self, port: int, problem: str) -> ConfigurationError:
        return ConfigurationError(
            f"{self.component}: port {port} {problem}",
            hint=f"set {PORT_SETTING[self.kind]} to another port, or to 0 to pick a free one",
        )

    def start(self) -> int:
        """Start the server; returns its port. Raises ``AlfredError`` with the reason."""
        deadline = time.monotonic() + self.startup_timeout
        attempts = 1 if self.requested_port else AUTO_PORT_ATTEMPTS
        for _ in range(attempts):
            port = self.requested_port or pick_free_port()
            problem = port_problem(port)
            if problem is not None:
                if self.requested_port:
                    raise self._port_in_use(port, problem)
                continue
            self._log_offset = self.paths.log.stat().st_size
            self.proc = self._spawn(port)
            if self._wait_ready(self.proc, port, deadline):
                return port
            tail = log_tail(self.paths.log, self._log_offset)
            if "already in use" in tail and not self.requested_port:
                continue
            if "already in use" in tail:
                raise self._port_in_use(port, "is already in use by another program")
            if "already being managed by another process" in tail:
                raise ConfigurationError(
                    f"{self.component}: the data folder {self.paths.server_dir} is in use by "
                    "another server process",
                    hint="stop that process, or set ALFRED_DATA_DIR to another folder",
                )
            raise Unavailable(
                self.component,
                f"server exited with code {self.proc.returncode} during start-up"
                f" ({tail or 'no output'})",
                hint=f"see {self.paths.log}",
            )
        raise Unavailable(
            self.component,
            f"no free port found after {attempts} attempts",
            hint=f"set {PORT_SETTING[self.kind]} to a free port",
        )

    # -- stop ----------------------------------------------------------------------

    def _stop_server(self, why: str, *, discard: bool = False) -> None:
        """SIGTERM (the server saves and exits), or with ``discard`` SIGKILL: its data
        folder is gone or about to be, and a save into it could only fail."""
        proc = self.proc
        if proc is None or proc.poll() is not None:
            return
        self.note(f"stopping the server (pid {proc.pid}): {why}")
        if discard:
            proc.kill()
            proc.wait()
            return
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.note(f"server ignored SIGTERM for {STOP_TIMEOUT:.0f}s; killing it")
            proc.kill()
            proc.wait()

    @contextlib.contextmanager
    def _folder_lock(self, wait: float) -> Iterator[bool]:
        """The clients' lock, so nobody reuses the server while it is being stopped.

        Yields False when it cannot be had in time, or at all (the folder was deleted).
        """
        try:
            handle = open(self.paths.lock, "a")  # noqa: SIM115 - closed by the with below
        except OSError:
            yield False
            return
        with handle:
            deadline = time.monotonic() + wait
            while True:
                try:
                    fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        yield False
                        return
                    time.sleep(0.05)
                    continue
                try:
                    yield True
                finally:
                    fcntl.flock(handle, fcntl.LOCK_UN)
                return

    def _stop_if_idle(self) -> bool:
        """Stop the server unless a client is acquiring it right now."""
        with self._folder_lock(wait=0) as locked:
            if not locked or live_leases(self.paths):
                return False
            remove(self.paths.state)
            self._stop_server(f"no client for {self.grace:g}s")
            return True

    def shutdown(self, why: str) -> None:
        with self._folder_lock(wait=2.0):  # best effort: a signal must not wait long
            remove(self.paths.state)
            self._stop_server(why)

    def discard(self, why: str) -> None:
        """Stop at once, without saving and without the lock: the folder is going away
        (the client that asked holds the lock while it waits for us)."""
        with contextlib.suppress(OSError):
            remove(self.paths.state)
        self._stop_server(why, discard=True)

    def _publish(self, port: int = 0) -> None:
        """Write the state file: "starting" until the server answers, then its URL."""
        me, server = os.getpid(), self.proc.pid if self.proc and port else None
        state = ServerState(
            kind=self.kind,
            supervisor_pid=me,
            supervisor_started=process_start_time(me),
            server_pid=server,
            server_started=process_start_time(server) if server else None,
            port=port,
            url=url_for(self.kind, port) if port else "",
            ready=bool(port),
        )
        write_state(self.paths, state)

    # -- run -----------------------------------------------------------------------

    def monitor(self, proc: subprocess.Popen[bytes], port: int) -> int:
        """Watch the server and the leases until one of them says to stop; a server that
        dies on its own while clients need it is restarted (see the module docstring)."""
        restarts: list[float] = []
        while True:
            outcome = self._watch(proc)
            if outcome is not None:
                return outcome
            code = proc.returncode
            why = log_tail(self.paths.log, self._log_offset, lines=3) or "no output"
            now = time.monotonic()
            restarts = [t for t in restarts if now - t < RESTART_WINDOW]
            if not live_leases(self.paths):
                with contextlib.suppress(OSError):
                    remove(self.paths.state)
                self.note(f"the server exited on its own with code {code}: {why}; no client")
                return EXIT_SERVER_DIED
            if len(restarts) >= RESTART_LIMIT:
                with contextlib.suppress(OSError):
                    remove(self.paths.state)
                self.note(
                    f"the server exited on its own with code {code}: {why}; it died "
                    f"{len(restarts) + 1} times within {RESTART_WINDOW:g}s, not restarting"
                )
                return EXIT_SERVER_DIED
            self.note(
                f"the server exited on its own with code {code}: {why}; restarting it on "
                f"port {port} ({len(restarts) + 1}/{RESTART_LIMIT})"
            )
            restarts.append(now)
            restarted = self._restart(port, RESTART_DELAYS[len(restarts) - 1])
            if isinstance(restarted, int):
                return restarted
            proc = restarted

    def _watch(self, proc: subprocess.Popen[bytes]) -> int | None:
        """Until a reason to stop (its exit code) or the server's own exit (None)."""
        last_client = time.monotonic()
        next_scan = 0.0
        while True:
            if self.discard_requested:
                self.discard("its data folder is about to be deleted")
                return EXIT_OK
            if self.stop_requested:
                self.shutdown("asked to stop by a signal")
                return EXIT_OK
            if proc.poll() is not None:
                return None
            now = time.monotonic()
            if now >= next_scan:
                next_scan = now + LEASE_SCAN
                if self.folder_gone():
                    self.discard(f"its data folder {self.paths.data_dir} was deleted")
                    return EXIT_OK
                if live_leases(self.paths):
                    last_client = now
                elif now - last_client >= self.grace:
                    if self._stop_if_idle():
                        self.note("stopped: the last client let go")
                        return EXIT_OK
                    last_client = now
            time.sleep(TICK)

    def _restart(self, port: int, delay: float) -> subprocess.Popen[bytes] | int:
        """Start the server again on ``port``: the new process, or the exit code when it
        cannot be (asked to stop meanwhile, the folder gone, or it would not start).

        The state file says "starting" meanwhile, so a client that asks now waits for
        the new server instead of starting a second one on the same folder."""
        self._publish()
        deadline = time.monotonic() + delay
        while time.monotonic() < deadline and not self.stop_requested:
            time.sleep(TICK)
        if self.folder_gone():
            remove(self.paths.state)
            self.note("not restarting: the data folder is gone")
            return EXIT_OK
        try:
            if self.stop_requested:
                raise _StopRequested
            self._log_offset = self.paths.log.stat().st_size
            self.proc = self._spawn(port)
            ready = self._wait_ready(self.proc, port, time.monotonic() + self.startup_timeout)
        except _StopRequested:
            self._stop_server("asked to stop during a restart", discard=self.discard_requested)
            remove(self.paths.state)
            return EXIT_OK
        except (AlfredError, OSError) as exc:
            self._stop_server("the restart failed")
            remove(self.paths.state)
            self.note(f"restart failed: {exc}")
            return EXIT_SERVER_DIED
        if not ready:
            # It died again at once: the next round of monitor() counts it and decides.
            return self.proc
        self._publish(port)
        self.note(f"server restarted: pid {self.proc.pid} listens on port {port}")
        return self.proc

    def run(self) -> int:
        signal.signal(signal.SIGTERM, self._on_signal)
        signal.signal(signal.SIGINT, self._on_signal)
        signal.signal(signal.SIGUSR1, self._on_signal)
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        remove(self.paths.error)
        other = read_state(self.paths)
        if other is not None and process_alive(other.supervisor_pid, other.supervisor_started):
            # Two servers on one data folder would corrupt it (Valkey has no lock file).
            self.note(f"not starting: supervisor pid {other.supervisor_pid} already runs here")
            write_failure(
                self.paths,
                ConfigurationError(
                    f"{self.component}: {self.paths.data_dir} already has a supervisor "
                    f"(pid {other.supervisor_pid})",
                    hint="use that server, or stop it first",
                ),
            )
            return EXIT_CONFIG
        self._publish()
        try:
            port = self.start()
        except _StopRequested:
            # The client that started us holds the lock while it waits: do not take it.
            self._stop_server("asked to stop during start-up", discard=self.discard_requested)
            remove(self.paths.state)
            write_failure(self.paths, Unavailable(self.component, "stopped during start-up"))
            return EXIT_OK
        except AlfredError as exc:
            self._stop_server("start-up failed")
            remove(self.paths.state)
            write_failure(self.paths, exc)
            self.note(f"start-up failed: {exc.one_line()}")
            return EXIT_CONFIG if isinstance(exc, ConfigurationError) else EXIT_UNAVAILABLE
        proc = self.proc
        if proc is None:  # start() returns a port only after spawning the server
            raise Unavailable(self.component, "the server was not started")
        self._publish(port)
        self.note(f"server pid {proc.pid} listens on port {port}")
        return self.monitor(proc, port)

    def stop_on_crash(self) -> None:
        """Our own failure must not orphan the server: stop it before we die. A folder
        that is gone gets no save (see the module docstring)."""
        with contextlib.suppress(Exception):
            self._stop_server("the supervisor failed", discard=self.folder_gone())


def _identity(folder: Path) -> tuple[int, int] | None:
    """The folder's device and inode, or None once it is gone."""
    try:
        info = folder.stat()
    except OSError:
        return None
    return info.st_dev, info.st_ino


def _parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m runtime.embedded.supervisor", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--kind", choices=KINDS, required=True)
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--grace", type=float, default=1.0, help="seconds without clients")
    parser.add_argument("--startup-timeout", type=float, default=30.0)
    parser.add_argument("--server-program", type=Path, help=argparse.SUPPRESS)  # for tests
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = _parse(argv)
    paths = EmbeddedPaths(args.data_dir.expanduser().absolute(), cast(Kind, args.kind))
    try:
        paths.leases.mkdir(parents=True, exist_ok=True)
        supervisor = Supervisor(
            paths,
            port=args.port,
            grace=args.grace,
            startup_timeout=args.startup_timeout,
            program=args.server_program,
        )
    except OSError as exc:
        print(
            f"{COMPONENT[paths.kind]}: data folder {paths.data_dir} is not writable "
            f"({exc.strerror or exc}) (set ALFRED_DATA_DIR to a writable folder)",
            file=sys.stderr,
        )
        return EXIT_CONFIG
    try:
        return supervisor.run()
    except BaseException:
        supervisor.stop_on_crash()
        raise


if __name__ == "__main__":
    sys.exit(main())
