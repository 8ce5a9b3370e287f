"""``alfred admin …``: operator jobs, queued on arq and followed from the terminal.

Every command queues an arq job (so ``arq``'s own tooling and any worker can run it
too), then waits for it with a progress bar on stderr and prints a summary on stdout
(``--json``: one JSON object). ``--no-wait`` only queues it and prints the job id;
``alfred admin wait ID`` follows it later and ``alfred admin status ID`` looks at it.
When no worker is running, the command runs its own job in-process (see
:mod:`jobs.admin_client`), so it works on a laptop with nothing else started.

Exit codes: 0 done; 1 the job failed, an unknown export/consolidation target, records
left after a purge, or a dependency down; 2 bad usage. ``purge-user`` of an unknown
id is "nothing to purge", exit 0: a purge is idempotent, and re-running one that
already finished (or never had anything to do) must succeed in scripts.

stdout carries the payload: the summary, or — for ``export-user`` without ``--out`` —
the export itself (its summary then goes to stderr).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table

from bot.cli import common
from jobs.admin.names import COMMANDS

if TYPE_CHECKING:  # the services load only when a command runs, not for `alfred --help`
    from jobs.admin_client import AdminClient, JobOutcome
    from memory.admin_ports import Progress as JobProgress
    from memory.job_ports import JobState
    from runtime.settings import Settings

admin_app = typer.Typer(
    name="admin",
    help=(
        "Operator jobs on the queue: consolidate, re-embed, purge or export a user, stats, "
        "reconcile mem0, retry set-aside formations."
    ),
    no_args_is_help=True,
)
err = Console(stderr=True, soft_wrap=True)
out = Console(soft_wrap=True, highlight=False)

_FUNCTION_COMMAND = {function: command for command, function in COMMANDS.items()}

NoWait = Annotated[bool, typer.Option("--no-wait", help="Only queue the job and print its id.")]
AsJson = Annotated[bool, typer.Option("--json", help="Print one JSON object.")]
GiveUp = Annotated[
    float | None,
    typer.Option("--timeout", help="Stop waiting after this many seconds (the job goes on)."),
]
OutFile = Annotated[
    Path | None, typer.Option("--out", help="Write the export here (default: stdout).")
]


# --- running a command ---------------------------------------------------------------


def _launch(command: str, args: list[Any], *, wait: bool, as_json: bool, **opts: Any) -> None:
    """Queue ``command`` and (unless ``--no-wait``) follow it to the end."""
    code = common.run(
        _queue_and_follow(common.settings(), command, args, wait=wait, as_json=as_json, **opts)
    )
    raise typer.Exit(code)


async def _client(settings: Settings) -> tuple[AdminClient, Any]:
    from jobs.admin_client import AdminClient
    from runtime.connections import open_redis
    from runtime.container import build_services

    redis = await open_redis(settings)
    return AdminClient(settings, redis, services=lambda: build_services(settings)), redis


async def _queue_and_follow(
    settings: Settings,
    command: str,
    args: list[Any],
    *,
    wait: bool,
    as_json: bool,
    give_up_after: float | None = None,
    out_file: Path | None = None,
) -> int:
    client, redis = await _client(settings)
    try:
        job_id = await client.enqueue(command, *args)
        if not wait:
            if as_json:
                _print_json({"job_id": job_id, "job": command, "queue": client.name})
            else:
                sys.stdout.write(job_id + "\n")
            return 0
        return await _follow(
            client, job_id, as_json=as_json, give_up_after=give_up_after, out_file=out_file
        )
    finally:
        await client.close()
        await redis.close()


async def _follow(
    client: AdminClient,
    job_id: str,
    *,
    as_json: bool,
    give_up_after: float | None,
    out_file: Path | None,
) -> int:
    """Wait with a progress bar on stderr, then print the job's summary."""
    with _bar() as bar:
        task = bar.add_task(job_id, total=None)

        def show(progress: JobProgress | None, state: JobState) -> None:
            if progress is None:
                bar.update(task, description=f"{job_id}: {state.value.replace('_', ' ')}")
                return
            bar.update(
                task,
                description=progress.phase or state.value,
                completed=progress.done,
                total=progress.total or None,
            )

        outcome = await client.wait(job_id, on_progress=show, give_up_after=give_up_after)
    code = _report(outcome, as_json=as_json, out_file=out_file)
    if outcome.function == COMMANDS["export-user"]:
        await client.forget(job_id)  # a person's memories do not stay in Redis
    return code


