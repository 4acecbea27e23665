"""The audit log kept in the store (``[audit] to = "store"``): the same records and the same
chain as the file (:mod:`hookcode_audit.chain` builds and checks the lines), appended through
the store's ``audit_log()`` (:class:`hookcode.store.audit_log.AuditLogStore`), which orders
them across every process and machine using the store."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from hookcode.errors import HookcodeError

if TYPE_CHECKING:
    from hookcode.store import Store
    from hookcode.store.audit_log import AuditLogStore

    from hookcode_audit.chain import Verification

__all__ = ["AuditUnavailable", "StoredAuditLog"]


class AuditUnavailable(HookcodeError):
    """``[audit] to = "store"`` with a store that keeps no audit log."""


class StoredAuditLog:
    """Appends records to the audit log of a store and reads them back."""

    def __init__(self, store: Store) -> None:
        opener = getattr(store, "audit_log", None)
        if not callable(opener):
            raise AuditUnavailable(
                f'[audit] to = "store", but the store {store.location} keeps no audit log '
                "(the embedded SQLite store does not; hookcode-store-postgres does): set a "
                'PostgreSQL store, or [audit] to = "file"'
            )
        self.log: AuditLogStore = cast("AuditLogStore", opener())
        #: where the records go, for messages (the store's location: never a password)
        self.path = f"{store.location} (audit log)"

    def append(self, record: dict[str, Any]) -> str:
        """Write ``record`` as the next line of the chain; the line written. Raises
        :class:`~hookcode.store.records.StoreError` when the store cannot take it."""
        from hookcode_audit.chain import build_line

        return self.log.append(lambda seq, prev: build_line(record, seq, prev))

    def lines(self) -> list[bytes]:
        """Every line (UTF-8 bytes), in ``seq`` order."""
        return [line.encode("utf-8", "replace") for line in self.log.lines()]

    def records(self) -> list[dict[str, Any]]:
        """Every record that parses, in ``seq`` order."""
        from hookcode_audit.chain import parse_records

        return parse_records(self.lines())

    def verify(self, *, anchor: str | None = None) -> Verification:
        """Check the chain; a break names the record by its position in ``seq`` order."""
        from hookcode_audit.chain import Verification, verify_lines

        try:
            lines = self.lines()
        except HookcodeError as exc:  # a StoreError: the database cannot be read
            return Verification(self.path, False, error=f"cannot read the audit log: {exc}")
        return verify_lines(lines, self.path, anchor=anchor, unit="record")
