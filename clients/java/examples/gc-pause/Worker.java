import io.raftlock.Fence;
import io.raftlock.Held;
import io.raftlock.LeaseLostException;
import io.raftlock.RaftLock;
import io.raftlock.StaleTokenException;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.Properties;

/**
 * The GC-pause demo's worker (run.sh drives it):
 *
 *   Worker ports N                    print N free loopback ports
 *   Worker wait-leader                wait until the cluster serves a linearizable read
 *   Worker setup                      (re)create the account (balance 10000) and an empty ledger
 *   Worker charge NAME fenced|plain pause|go
 *                                     lock payments/card-42, check isLost(), print HOLDING, then
 *                                     (pause) wait for a line on stdin, then charge 2500
 *   Worker ledger                     print the ledger and the balance; exit code = charges
 *   Worker drop                       drop the demo's schema
 *
 * Environment: RAFTLOCK_ENDPOINTS (comma-separated), RAFTLOCK_TEST_POSTGRES_DSN
 * (postgres://user@host:port/db?sslmode=disable), DEMO_SCHEMA, TTL_MS.
 */
public final class Worker {
    static final String LOCK = "payments/card-42";
    static final int AMOUNT = 2500;

    static Connection db() throws SQLException {
        URI u = URI.create(System.getenv("RAFTLOCK_TEST_POSTGRES_DSN"));
        Properties p = new Properties();
        if (u.getUserInfo() != null) {
            String[] ui = u.getUserInfo().split(":", 2);
            p.setProperty("user", ui[0]);
            if (ui.length > 1) {
                p.setProperty("password", ui[1]);
            }
        }
        if (u.getQuery() != null) {
            for (String kv : u.getQuery().split("&")) {
                String[] x = kv.split("=", 2);
                if (x.length == 2) {
                    p.setProperty(x[0], x[1]);
                }
            }
        }
        Connection c = DriverManager.getConnection("jdbc:postgresql://" + u.getHost() + ":" + u.getPort() + u.getPath(), p);
        try (Statement st = c.createStatement()) {
            String schema = System.getenv("DEMO_SCHEMA");
            if (!schema.matches("[a-z_][a-z0-9_]*")) {
                throw new IllegalArgumentException("DEMO_SCHEMA must be a plain identifier");
            }
            st.execute("CREATE SCHEMA IF NOT EXISTS " + schema);
            st.execute("SET search_path TO " + schema);
        }
        return c;
    }

    static RaftLock client() {
        return RaftLock.builder().endpoints(System.getenv("RAFTLOCK_ENDPOINTS")).build();
    }

    public static void main(String[] args) throws Exception {
        switch (args[0]) {
            case "ports": {
                int n = Integer.parseInt(args[1]);
                ServerSocket[] s = new ServerSocket[n];
                StringBuilder out = new StringBuilder();
                for (int i = 0; i < n; i++) {
                    s[i] = new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
                    out.append(i == 0 ? "" : " ").append(s[i].getLocalPort());
                }
                for (ServerSocket x : s) {
                    x.close();
                }
                System.out.println(out);
                return;
            }
            case "wait-leader": {
                long end = System.nanoTime() + Duration.ofSeconds(30).toNanos();
                try (RaftLock c = RaftLock.builder().endpoints(System.getenv("RAFTLOCK_ENDPOINTS")).callTimeout(Duration.ofSeconds(2)).build()) {
                    while (System.nanoTime() - end < 0) {
                        try {
                            c.status(LOCK);
                            return;
                        } catch (RuntimeException e) {
                            Thread.sleep(100);
                        }
                    }
                }
                System.err.println("no leader after 30 s");
                System.exit(1);
                return;
            }
            case "setup": {
                try (Connection c = db(); Statement st = c.createStatement()) {
                    st.execute("DROP TABLE IF EXISTS accounts");
                    st.execute("DROP TABLE IF EXISTS charges");
                    st.execute("CREATE TABLE accounts (id INTEGER PRIMARY KEY, balance BIGINT NOT NULL, last_token BIGINT NOT NULL DEFAULT 0)");
                    st.execute("INSERT INTO accounts (id, balance) VALUES (42, 10000)");
                    st.execute("CREATE TABLE charges (n SERIAL PRIMARY KEY, worker TEXT NOT NULL, amount BIGINT NOT NULL, token BIGINT NOT NULL)");
                }
                return;
            }
            case "charge": {
                String name = args[1];
                boolean fenced = args[2].equals("fenced");
                boolean pause = args[3].equals("pause");
                Duration ttl = Duration.ofMillis(Long.parseLong(System.getenv().getOrDefault("TTL_MS", "1500")));
                try (RaftLock client = client(); Connection db = db(); Held held = client.lock(LOCK, ttl, Duration.ofSeconds(20))) {
                    boolean lost = held.isLost();
                    System.out.println(name + ": holding " + LOCK + " with token " + held.token() + "; isLost() = " + lost);
                    System.out.println("HOLDING");
                    System.out.flush();
                    if (lost) {
                        System.exit(4);
                    }
                    if (pause) {
                        // Stopped here by SIGSTOP (a stop-the-world pause): the check above was
                        // true when made; nothing in this process runs until SIGCONT.
                        new BufferedReader(new InputStreamReader(System.in)).readLine();
                        System.out.println(name + ": resumed; isLost() now = " + held.isLost() + " (too late: the write below was already decided)");
                    }
                    db.setAutoCommit(false);
                    try {
                        if (fenced) {
                            Fence.update(db, "accounts", "balance = balance - ?", 42, held.token(), AMOUNT);
                        } else {
                            try (PreparedStatement ps = db.prepareStatement("UPDATE accounts SET balance = balance - ? WHERE id = 42")) {
                                ps.setInt(1, AMOUNT);
                                ps.executeUpdate();
                            }
                        }
                        try (PreparedStatement ps = db.prepareStatement("INSERT INTO charges (worker, amount, token) VALUES (?, ?, ?)")) {
                            ps.setString(1, name);
                            ps.setInt(2, AMOUNT);
                            ps.setLong(3, held.token());
                            ps.executeUpdate();
                        }
                        db.commit();
                        System.out.println(name + ": charged " + AMOUNT + " with token " + held.token());
                    } catch (StaleTokenException e) {
                        db.rollback();
                        System.out.println(name + ": REFUSED by the database: " + e.getMessage());
                    }
                    db.setAutoCommit(true);
                } catch (LeaseLostException e) {
                    // Leaving the block of a lost hold says so; the database decided already.
                    System.out.println(name + ": leaving the lock's block: " + e.getMessage());
                }
                return;
            }
            case "drop": {
                try (Connection c = db(); Statement st = c.createStatement()) {
                    st.execute("DROP SCHEMA " + System.getenv("DEMO_SCHEMA") + " CASCADE");
                }
                return;
            }
            case "ledger": {
                int n = 0;
                try (Connection c = db(); Statement st = c.createStatement()) {
                    try (ResultSet rs = st.executeQuery("SELECT n, worker, amount, token FROM charges ORDER BY n")) {
                        while (rs.next()) {
                            n++;
                            System.out.printf("  charge %d: %s charged %d with token %d%n", rs.getInt(1), rs.getString(2), rs.getLong(3), rs.getLong(4));
                        }
                    }
                    try (ResultSet rs = st.executeQuery("SELECT balance FROM accounts WHERE id = 42")) {
                        rs.next();
                        System.out.printf("  balance of card 42: %d (started at 10000)%n", rs.getLong(1));
                    }
                }
                System.exit(n);
                return;
            }
            default:
                throw new IllegalArgumentException("unknown command " + args[0]);
        }
    }
}