def _bar() -> Progress:
    return Progress(
        SpinnerColumn(),
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
        transient=True,
        disable=not err.is_terminal,  # a pipe or a log file gets the summary only
    )


# --- printing results ------------------------------------------------------------------


def _print_json(obj: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(obj, default=str) + "\n")


def _fail(message: str) -> None:
    err.print(f"alfred: {message}", markup=False, highlight=False)


def _report(outcome: JobOutcome, *, as_json: bool, out_file: Path | None) -> int:
    """Print what the job did; the exit code."""
    command = _FUNCTION_COMMAND.get(outcome.function, outcome.function)
    envelope: dict[str, Any] = {"job_id": outcome.job_id, "job": command}
    if not outcome.success:
        _fail(f"admin job {outcome.job_id} ({command}) failed: {outcome.error}")
        if as_json:
            _print_json({**envelope, "ok": False, "error": outcome.error})
        return 1
    result = outcome.result
    if command == "export-user":
        return _report_export(envelope, result, as_json=as_json, out_file=out_file)
    code, lines = _summary(command, result)
    if as_json:
        _print_json({**envelope, "ok": code == 0, "result": result})
        return code
    if command == "stats":
        _print_stats(result)
    for line in lines:
        if code == 0:
            out.print(line, markup=False)
        else:
            _fail(line)
    return code


def _summary(command: str, r: dict[str, Any]) -> tuple[int, list[str]]:
    """The exit code and the human lines for every job but stats' tables and export."""
    if command == "purge-user":
        if not r["found"]:
            return 0, [f"Nothing to purge: no user {r['user_id']} and nothing of theirs stored."]
        removed = ", ".join(f"{k} {v}" for k, v in sorted(r["removed"].items()) if v)
        lines = [f"Purged user {r['user_id']}: {removed or 'nothing left to remove'}."]
        if r["left"]:
            left = ", ".join(f"{k} {v}" for k, v in sorted(r["left"].items()))
            lines.append(f"Records arrived during the purge ({left}): run it again.")
            return 1, lines
        return 0, lines
    if command == "consolidate":
        target = r["target"]
        what = "everything" if target["kind"] == "all" else f"{target['kind']} {target['id']}"
        if not r["known"]:
            return 1, [f"Unknown {what}: nothing consolidated."]
        return 0, [
            f"Consolidated {r['consolidated']} of {r['buffers']} buffer(s) of {what} "
            f"({r['absorbed']} reflection(s) absorbed"
            + (f"; {r['skipped']} left buffered" if r["skipped"] else "")
            + ")."
        ]
    if command == "re-embed":
        line = (
            f"Re-embedded {r['re_embedded']} fact(s) with {r['model']} ({r['dims']} dims) "
            f"in {r['batches']} batch(es)."
        )
        if not r["complete"]:
            line += f" {r['left']} left: run it again to continue."
        return 0, [line]
    if command == "reconcile-mem0":
        if not r["enabled"]:
            return 0, [r["message"]]
        verb = "would" if r["dry_run"] else ""
        return 0, [
            f"mem0 ({r['index']}): {r['missing']} fact(s) missing, "
            f"{r['mirrored']} mirrored; {r['orphans']} orphaned cop(ies), "
            f"{r['orphans_deleted']} deleted; {r['stale_links']} stale link(s), "
            f"{r['relinked']} relinked"
            + (
                f"; {r['partitions_unlisted']} partition(s) could not be listed"
                if r["partitions_unlisted"]
                else ""
            )
            + (" (dry run: nothing changed)" if verb else "")
            + "."
        ]
    if command == "retry-formation":
        if not r["threads"]:
            return 0, ["Nothing set aside: every batch formed or is still being retried."]
        return 0, [
            f"Released {r['messages']} set-aside message(s) of {r['threads']} thread(s) "
            f"({', '.join(r['thread_ids'])}); their formation is queued."
        ]
    return 0, []


def _report_export(
    envelope: dict[str, Any], result: dict[str, Any], *, as_json: bool, out_file: Path | None
) -> int:
    if not result.get("found", True) and "format" not in result:
        _fail(f"unknown user {result['user_id']}: nothing to export")
        if as_json:
            _print_json({**envelope, "ok": False, "error": "unknown user"})
        return 1
    counts = {
        k: len(result.get(k, []))
        for k in ("facts", "reflections", "consolidated", "clarifications")
    }
    text = json.dumps(dict(result), ensure_ascii=False, indent=2)
    if out_file is None:
        sys.stdout.write(text + "\n")
    else:
        _write_private(out_file, text + "\n")
    summary = {
        **envelope,
        "ok": True,
        "user_id": result["user"]["id"],
        "counts": counts,
        "out": str(out_file) if out_file else None,
    }
    line = (
        f"Exported user {result['user']['id']}: "
        + ", ".join(f"{v} {k}" for k, v in counts.items())
        + (f" → {out_file}" if out_file else "")
    )
    if out_file is None:  # stdout holds the export: the summary goes to stderr
        err.print(json.dumps(summary) if as_json else line, markup=False, highlight=False)
    elif as_json:
        _print_json(summary)
    else:
        out.print(line, markup=False)
    return 0


