package io.raftlock;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.regex.Pattern;

/**
 * Storage-side fencing over JDBC, with the rule of the Go package {@code fencing}
 * (docs/FENCING.md): accept a write with token {@code t} only if {@code t} is at least every
 * token already accepted, <b>checked by the statement that writes</b> (never a read followed
 * by a write). {@code <=}, not {@code <}: the current holder may write many times with its
 * token; any lower token is refused with {@link StaleTokenException}.
 *
 * <p>Two ways:
 * <ul>
 * <li>{@link #update}: one statement on a row that carries its own {@code last_token}
 *     column: {@code UPDATE t SET ..., last_token = ? WHERE id = ? AND last_token <= ?}.
 *     Atomic by itself, in whatever transaction the connection is in.</li>
 * <li>{@link #write}: the guard table {@code fences(resource, token)}: one transaction whose
 *     first statement raises the resource's fence, then the caller's statements; a refusal
 *     rolls everything back. For writes that touch several rows or tables. PostgreSQL and
 *     SQLite (any database with {@code INSERT ... ON CONFLICT DO NOTHING}).</li>
 * </ul>
 * Never delete or lower fence rows or {@code last_token} values: that reopens the resource to
 * stale holders. Fencing stops stale writers; it does not stop one request being processed
 * twice by two successive holders (use an idempotency key for that).
 */
public final class Fence {
    /** The guard table, as the Go package creates it. */
    public static final String CREATE_TABLE_SQL = "CREATE TABLE IF NOT EXISTS fences (\n\tresource TEXT NOT NULL PRIMARY KEY,\n\ttoken    BIGINT NOT NULL\n)";
    static final String RAISE_SQL = "UPDATE fences SET token = ? WHERE resource = ? AND token <= ?";
    static final String INSERT_SQL = "INSERT INTO fences (resource, token) VALUES (?, ?) ON CONFLICT (resource) DO NOTHING";
    static final String CURRENT_SQL = "SELECT token FROM fences WHERE resource = ?";
    /** The PostgreSQL advisory lock createTable holds ("raftfenc"), as the Go package. */
    static final long CREATE_LOCK_KEY = 0x7261667466656E63L;
    private static final Pattern IDENT = Pattern.compile("[A-Za-z_][A-Za-z0-9_]*(\\.[A-Za-z_][A-Za-z0-9_]*)?");

    private Fence() {}

    /** Work run inside a fenced transaction. */
    @FunctionalInterface
    public interface Work<T> {
        /** Runs the write's statements on {@code conn}. */
        T run(Connection conn) throws SQLException;
    }

    static void checkToken(long token) {
        if (token <= 0) {
            throw new IllegalArgumentException("fencing token 0 or negative: 0 is never issued (was the token set?)");
        }
    }

    /**
     * One fenced statement: {@code UPDATE table SET <set>, last_token = ? WHERE id = ? AND
     * last_token <= ?} with {@code setParams} then token, id, token. Returns the rows updated
     * (1), or 0 when no row has that id; throws {@link StaleTokenException} when the row has
     * accepted a higher token. {@code table} and {@code set} are SQL text: constants of your
     * code, never input.
     *
     * <pre>{@code Fence.update(conn, "accounts", "balance = balance - ?", 42, held.token(), 2500);}</pre>
     */
    public static int update(Connection conn, String table, String set, Object id, long token, Object... setParams) throws SQLException {
        checkToken(token);
        if (!IDENT.matcher(table).matches()) {
            throw new IllegalArgumentException("table must be an identifier: " + table);
        }
        String sql = "UPDATE " + table + " SET " + set + ", last_token = ? WHERE id = ? AND last_token <= ?";
        int n;
        try (PreparedStatement ps = conn.prepareStatement(sql)) {
            int i = 1;
            for (Object p : setParams) {
                ps.setObject(i++, p);
            }
            ps.setLong(i++, token);
            ps.setObject(i++, id);
            ps.setLong(i, token);
            n = ps.executeUpdate();
        }
        if (n > 0) {
            return n;
        }
        try (PreparedStatement ps = conn.prepareStatement("SELECT last_token FROM " + table + " WHERE id = ?")) {
            ps.setObject(1, id);
            try (ResultSet rs = ps.executeQuery()) {
                if (rs.next()) {
                    throw new StaleTokenException(table + " id=" + id, token, rs.getLong(1));
                }
            }
        }
        return 0;
    }

