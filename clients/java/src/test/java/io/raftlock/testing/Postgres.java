package io.raftlock.testing;

import java.net.URI;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.util.Properties;
import org.junit.jupiter.api.Assertions;
import org.junit.jupiter.api.Assumptions;

/** PostgreSQL for the tests: RAFTLOCK_TEST_POSTGRES_DSN, a Go-style DSN (postgres://user[:pw]@host:port/db?sslmode=disable). */
public final class Postgres {
    private Postgres() {}

    /** The JDBC URL and properties of a Go-style DSN. */
    public static Object[] jdbc(String dsn) {
        URI u = URI.create(dsn);
        if (!"postgres".equals(u.getScheme()) && !"postgresql".equals(u.getScheme())) {
            throw new IllegalArgumentException("not a postgres:// DSN");
        }
        Properties p = new Properties();
        if (u.getRawUserInfo() != null) {
            String[] ui = u.getRawUserInfo().split(":", 2);
            p.setProperty("user", URLDecoder.decode(ui[0], StandardCharsets.UTF_8));
            if (ui.length > 1) {
                p.setProperty("password", URLDecoder.decode(ui[1], StandardCharsets.UTF_8));
            }
        }
        if (u.getRawQuery() != null) {
            for (String kv : u.getRawQuery().split("&")) {
                String[] x = kv.split("=", 2);
                if (x.length == 2) {
                    p.setProperty(x[0], URLDecoder.decode(x[1], StandardCharsets.UTF_8));
                }
            }
        }
        String url = "jdbc:postgresql://" + u.getHost() + (u.getPort() > 0 ? ":" + u.getPort() : "") + u.getRawPath();
        return new Object[] {url, p};
    }

    /**
     * A connection to the test database: skips (saying why) without RAFTLOCK_TEST_POSTGRES_DSN,
     * and fails instead under CI=true.
     */
    public static Connection connect() throws SQLException {
        String dsn = System.getenv("RAFTLOCK_TEST_POSTGRES_DSN");
        if (dsn == null || dsn.isEmpty()) {
            String why = "RAFTLOCK_TEST_POSTGRES_DSN is not set (scripts/ci-postgres.sh start DIR PORT prints one)";
            if (Cluster.inCI()) {
                Assertions.fail(why + ", and nothing may skip under CI=true");
            }
            System.err.println("SKIP (PostgreSQL): " + why);
            Assumptions.abort(why);
        }
        Object[] j = jdbc(dsn);
        return DriverManager.getConnection((String) j[0], (Properties) j[1]);
    }
}
