"""Storage-side fencing over DB-API 2.0 connections: the same table, statements and rules
as the Go package ``fencing`` (docs/FENCING.md).

The rule: accept a write with token ``t`` on resource ``r`` only if ``t`` is at least every
token already accepted on ``r``, **checked by the statement that raises the fence**
(``UPDATE fences SET token = t WHERE resource = r AND token <= t``), never by a read
followed by a write, and as the first statement of the transaction that makes the write.
So every fenced writer of a resource is serialized on the fence row (PostgreSQL) or the
database's write lock (SQLite, with ``BEGIN IMMEDIATE``), the write's reads are fresh, and
a stale holder's late write is refused and changes nothing.

    import sqlite3
    from raftlock.fencing import FencedDB, StaleToken

    db = FencedDB(sqlite3.connect("ledger.db", timeout=10))
    db.create_table()
    try:
        with db.write("accounts/A", held.token) as cur:
            cur.execute("UPDATE accounts SET balance = balance - ? WHERE id = 'A'", (3000,))
    except StaleToken:
        ...  # refused: a newer holder has written; nothing was applied

PostgreSQL works through any DB-API driver (psycopg, psycopg2, pg8000...):
``FencedDB(conn, dialect="postgres")``; placeholders follow the driver's ``paramstyle``.
Never delete or lower rows of ``fences``: a forgotten fence reopens the resource to stale
holders.
"""

from __future__ import annotations

import sys
from contextlib import contextmanager
from typing import Any, Iterator, Sequence

from .errors import RaftlockError

#: The largest token a fence stores (a SQL BIGINT); guards refuse larger ones.
MAX_TOKEN = 9223372036854775807

CREATE_TABLE_SQL = """CREATE TABLE IF NOT EXISTS fences (
	resource TEXT NOT NULL PRIMARY KEY,
	token    BIGINT NOT NULL
)"""
RAISE_SQL = "UPDATE fences SET token = ? WHERE resource = ? AND token <= ?"
INSERT_SQL = "INSERT INTO fences (resource, token) VALUES (?, ?) ON CONFLICT (resource) DO NOTHING"
CURRENT_SQL = "SELECT token FROM fences WHERE resource = ?"
#: The advisory lock create_table holds on PostgreSQL ("raftfenc"), as the Go package.
CREATE_LOCK_KEY = 0x7261667466656E63
#: Retries when a fence row disappears between statements (only if someone deletes rows).
MAX_RAISE_ATTEMPTS = 3


class StaleToken(RaftlockError):
    """A fenced write was refused: its token is lower than one the resource has accepted.
    Nothing the write did was applied.

    Attributes:
        resource: the fenced resource.
        offered: the refused token.
        current: the highest token the resource had accepted (greater than offered).
    """

    code = "stale_token"

    def __init__(self, resource: str, offered: int, current: int) -> None:
        super().__init__(f"stale token {offered} for resource {resource!r}: it has already accepted token {current}")
        self.resource, self.offered, self.current = resource, offered, current


def check_token(token: int) -> int:
    """Return token when a guard accepts it (1 to MAX_TOKEN), else raise ValueError."""
    if isinstance(token, bool) or not isinstance(token, int):
        raise ValueError(f"fencing token {token!r} is not an integer")
    if token <= 0:
        raise ValueError("fencing token 0 or negative: 0 is never issued (was the token set?)")
    if token > MAX_TOKEN:
        raise ValueError(f"fencing token {token} is above the largest accepted token ({MAX_TOKEN})")
    return token


def _paramstyle(conn: Any) -> str:
    mod = sys.modules.get(type(conn).__module__.split(".")[0])
    return str(getattr(mod, "paramstyle", "qmark"))