def _write_private(path: Path, text: str) -> None:
    """Write atomically, readable by the owner only: an export is personal data."""
    path = path.expanduser()
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _print_stats(r: dict[str, Any]) -> None:
    table = Table(title="Collections")
    table.add_column("collection")
    table.add_column("documents", justify="right")
    for name, n in r["collections"].items():
        table.add_row(name, str(n))
    out.print(table)
    kinds = Table(title="By partition kind")
    kinds.add_column("collection")
    for kind in ("circle", "member", "dm"):
        kinds.add_column(kind, justify="right")
    for name, row in r["by_partition_kind"].items():
        kinds.add_row(name, *(str(row[k]) for k in ("circle", "member", "dm")))
    out.print(kinds)
    if r["by_circle"]:
        circles = Table(title="By circle")
        circles.add_column("circle")
        circles.add_column("members", justify="right")
        names = [k for k in next(iter(r["by_circle"].values())) if k not in ("members", "archived")]
        for name in names:
            circles.add_column(name, justify="right")
        for cid, row in r["by_circle"].items():
            circles.add_row(cid, str(row["members"]), *(str(row[n]) for n in names))
        out.print(circles)
    parts = r.get("by_partition")
    if parts and parts["top"]:
        table = Table(title=f"Largest partitions ({parts['shown']} of {parts['total']})")
        for column in ("visibility", "circle", "owner"):
            table.add_column(column)
        names = [
            k
            for k in parts["top"][0]
            if k not in ("visibility", "circle_id", "owner_user_id", "records")
        ]
        for name in [*names, "records"]:
            table.add_column(name, justify="right")
        for row in parts["top"]:
            table.add_row(
                row["visibility"],
                row["circle_id"] or "-",
                row["owner_user_id"] or "-",
                *(str(row[n]) for n in [*names, "records"]),
            )
        out.print(table)
    f, q = r["facts"], r["queue"]
    out.print(
        f"facts: {f['current']} current, {f['history']} history, {f['with_mem0_copy']} in mem0 "
        f"(mem0 {r['mem0']}), {f['stale_embeddings']} to re-embed for {f['embedding_model']}"
    )
    aside = r.get("formation_set_aside")
    if aside is not None:
        out.print(
            f"formation: {aside['messages']} message(s) of {aside['threads']} thread(s) set "
            "aside after failing 3 times (alfred admin retry-formation)"
        )
    alive = {True: "a worker is alive", False: "no worker is running", None: "unknown"}
    out.print(f"queue {q['name']}: {q['depth']} job(s) waiting; {alive[q['worker_alive']]}")
    for name, run in r["job_runs"].items():
        out.print(
            f"last {name}: {run.get('last_status')} (started {run.get('last_started_at')}, "
            f"finished {run.get('last_finished_at')})"
        )


# --- the commands ------------------------------------------------------------------------


@admin_app.command()
def consolidate(
    thread: Annotated[str | None, typer.Option("--thread", help="A thread (chat) id.")] = None,
    user: Annotated[str | None, typer.Option("--user", help="A Telegram user id.")] = None,
    circle: Annotated[str | None, typer.Option("--circle", help="A circle (group) id.")] = None,
    everything: Annotated[bool, typer.Option("--all", help="Every buffer.")] = False,
    no_wait: NoWait = False,
    as_json: AsJson = False,
    timeout: GiveUp = None,
) -> None:
    """Force-consolidate the buffered reflections of a thread, a user, a circle or all."""
    chosen = [(k, v) for k, v in (("thread", thread), ("user", user), ("circle", circle)) if v]
    if len(chosen) + int(everything) != 1:
        _fail("choose exactly one of --thread, --user, --circle or --all")
        raise typer.Exit(2)
    kind, target_id = chosen[0] if chosen else ("all", None)
    _launch(
        "consolidate", [kind, target_id], wait=not no_wait, as_json=as_json, give_up_after=timeout
    )