    static boolean postgres(Connection conn) throws SQLException {
        return conn.getMetaData().getDatabaseProductName().toLowerCase(java.util.Locale.ROOT).contains("postgres");
    }

    /** Creates the fences table if it does not exist (on PostgreSQL under an advisory lock, so processes starting together do not race). */
    public static void createTable(Connection conn) throws SQLException {
        boolean auto = conn.getAutoCommit();
        conn.setAutoCommit(false);
        try (Statement st = conn.createStatement()) {
            if (postgres(conn)) {
                try (PreparedStatement ps = conn.prepareStatement("SELECT pg_advisory_xact_lock(?)")) {
                    ps.setLong(1, CREATE_LOCK_KEY);
                    ps.execute();
                }
            }
            st.execute(CREATE_TABLE_SQL);
            conn.commit();
        } catch (SQLException | RuntimeException e) {
            conn.rollback();
            throw e;
        } finally {
            conn.setAutoCommit(auto);
        }
    }

    /**
     * Raises {@code resource}'s fence to {@code token} inside the caller's transaction, or
     * throws {@link StaleTokenException}. It must be the transaction's first statement; roll
     * back when it throws.
     */
    public static void raise(Connection conn, String resource, long token) throws SQLException {
        if (resource == null || resource.isEmpty()) {
            throw new IllegalArgumentException("fencing: empty resource name");
        }
        checkToken(token);
        for (int attempt = 0; attempt < 3; attempt++) {
            if (exec(conn, RAISE_SQL, token, resource, token) == 1) {
                return;
            }
            if (exec(conn, INSERT_SQL, resource, token) == 1) {
                return;
            }
            if (exec(conn, RAISE_SQL, token, resource, token) == 1) {
                return;
            }
            try (PreparedStatement ps = conn.prepareStatement(CURRENT_SQL)) {
                ps.setString(1, resource);
                try (ResultSet rs = ps.executeQuery()) {
                    if (rs.next()) {
                        throw new StaleTokenException(resource, token, rs.getLong(1));
                    }
                }
            }
        }
        throw new SQLException("fencing: the fence of " + resource + " keeps disappearing: rows of the fences table are being deleted");
    }

    private static int exec(Connection conn, String sql, Object... args) throws SQLException {
        try (PreparedStatement ps = conn.prepareStatement(sql)) {
            for (int i = 0; i < args.length; i++) {
                ps.setObject(i + 1, args[i]);
            }
            return ps.executeUpdate();
        }
    }

    /**
     * One transaction (READ COMMITTED) whose first statement raises {@code resource}'s fence
     * to {@code token}, then {@code work}, then commit. A refusal throws
     * {@link StaleTokenException} before work runs; an exception in work rolls everything
     * back, the fence included. The connection must be in auto-commit mode (not inside a
     * transaction). On SQLite open it with {@code transaction_mode=IMMEDIATE} (sqlite-jdbc),
     * so that the transaction takes the write lock first, and a busy timeout.
     */
    public static <T> T write(Connection conn, String resource, long token, Work<T> work) throws SQLException {
        checkToken(token);
        boolean auto = conn.getAutoCommit();
        if (!auto) {
            throw new IllegalStateException("fencing: the connection is not in auto-commit mode; the fence must be its transaction's first statement");
        }
        boolean pg = postgres(conn);
        int iso = conn.getTransactionIsolation();
        if (pg) {
            conn.setTransactionIsolation(Connection.TRANSACTION_READ_COMMITTED);
        }
        conn.setAutoCommit(false);
        try {
            raise(conn, resource, token);
            T out = work.run(conn);
            conn.commit();
            return out;
        } catch (SQLException | RuntimeException e) {
            conn.rollback();
            throw e;
        } finally {
            conn.setAutoCommit(true);
            if (pg) {
                conn.setTransactionIsolation(iso);
            }
        }
    }

    /** The highest token {@code resource} has accepted, or -1 when never fenced. */
    public static long current(Connection conn, String resource) throws SQLException {
        try (PreparedStatement ps = conn.prepareStatement(CURRENT_SQL)) {
            ps.setString(1, resource);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? rs.getLong(1) : -1;
            }
        }
    }
}
