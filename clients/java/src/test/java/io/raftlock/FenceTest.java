package io.raftlock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.raftlock.testing.Postgres;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Properties;
import java.util.concurrent.ThreadLocalRandom;
import java.util.stream.Stream;
import org.junit.jupiter.api.Named;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/** JDBC fencing against real PostgreSQL (pgjdbc) and embedded SQLite (sqlite-jdbc). */
class FenceTest {
    interface Db {
        Connection open() throws Exception;
    }

    static String schema;

    static Connection pg() throws Exception {
        Connection c = Postgres.connect();
        if (schema == null) {
            schema = "fence_java_" + Long.toHexString(ThreadLocalRandom.current().nextLong() & Long.MAX_VALUE);
        }
        try (Statement st = c.createStatement()) {
            st.execute("CREATE SCHEMA IF NOT EXISTS " + schema);
            st.execute("SET search_path TO " + schema);
        }
        return c;
    }

    static Connection sqlite() throws Exception {
        Path dir = Files.createTempDirectory("raftlock-fence-");
        Properties p = new Properties();
        p.setProperty("transaction_mode", "IMMEDIATE");
        p.setProperty("busy_timeout", "10000");
        return DriverManager.getConnection("jdbc:sqlite:" + dir.resolve("t.db"), p);
    }

    static long balance(Connection c, String table, int id) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("SELECT balance FROM " + table + " WHERE id = ?")) {
            ps.setInt(1, id);
            try (ResultSet rs = ps.executeQuery()) {
                assertTrue(rs.next());
                return rs.getLong(1);
            }
        }
    }

    /** The databases every fencing test runs against. */
    static Stream<Named<Db>> databases() {
        return Stream.of(Named.of("postgres", FenceTest::pg), Named.of("sqlite", FenceTest::sqlite));
    }

    @ParameterizedTest
    @MethodSource("databases")
    void singleStatement(Db db) throws Exception {
        try (Connection c = db.open()) {
            String t = "accounts_" + Long.toHexString(System.nanoTime());
            try (Statement st = c.createStatement()) {
                st.execute("CREATE TABLE " + t + " (id INTEGER PRIMARY KEY, balance BIGINT NOT NULL, last_token BIGINT NOT NULL DEFAULT 0)");
                st.execute("INSERT INTO " + t + " (id, balance) VALUES (42, 10000)");
            }
            assertEquals(1, Fence.update(c, t, "balance = balance - ?", 42, 5, 100));
            assertEquals(1, Fence.update(c, t, "balance = balance - ?", 42, 5, 100), "the holder's repeated write with its own token");
            assertEquals(1, Fence.update(c, t, "balance = balance - ?", 42, 9, 100));
            StaleTokenException e = assertThrows(StaleTokenException.class, () -> Fence.update(c, t, "balance = balance - ?", 42, 8, 100));
            assertEquals(8, e.offered());
            assertEquals(9, e.current());
            assertEquals("stale_token", e.code());
            assertEquals(10000 - 300, balance(c, t, 42), "the refused write changed nothing");
            assertEquals(0, Fence.update(c, t, "balance = balance - ?", 7, 10, 100), "no such row");
            assertThrows(IllegalArgumentException.class, () -> Fence.update(c, t, "balance = 0", 42, 0));
            assertThrows(IllegalArgumentException.class, () -> Fence.update(c, t + "; DROP TABLE x", "balance = 0", 42, 10));
        }
    }

    @ParameterizedTest
    @MethodSource("databases")
    void guardTable(Db db) throws Exception {
        try (Connection c = db.open()) {
            Fence.createTable(c);
            Fence.createTable(c);
            String t = "ledger_" + Long.toHexString(System.nanoTime());
            try (Statement st = c.createStatement()) {
                st.execute("CREATE TABLE " + t + " (id INTEGER PRIMARY KEY, balance BIGINT NOT NULL)");
                st.execute("INSERT INTO " + t + " (id, balance) VALUES (1, 100)");
            }
            String res = "accounts/" + t;
            Fence.Work<Integer> charge = conn -> {
                try (Statement st = conn.createStatement()) {
                    return st.executeUpdate("UPDATE " + t + " SET balance = balance - 10 WHERE id = 1");
                }
            };
            assertEquals(1, Fence.write(c, res, 3, charge));
            assertEquals(1, Fence.write(c, res, 3, charge));
            assertEquals(1, Fence.write(c, res, 4, charge));
            StaleTokenException e = assertThrows(StaleTokenException.class, () -> Fence.write(c, res, 2, charge));
            assertEquals(4, e.current());
            assertEquals(70, balance(c, t, 1));
            assertEquals(4, Fence.current(c, res));
            // An error in the work rolls the fence back too.
            assertThrows(IllegalStateException.class, () -> Fence.write(c, res, 50, conn -> {
                charge.run(conn);
                throw new IllegalStateException("boom");
            }));
            assertEquals(4, Fence.current(c, res));
            assertEquals(70, balance(c, t, 1));
            assertTrue(c.getAutoCommit());
        }
    }

    @Test
    void dsnToJdbc() {
        Object[] j = Postgres.jdbc("postgres://postgres@127.0.0.1:55501/raftlock_test?sslmode=disable");
        assertEquals("jdbc:postgresql://127.0.0.1:55501/raftlock_test", j[0]);
        assertEquals("postgres", ((Properties) j[1]).getProperty("user"));
        assertEquals("disable", ((Properties) j[1]).getProperty("sslmode"));
    }
}