@admin_app.command("re-embed")
def re_embed(
    batch_size: Annotated[int, typer.Option("--batch-size", min=1, help="Facts per batch.")] = 64,
    max_batches: Annotated[
        int | None, typer.Option("--max-batches", min=1, help="Stop after this many batches.")
    ] = None,
    no_wait: NoWait = False,
    as_json: AsJson = False,
    timeout: GiveUp = None,
) -> None:
    """Re-embed facts whose vector came from another model (resumable)."""
    _launch(
        "re-embed",
        [batch_size, max_batches],
        wait=not no_wait,
        as_json=as_json,
        give_up_after=timeout,
    )


@admin_app.command("purge-user")
def purge_user(
    telegram_id: Annotated[int, typer.Argument(help="The user's Telegram id.")],
    no_wait: NoWait = False,
    as_json: AsJson = False,
    timeout: GiveUp = None,
) -> None:
    """Erase one user entirely (memories, messages, mem0 copies, calendar, directory)."""
    _launch(
        "purge-user", [str(telegram_id)], wait=not no_wait, as_json=as_json, give_up_after=timeout
    )


@admin_app.command("export-user")
def export_user(
    telegram_id: Annotated[int, typer.Argument(help="The user's Telegram id.")],
    out_file: OutFile = None,
    no_wait: NoWait = False,
    as_json: AsJson = False,
    timeout: GiveUp = None,
) -> None:
    """Export what one user may see of Alfred's memories, as versioned JSON."""
    _launch(
        "export-user",
        [str(telegram_id)],
        wait=not no_wait,
        as_json=as_json,
        give_up_after=timeout,
        out_file=out_file,
    )


@admin_app.command()
def stats(
    top: Annotated[
        int, typer.Option("--top", min=0, help="How many of the largest partitions to list.")
    ] = 20,
    no_wait: NoWait = False,
    as_json: AsJson = False,
    timeout: GiveUp = None,
) -> None:
    """Counts per collection, circle and partition (ids only); the queue; last job runs."""
    _launch("stats", [top], wait=not no_wait, as_json=as_json, give_up_after=timeout)


@admin_app.command("reconcile-mem0")
def reconcile_mem0(
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Count, change nothing.")] = False,
    no_wait: NoWait = False,
    as_json: AsJson = False,
    timeout: GiveUp = None,
) -> None:
    """Mirror facts missing from mem0 and delete orphaned mem0 copies."""
    _launch("reconcile-mem0", [dry_run], wait=not no_wait, as_json=as_json, give_up_after=timeout)


@admin_app.command("retry-formation")
def retry_formation(
    thread: Annotated[
        str | None, typer.Option("--thread", help="Only this thread (chat) id.")
    ] = None,
    no_wait: NoWait = False,
    as_json: AsJson = False,
    timeout: GiveUp = None,
) -> None:
    """Form again the batches set aside after 3 failed formations (one thread, or all)."""
    _launch("retry-formation", [thread], wait=not no_wait, as_json=as_json, give_up_after=timeout)


@admin_app.command()
def wait(
    job_id: Annotated[str, typer.Argument(help="An id printed by --no-wait.")],
    out_file: OutFile = None,
    as_json: AsJson = False,
    timeout: GiveUp = None,
) -> None:
    """Follow a queued admin job to its end (running it here if no worker does)."""

    async def follow(settings: Settings) -> int:
        client, redis = await _client(settings)
        try:
            return await _follow(
                client, job_id, as_json=as_json, give_up_after=timeout, out_file=out_file
            )
        finally:
            await client.close()
            await redis.close()

    raise typer.Exit(common.run(follow(common.settings())))


@admin_app.command()
def status(
    job_id: Annotated[str, typer.Argument(help="An admin job id.")],
    as_json: AsJson = False,
) -> None:
    """Where an admin job is (queued, running, complete) and its progress; never runs it."""

    async def look(settings: Settings) -> dict[str, Any]:
        client, redis = await _client(settings)
        try:
            state = await client.state(job_id)
            progress = await client.progress(job_id)
            return {
                "job_id": job_id,
                "state": state.value,
                "progress": progress.as_dict() if progress else None,
            }
        finally:
            await client.close()
            await redis.close()

    found = common.run(look(common.settings()))
    if as_json:
        _print_json(found)
    else:
        p = found["progress"]
        detail = f" — {p['phase']} {p['done']}/{p['total'] or '?'}" if p else ""
        out.print(f"{job_id}: {found['state'].replace('_', ' ')}{detail}", markup=False)
    raise typer.Exit(1 if found["state"] == "not_found" else 0)