class FencedDB:
    """Fenced writes on one DB-API connection (not shared between threads while in use).

    Args:
        conn: a DB-API 2.0 connection (sqlite3.connect(...), psycopg.connect(...), ...).
            For sqlite3, open it with a busy timeout (``timeout=10``).
        dialect: "sqlite" or "postgres".
        paramstyle: the driver's placeholder style; default: the driver module's
            ``paramstyle`` (qmark, format, pyformat, numeric or named).
    """

    def __init__(self, conn: Any, dialect: str = "sqlite", paramstyle: str | None = None) -> None:
        if dialect not in ("sqlite", "postgres"):
            raise ValueError(f"unknown SQL dialect {dialect!r}: want sqlite or postgres")
        self.conn = conn
        self.dialect = dialect
        self.paramstyle = paramstyle or _paramstyle(conn)

    def _q(self, sql: str, args: Sequence[Any]) -> tuple[str, Any]:
        """sql with '?' placeholders, rewritten in the driver's paramstyle."""
        style = self.paramstyle
        if style == "qmark":
            return sql, tuple(args)
        parts = sql.split("?")
        out = parts[0]
        named: dict[str, Any] = {}
        for i, p in enumerate(parts[1:]):
            if style in ("format", "pyformat"):
                out += "%s"
            elif style == "numeric":
                out += f":{i + 1}"
            elif style == "named":
                out += f":p{i}"
                named[f"p{i}"] = args[i]
            else:
                raise ValueError(f"unsupported paramstyle {style!r}")
            out += p
        return out, (named if style == "named" else tuple(args))

    def _exec(self, cur: Any, sql: str, args: Sequence[Any] = ()) -> Any:
        q, a = self._q(sql, args)
        cur.execute(q, a)
        return cur

    def create_table(self) -> None:
        """Create the fences table if it does not exist (idempotent; on PostgreSQL under an
        advisory lock, so that processes starting together do not race)."""
        with self._transaction() as cur:
            if self.dialect == "postgres":
                self._exec(cur, "SELECT pg_advisory_xact_lock(?)", (CREATE_LOCK_KEY,))
            cur.execute(CREATE_TABLE_SQL)

    @contextmanager
    def _transaction(self) -> Iterator[Any]:
        """A cursor whose statements commit together at the end of the block, or roll back
        when it raises (a KeyboardInterrupt included: nothing half-done may commit)."""
        cur = self.conn.cursor()
        try:
            yield cur
            self.conn.commit()
        except BaseException:
            self.conn.rollback()
            raise
        finally:
            cur.close()

    def raise_fence(self, cur: Any, resource: str, token: int) -> None:
        """Step 1 of a fenced write inside a transaction you manage: raise ``resource``'s
        fence to ``token`` or raise StaleToken. It must be the transaction's first
        statement (after BEGIN IMMEDIATE on SQLite); roll back when it raises."""
        if not resource:
            raise ValueError("fencing: empty resource name")
        check_token(token)
        for _ in range(MAX_RAISE_ATTEMPTS):
            if self._exec(cur, RAISE_SQL, (token, resource, token)).rowcount == 1:
                return
            if self._exec(cur, INSERT_SQL, (resource, token)).rowcount == 1:
                return
            if self._exec(cur, RAISE_SQL, (token, resource, token)).rowcount == 1:
                return
            row = self._exec(cur, CURRENT_SQL, (resource,)).fetchone()
            if row is not None:
                raise StaleToken(resource, token, int(row[0]))
        raise RaftlockError(f"fencing: the fence of {resource!r} keeps disappearing: rows of the fences table are being deleted", code="fence_deleted")

    @contextmanager
    def write(self, resource: str, token: int) -> Iterator[Any]:
        """A transaction whose first statement raises ``resource``'s fence to ``token``;
        yields a cursor for the write's statements (use only it) and commits at the end of
        the block. A refusal raises StaleToken before the block runs; an exception in the
        block rolls everything back, the fence included."""
        check_token(token)
        if getattr(self.conn, "in_transaction", False):
            raise RuntimeError("fencing: the connection is inside a transaction; the fence must be its first statement")
        with self._transaction() as cur:
            if self.dialect == "sqlite":
                cur.execute("BEGIN IMMEDIATE")  # take the write lock before the first read
            else:
                cur.execute("SET TRANSACTION ISOLATION LEVEL READ COMMITTED")
            self.raise_fence(cur, resource, token)
            yield cur

    def current(self, resource: str) -> int | None:
        """The highest token ``resource`` has accepted, or None when never fenced."""
        cur = self.conn.cursor()
        try:
            row = self._exec(cur, CURRENT_SQL, (resource,)).fetchone()
            if self.dialect == "postgres":
                self.conn.commit()
            return None if row is None else int(row[0])
        finally:
            cur.close()
