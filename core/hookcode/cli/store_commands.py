"""``hookcode store check`` and ``hookcode store migrate``: is the store reachable, and copying
one store into another (the SQLite file into a team's PostgreSQL database).

A migration copies through the :class:`hookcode.store.Store` methods that move data
(``approval_records``/``import_approval``, ``session_ids``/``export_session``/
``import_session``), never SQL rows of one database: the project approvals first, then every
session, parents before children, then the session approvals (they name their sessions). Each
session is one transaction on the target, so a migration interrupted at any point leaves whole
sessions there; running it again skips the sessions the target already holds as the source does
(the same record and counts) and copies the rest. It ends by comparing the counts of both.
Session leases are not copied (a running session keeps running where it runs).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import typer

from hookcode.cli.state import fail, print_json
from hookcode.errors import HookcodeError

if TYPE_CHECKING:
    from hookcode.cli.state import CliState
    from hookcode.store import Store

__all__ = ["migrate", "register", "verify"]

#: sessions between two progress lines
PROGRESS_EVERY = 100


def register(app: typer.Typer, state: CliState) -> None:
    store_app = typer.Typer(
        help="Check the store, and copy it into another (a team's shared database).",
        no_args_is_help=True,
    )
    app.add_typer(store_app, name="store")

    def runtime() -> Any:
        try:
            return state.runtime(interactive=False)
        except HookcodeError as exc:
            raise fail(str(exc)) from None

    def open_store(rt: Any, url: str | None) -> Store:
        try:
            return rt.open_store(url)
        except HookcodeError as exc:
            raise fail(f"cannot open the store: {exc}") from None

    @store_app.command("check")
    def store_check(as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
        """Show where the store is (its password masked), its schema version and how much it
        holds, reaching it to find out.

        Exit codes: 0 reachable; 1 the store cannot be opened or read (one line saying why).
        """
        rt = runtime()
        store = open_store(rt, rt.store_url)
        try:
            report = {"location": store.location, "version": store.version}
            report["counts"] = store.counts()
        except HookcodeError as exc:
            raise fail(f"cannot read the store {store.location}: {exc}") from None
        finally:
            store.close()
        if as_json:
            print_json({**report, "ok": True})
            return
        lines = [
            f"store        {report['location']}",
            f"schema       version {report['version']}",
            "connection   ok",
        ]
        lines += [f"{key:<12} {value}" for key, value in report["counts"].items()]
        typer.echo("\n".join(lines))

    @store_app.command("migrate")
    def store_migrate(
        to: str = typer.Option(
            ...,
            "--to",
            metavar="URL",
            help="The store to copy into (postgresql://..., sqlite:///...).",
        ),
        source_url: str = typer.Option(
            None,
            "--from",
            metavar="URL",
            help="The store to copy from; default: the configured store.",
        ),
    ) -> None:
        """Copy every session and remembered approval into another store. Safe to run again:
        what the target already holds as the source does is skipped, and an interrupted copy
        is completed. Ends by comparing the counts of both stores.

        Exit codes: 0 copied and verified; 1 a store cannot be opened or written, or the
        counts differ (each difference named).
        """
        rt = runtime()
        source = open_store(rt, source_url if source_url is not None else rt.store_url)
        try:
            target = open_store(rt, to)
            try:
                if source.location == target.location:
                    raise fail(f"the source and the target are the same store ({target.location})")
                typer.echo(f"copying {source.location} -> {target.location}")
                try:
                    before = target.counts()
                    migrate(source, target, typer.echo)
                    problems = verify(source, target, typer.echo, before=before)
                except HookcodeError as exc:
                    raise fail(f"{exc} (run the same command again to resume)") from None
            finally:
                target.close()
        finally:
            source.close()
        if problems:
            raise fail("the stores differ after the copy: " + "; ".join(problems))
        typer.echo("verified: the target holds everything the source does")


def migrate(source: Store, target: Store, say: Any) -> dict[str, int]:
    """Copy ``source`` into ``target`` (see the module's docstring), calling ``say`` with a
    progress line now and then; how many sessions and approvals were copied and skipped."""
    done = {"approvals": 0, "sessions": 0, "sessions skipped": 0}
    approvals = source.approval_records()
    for record in approvals:
        if record.session_id is None:
            target.import_approval(record)
            done["approvals"] += 1
    ids = source.session_ids()
    say(f"approvals: {done['approvals']} of the projects copied; sessions: {len(ids)} to copy")
    for number, id in enumerate(ids, 1):
        data = source.export_session(id)
        if data is None:  # deleted since it was listed
            continue
        there = target.export_session(id)
        if there is not None and there.session == data.session and there.counts() == data.counts():
            done["sessions skipped"] += 1
        else:
            try:
                target.import_session(data)
            except HookcodeError as exc:
                raise HookcodeError(f"copying session {id} failed: {exc}") from None
            done["sessions"] += 1
        if number % PROGRESS_EVERY == 0 or number == len(ids):
            say(
                f"sessions: {number}/{len(ids)} ({done['sessions']} copied, "
                f"{done['sessions skipped']} already there)"
            )
    for record in approvals:
        if record.session_id is not None:
            target.import_approval(record)
            done["approvals"] += 1
    say(f"approvals: {done['approvals']} copied in all")
    return done


def verify(
    source: Store, target: Store, say: Any, *, before: dict[str, int] | None = None
) -> list[str]:
    """Compare the two stores after a copy: every source session and approval is on the
    target, and the target holds as many rows of each kind as the source: more only of a kind
    it held some of ``before`` the copy. The differences, one phrase each (none: verified)."""
    problems: list[str] = []
    have, got = source.counts(), target.counts()
    say("counts (source/target): " + ", ".join(f"{k} {have[k]}/{got.get(k, 0)}" for k in have))
    for key, count in have.items():
        there = got.get(key, 0)
        if there < count or (there > count and not (before or {}).get(key)):
            problems.append(f"{key}: {count} on the source, {there} on the target")
    missing = [id for id in source.session_ids() if target.get_session(id) is None]
    if missing:
        problems.append(
            f"{len(missing)} session(s) missing on the target ({', '.join(missing[:5])})"
        )
    ids = {record.id for record in target.approval_records()}
    lost = [record.id for record in source.approval_records() if record.id not in ids]
    if lost:
        problems.append(f"{len(lost)} approval(s) missing on the target ({', '.join(lost[:5])})")
    return problems
