// MySQL Connector/J (the unmodified driver) against `cairndb server`.
//
// usage: java -cp mysql-connector-j.jar:DIR -Duser.timezone=UTC JdbcSmoke PORT
//
// Run by scripts/sql-clients.sh on a fresh server, which fetches the driver
// and compiles this file. Each check prints `PASS name`, `FAIL name: why`
// or, for a check listed in KNOWN (a difference from MySQL already reported
// against the SQL layer), `KNOWN name: why` (`FIXED`, a failure, when such
// a check passes, until the entry goes). The last line is `jdbc: N passed, N failed`;
// the exit status is 1 if any check failed. MySQL 8.0 with the driver's
// defaults is the expectation throughout.

import java.math.BigDecimal;
import java.math.BigInteger;
import java.sql.BatchUpdateException;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.ResultSetMetaData;
import java.sql.SQLException;
import java.sql.SQLIntegrityConstraintViolationException;
import java.sql.SQLSyntaxErrorException;
import java.sql.Savepoint;
import java.sql.Statement;
import java.sql.Timestamp;
import java.sql.Types;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicReference;

public class JdbcSmoke {
    /**
     * Check name -> the SQL-layer difference from MySQL it exposes (reported;
     * docs/sql.md, "Known differences"). A listed check still runs and checks
     * MySQL's behaviour; it is reported as KNOWN, not failed, and as FIXED (a
     * failure, so the entry gets removed) once it passes.
     */
    static final Map<String, String> KNOWN = new LinkedHashMap<>();

    static {
        // None at present.
    }

    static int port;
    static int passed, failed;

    interface Check {
        void run() throws Exception;
    }

    static void check(String name, Check c) {
        String why = null;
        try {
            c.run();
        } catch (Throwable t) {
            why = t.getClass().getSimpleName() + ": " + t.getMessage();
            if (!(t instanceof AssertionError)) {
                StackTraceElement[] st = t.getStackTrace();
                for (StackTraceElement e : st) {
                    if (e.getClassName().startsWith("JdbcSmoke")) {
                        why += " (at " + e + ")";
                        break;
                    }
                }
            }
        }
        String status;
        if (KNOWN.containsKey(name)) {
            status = why == null ? "FIXED" : "KNOWN";
            why = why == null ? KNOWN.get(name) + " -- now passes: remove it from KNOWN"
                    : KNOWN.get(name) + " -- " + why;
            if (why.contains("now passes")) {
                failed++;
            } else {
                passed++;
            }
        } else if (why == null) {
            status = "PASS";
            passed++;
        } else {
            status = "FAIL";
            failed++;
        }
        System.out.println(status + " " + name + (why != null && !status.equals("PASS") ? ": " + why : ""));
        System.out.flush();
    }

    static void eq(Object got, Object want, String what) {
        if (!Objects.equals(got, want)) {
            String g = got == null ? "null" : got + " (" + got.getClass().getSimpleName() + ")";
            String w = want == null ? "null" : want + " (" + want.getClass().getSimpleName() + ")";
            throw new AssertionError(what + ": got " + g + ", want " + w);
        }
    }

    static void truth(boolean ok, String what) {
        if (!ok) {
            throw new AssertionError(what);
        }
    }

    static Connection connect(String extra) throws SQLException {
        String url = "jdbc:mysql://127.0.0.1:" + port + "/jt?sslMode=DISABLED"
                + "&allowPublicKeyRetrieval=true&connectTimeout=10000&socketTimeout=120000"
                + (extra.isEmpty() ? "" : "&" + extra);
        return DriverManager.getConnection(url, "root", "");
    }

    static long count(Connection c, String sql) throws SQLException {
        try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery(sql)) {
            rs.next();
            return rs.getLong(1);
        }
    }

    static void exec(Connection c, String... sqls) throws SQLException {
        try (Statement s = c.createStatement()) {
            for (String sql : sqls) {
                s.execute(sql);
            }
        }
    }

    static SQLException expectError(int code, Check c) throws Exception {
        try {
            c.run();
        } catch (SQLException e) {
            if (e.getErrorCode() != code) {
                throw new AssertionError("got " + e.getClass().getSimpleName() + " " + e.getErrorCode()
                        + " (" + e.getSQLState() + ") " + e.getMessage() + ", want error " + code);
            }
            return e;
        }
        throw new AssertionError("no error, want " + code);
    }

    public static void main(String[] args) throws Exception {
        port = Integer.parseInt(args[0]);
        try (Connection c = DriverManager.getConnection(
                "jdbc:mysql://127.0.0.1:" + port + "/?sslMode=DISABLED", "root", "")) {
            exec(c, "DROP DATABASE IF EXISTS jt", "CREATE DATABASE jt");
        }

        check("connect_and_metadata", () -> {
            try (Connection c = connect("")) {
                eq(c.getMetaData().getDatabaseProductName(), "MySQL", "product name");
                truth(c.getMetaData().getDatabaseProductVersion().startsWith("8.0."), "server version 8.0.x");
                eq(c.getCatalog(), "jt", "current database");
                eq(c.getAutoCommit(), true, "autocommit");
                eq(c.getTransactionIsolation(), Connection.TRANSACTION_REPEATABLE_READ, "isolation");
                eq(count(c, "SELECT 1"), 1L, "SELECT 1");
                truth(c.isValid(5), "isValid (ping)");
            }
        });

        for (boolean server : new boolean[] {true, false}) {
            String mode = server ? "server" : "client";
            String props = "useServerPrepStmts=" + server + "&cachePrepStmts=true";
            check("prepared_round_trip_" + mode, () -> preparedRoundTrip(props, server, mode));
            check("prepared_reexecute_" + mode, () -> preparedReexecute(props, mode));
            check("prepared_metadata_" + mode, () -> metadata(props, mode, "types"));
            check("metadata_column_flags_" + mode, () -> metadata(props, mode, "flags"));
            check("metadata_bool_is_bit_" + mode, () -> metadata(props, mode, "bool"));
            check("prepared_unicode_" + mode, () -> unicode(props, mode));
            for (boolean rewrite : new boolean[] {true, false}) {
                String bprops = props + "&rewriteBatchedStatements=" + rewrite;
                String bname = mode + (rewrite ? "_rewrite" : "_norewrite");
                check("batch_insert_" + bname, () -> batchInsert(bprops, rewrite, bname));
                check("batch_duplicate_" + bname, () -> batchDuplicate(bprops, rewrite, bname));
                check("generated_keys_" + bname, () -> generatedKeys(bprops, bname));
            }
        }
        check("transactions_commit_rollback", JdbcSmoke::transactions);
        check("isolation_autocommit_off", JdbcSmoke::isolation);
        check("savepoints", JdbcSmoke::savepoints);
        check("update_counts_found_rows", JdbcSmoke::updateCounts);
        check("error_exceptions", JdbcSmoke::errors);
        check("prepare_errors", JdbcSmoke::prepareErrors);
        check("lock_wait_timeout_1205", JdbcSmoke::lockWait);
        check("deadlock_1213", JdbcSmoke::deadlock);
        check("large_result", JdbcSmoke::largeResult);

        System.out.println("jdbc: " + passed + " passed, " + failed + " failed");
        System.exit(failed == 0 ? 0 : 1);
    }

    static final String TYPES_DDL = "CREATE TABLE %s (id INT NOT NULL AUTO_INCREMENT PRIMARY KEY,"
            + " i INT, big BIGINT, ubig BIGINT UNSIGNED, s VARCHAR(20) NOT NULL, d DECIMAL(10,2),"
            + " dd DATE, dt DATETIME, dt6 DATETIME(6), dbl DOUBLE, flag BOOL, vb VARBINARY(16),"
            + " txt TEXT, bl BLOB)";

    static void preparedRoundTrip(String props, boolean server, String mode) throws Exception {
        String t = "rt_" + mode;
        try (Connection c = connect(props)) {
            exec(c, String.format(TYPES_DDL, t));
            try (PreparedStatement ps = c.prepareStatement("INSERT INTO " + t
                    + " (i, big, ubig, s, d, dd, dt, dt6, dbl, flag, vb, txt, bl)"
                    + " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")) {
                String cls = ps.getClass().getSimpleName();
                eq(cls, server ? "ServerPreparedStatement" : "ClientPreparedStatement", "statement class");
                ps.setInt(1, -42);
                ps.setLong(2, Long.MIN_VALUE + 1);
                ps.setBigDecimal(3, new BigDecimal("18446744073709551615"));
                ps.setString(4, "it's \"q\" \\ ;");
                ps.setBigDecimal(5, new BigDecimal("-12345678.90"));
                ps.setObject(6, LocalDate.of(2024, 2, 29));
                ps.setTimestamp(7, Timestamp.valueOf("2023-12-31 23:59:58"));
                ps.setObject(8, LocalDateTime.of(2001, 2, 3, 4, 5, 6, 789012000));
                ps.setDouble(9, 0.1);
                ps.setBoolean(10, true);
                ps.setBytes(11, new byte[] {0, 1, 2, (byte) 0xff, 39, 92});
                ps.setString(12, "text ✓");
                ps.setBytes(13, new byte[] {(byte) 0xde, (byte) 0xad, 0, (byte) 0xbe, (byte) 0xef});
                eq(ps.executeUpdate(), 1, "insert count");
                ps.setNull(1, Types.INTEGER);
                ps.setNull(2, Types.BIGINT);
                ps.setNull(3, Types.BIGINT);
                ps.setString(4, "");
                for (int i = 5; i <= 13; i++) {
                    ps.setNull(i, Types.NULL);
                }
                eq(ps.executeUpdate(), 1, "insert of NULLs");
            }
            try (PreparedStatement ps = c.prepareStatement("SELECT * FROM " + t + " WHERE id = ?")) {
                ps.setInt(1, 1);
                try (ResultSet rs = ps.executeQuery()) {
                    truth(rs.next(), "row 1");
                    eq(rs.getInt("i"), -42, "INT");
                    eq(rs.getObject("i"), -42, "INT getObject");
                    eq(rs.getLong("big"), Long.MIN_VALUE + 1, "BIGINT");
                    eq(rs.getObject("big"), Long.MIN_VALUE + 1, "BIGINT getObject");
                    eq(rs.getObject("ubig"), new BigInteger("18446744073709551615"), "BIGINT UNSIGNED getObject");
                    eq(rs.getString("s"), "it's \"q\" \\ ;", "VARCHAR");
                    eq(rs.getBigDecimal("d"), new BigDecimal("-12345678.90"), "DECIMAL");
                    eq(rs.getObject("d"), new BigDecimal("-12345678.90"), "DECIMAL getObject");
                    eq(rs.getObject("dd", LocalDate.class), LocalDate.of(2024, 2, 29), "DATE");
                    eq(rs.getDate("dd").toString(), "2024-02-29", "DATE getDate");
                    eq(rs.getTimestamp("dt"), Timestamp.valueOf("2023-12-31 23:59:58"), "DATETIME");
                    eq(rs.getObject("dt6", LocalDateTime.class), LocalDateTime.of(2001, 2, 3, 4, 5, 6, 789012000),
                            "DATETIME(6)");
                    eq(rs.getDouble("dbl"), 0.1, "DOUBLE");
                    eq(rs.getBoolean("flag"), true, "BOOL");
                    eq(java.util.Arrays.toString(rs.getBytes("vb")), "[0, 1, 2, -1, 39, 92]", "VARBINARY");
                    eq(rs.getString("txt"), "text ✓", "TEXT");
                    eq(java.util.Arrays.toString(rs.getBytes("bl")), "[-34, -83, 0, -66, -17]", "BLOB");
                    truth(!rs.next(), "one row");
                }
                ps.setInt(1, 2);
                try (ResultSet rs = ps.executeQuery()) {
                    truth(rs.next(), "row 2");
                    eq(rs.getInt("i"), 0, "NULL INT as int");
                    truth(rs.wasNull(), "wasNull");
                    for (String col : new String[] {"i", "big", "ubig", "d", "dd", "dt", "dt6", "dbl", "flag",
                            "vb", "txt", "bl"}) {
                        eq(rs.getObject(col), null, col + " NULL");
                    }
                    eq(rs.getString("s"), "", "empty string");
                }
            }
        }
    }

    static void preparedReexecute(String props, String mode) throws Exception {
        String t = "re_" + mode;
        try (Connection c = connect(props)) {
            exec(c, "CREATE TABLE " + t + " (id INT PRIMARY KEY, k INT, v VARCHAR(10), KEY kk (k))");
            try (PreparedStatement ins = c.prepareStatement("INSERT INTO " + t + " VALUES (?, ?, ?)")) {
                for (int i = 1; i <= 200; i++) {
                    ins.setInt(1, i);
                    ins.setInt(2, i % 10);
                    ins.setString(3, "v" + i);
                    eq(ins.executeUpdate(), 1, "insert " + i);
                }
            }
            // The same statement, closed and prepared again (the statement
            // cache), with parameters of different types each time.
            for (int round = 0; round < 3; round++) {
                try (PreparedStatement ps = c.prepareStatement("SELECT COUNT(*), SUM(id) FROM " + t
                        + " WHERE k = ? AND id BETWEEN ? AND ?")) {
                    for (int k = 0; k < 10; k++) {
                        ps.setInt(1, k);
                        if (round == 1) {
                            ps.setString(2, "1");
                            ps.setLong(3, 200L);
                        } else {
                            ps.setInt(2, 1);
                            ps.setBigDecimal(3, new BigDecimal("200"));
                        }
                        try (ResultSet rs = ps.executeQuery()) {
                            rs.next();
                            eq(rs.getLong(1), 20L, "count k=" + k);
                            long want = 0;
                            for (int i = 1; i <= 200; i++) {
                                if (i % 10 == k) {
                                    want += i;
                                }
                            }
                            eq(rs.getLong(2), want, "sum k=" + k);
                        }
                    }
                }
            }
            // A DDL between executions: the statement sees the new table.
            try (PreparedStatement ps = c.prepareStatement("SELECT v FROM " + t + " WHERE id = ?")) {
                ps.setInt(1, 7);
                try (ResultSet rs = ps.executeQuery()) {
                    rs.next();
                    eq(rs.getString(1), "v7", "before DDL");
                }
                exec(c, "CREATE INDEX kv ON " + t + " (v)");
                ps.setInt(1, 8);
                try (ResultSet rs = ps.executeQuery()) {
                    rs.next();
                    eq(rs.getString(1), "v8", "after DDL");
                }
            }
        }
    }

    /**
     * ResultSetMetaData of a prepared SELECT: `part` is "types" (types,
     * names, precision, scale, classes), "flags" (auto-increment and
     * nullability, from the column flags) or "bool" (BOOL is TINYINT(1),
     * which the driver reports as BIT/Boolean).
     */
    static void metadata(String props, String mode, String part) throws Exception {
        String t = "md_" + mode;
        try (Connection c = connect(props)) {
            exec(c, String.format(TYPES_DDL, t).replace("CREATE TABLE", "CREATE TABLE IF NOT EXISTS"));
            try (PreparedStatement ps = c.prepareStatement(
                    "SELECT id, i, big, ubig, s AS label, d, dd, dt, dt6, dbl, flag, vb, txt, bl FROM " + t
                            + " WHERE id > ?")) {
                ps.setInt(1, 0);
                try (ResultSet rs = ps.executeQuery()) {
                    ResultSetMetaData md = rs.getMetaData();
                    eq(md.getColumnCount(), 14, "column count");
                    Object[][] want = {
                        // label, java.sql.Types, type name, precision, scale, class
                        // (null: not checked)
                        {"id", Types.INTEGER, "INT", 10, 0, "java.lang.Integer"},
                        {"i", Types.INTEGER, "INT", 10, 0, "java.lang.Integer"},
                        {"big", Types.BIGINT, "BIGINT", 19, 0, "java.lang.Long"},
                        {"ubig", Types.BIGINT, "BIGINT UNSIGNED", 20, 0, "java.math.BigInteger"},
                        {"label", Types.VARCHAR, "VARCHAR", 20, 0, "java.lang.String"},
                        {"d", Types.DECIMAL, "DECIMAL", 10, 2, "java.math.BigDecimal"},
                        {"dd", Types.DATE, "DATE", 10, 0, "java.sql.Date"},
                        {"dt", Types.TIMESTAMP, "DATETIME", 19, 0, "java.time.LocalDateTime"},
                        {"dt6", Types.TIMESTAMP, "DATETIME", 26, 0, "java.time.LocalDateTime"},
                        {"dbl", Types.DOUBLE, "DOUBLE", 22, 0, "java.lang.Double"},
                        {"flag", Types.BIT, "BIT", 1, 0, "java.lang.Boolean"},
                        {"vb", Types.VARBINARY, "VARBINARY", 16, 0, "[B"},
                        // (The driver names a utf8mb4 TEXT from its byte length.)
                        {"txt", Types.LONGVARCHAR, null, null, 0, "java.lang.String"},
                        {"bl", Types.LONGVARBINARY, "BLOB", 65535, 0, "[B"},
                    };
                    List<String> bad = new ArrayList<>();
                    for (int i = 0; i < want.length; i++) {
                        int col = i + 1;
                        Object[] w = want[i];
                        if (part.equals("flags") || part.equals("bool") != w[0].equals("flag")) {
                            continue;
                        }
                        Object[] g = {md.getColumnLabel(col), md.getColumnType(col), md.getColumnTypeName(col),
                            md.getPrecision(col), md.getScale(col), md.getColumnClassName(col)};
                        for (int j = 0; j < w.length; j++) {
                            if (w[j] != null && !Objects.equals(g[j], w[j])) {
                                bad.add(w[0] + ": got " + java.util.Arrays.toString(g) + " want "
                                        + java.util.Arrays.toString(w));
                                break;
                            }
                        }
                    }
                    Object[][] more = part.equals("types") ? new Object[][] {
                        {"getColumnName of an alias", md.getColumnName(5), "s"},
                        {"getTableName", md.getTableName(1), t},
                        {"isSigned(big)", md.isSigned(3), true},
                        {"isSigned(ubig)", md.isSigned(4), false},
                    } : part.equals("flags") ? new Object[][] {
                        {"isAutoIncrement(id)", md.isAutoIncrement(1), true},
                        {"isAutoIncrement(i)", md.isAutoIncrement(2), false},
                        {"isNullable(id)", md.isNullable(1), ResultSetMetaData.columnNoNulls},
                        {"isNullable(i)", md.isNullable(2), ResultSetMetaData.columnNullable},
                        {"isNullable(s)", md.isNullable(5), ResultSetMetaData.columnNoNulls},
                    } : new Object[0][];
                    for (Object[] m : more) {
                        if (!Objects.equals(m[1], m[2])) {
                            bad.add(m[0] + ": got " + m[1] + " want " + m[2]);
                        }
                    }
                    truth(bad.isEmpty(), String.join("; ", bad));
                }
            }
        }
    }

    static void unicode(String props, String mode) throws Exception {
        String t = "uc_" + mode;
        String[] texts = {"中文字符", "日本語テキスト", "한국어", "😀🚀🎉", "mixed é ü 😀 中"};
        try (Connection c = connect(props)) {
            exec(c, "CREATE TABLE " + t + " (id INT PRIMARY KEY, s VARCHAR(30)) DEFAULT CHARSET=utf8mb4");
            try (PreparedStatement ps = c.prepareStatement("INSERT INTO " + t + " VALUES (?, ?)")) {
                for (int i = 0; i < texts.length; i++) {
                    ps.setInt(1, i);
                    ps.setString(2, texts[i]);
                    ps.executeUpdate();
                }
            }
            try (PreparedStatement ps = c.prepareStatement("SELECT s FROM " + t + " WHERE id = ?")) {
                for (int i = 0; i < texts.length; i++) {
                    ps.setInt(1, i);
                    try (ResultSet rs = ps.executeQuery()) {
                        rs.next();
                        eq(rs.getString(1), texts[i], "round trip " + i);
                    }
                }
            }
            try (PreparedStatement ps = c.prepareStatement("SELECT id FROM " + t + " WHERE s LIKE ? ORDER BY id")) {
                ps.setString(1, "%😀%");
                try (ResultSet rs = ps.executeQuery()) {
                    List<Integer> ids = new ArrayList<>();
                    while (rs.next()) {
                        ids.add(rs.getInt(1));
                    }
                    eq(ids.toString(), "[3, 4]", "LIKE emoji");
                }
            }
        }
    }

    static void batchInsert(String props, boolean rewrite, String name) throws Exception {
        String t = "bi_" + name;
        try (Connection c = connect(props)) {
            exec(c, "CREATE TABLE " + t + " (id INT PRIMARY KEY, k INT, s VARCHAR(20), KEY kk (k))");
            c.setAutoCommit(false);
            int[] counts;
            try (PreparedStatement ps = c.prepareStatement("INSERT INTO " + t + " (id, k, s) VALUES (?, ?, ?)")) {
                for (int i = 1; i <= 1000; i++) {
                    ps.setInt(1, i);
                    ps.setInt(2, i % 7);
                    ps.setString(3, "row " + i + " ✓");
                    ps.addBatch();
                }
                counts = ps.executeBatch();
            }
            c.commit();
            eq(counts.length, 1000, "update counts");
            for (int n : counts) {
                // Rewritten into multi-row INSERTs the driver reports
                // SUCCESS_NO_INFO; one INSERT per row reports 1.
                truth(n == 1 || (rewrite && n == Statement.SUCCESS_NO_INFO), "update count " + n);
            }
            eq(count(c, "SELECT COUNT(*) FROM " + t), 1000L, "rows");
            eq(count(c, "SELECT SUM(id) FROM " + t + " WHERE k = 3"), sumWhere(1000, 7, 3), "sum via index");
            // A batch of plain statements (rewritten into a multi-statement
            // query when allowed).
            try (Statement s = c.createStatement()) {
                for (int i = 1; i <= 50; i++) {
                    s.addBatch("UPDATE " + t + " SET k = 100 WHERE id = " + i);
                }
                counts = s.executeBatch();
            }
            c.commit();
            eq(counts.length, 50, "statement batch counts");
            eq(count(c, "SELECT COUNT(*) FROM " + t + " WHERE k = 100"), 50L, "statement batch effect");
        }
    }

    static long sumWhere(int n, int mod, int k) {
        long s = 0;
        for (int i = 1; i <= n; i++) {
            if (i % mod == k) {
                s += i;
            }
        }
        return s;
    }

    static void batchDuplicate(String props, boolean rewrite, String name) throws Exception {
        String t = "bd_" + name;
        try (Connection c = connect(props)) {
            exec(c, "CREATE TABLE " + t + " (id INT PRIMARY KEY)");
            c.setAutoCommit(false);
            try (PreparedStatement ps = c.prepareStatement("INSERT INTO " + t + " VALUES (?)")) {
                for (int id : new int[] {1, 2, 2, 3}) {
                    ps.setInt(1, id);
                    ps.addBatch();
                }
                try {
                    ps.executeBatch();
                    throw new AssertionError("no BatchUpdateException");
                } catch (BatchUpdateException e) {
                    eq(e.getErrorCode(), 1062, "error code");
                    eq(e.getSQLState(), "23000", "SQLSTATE");
                }
            }
            c.rollback();
            eq(count(c, "SELECT COUNT(*) FROM " + t), 0L, "rows after rollback");
        }
    }

    static void generatedKeys(String props, String name) throws Exception {
        String t = "gk_" + name;
        try (Connection c = connect(props)) {
            exec(c, "CREATE TABLE " + t + " (id BIGINT AUTO_INCREMENT PRIMARY KEY, v VARCHAR(10))");
            try (Statement s = c.createStatement()) {
                s.executeUpdate("INSERT INTO " + t + " (v) VALUES ('a')", Statement.RETURN_GENERATED_KEYS);
                eq(keys(s.getGeneratedKeys()), "[1]", "one row");
                s.executeUpdate("INSERT INTO " + t + " (v) VALUES ('b'), ('c'), ('d')",
                        Statement.RETURN_GENERATED_KEYS);
                eq(keys(s.getGeneratedKeys()), "[2, 3, 4]", "multi-row insert");
            }
            try (PreparedStatement ps = c.prepareStatement("INSERT INTO " + t + " (v) VALUES (?)",
                    Statement.RETURN_GENERATED_KEYS)) {
                ps.setString(1, "e");
                ps.executeUpdate();
                eq(keys(ps.getGeneratedKeys()), "[5]", "prepared insert");
                for (String v : new String[] {"f", "g", "h"}) {
                    ps.setString(1, v);
                    ps.addBatch();
                }
                ps.executeBatch();
                eq(keys(ps.getGeneratedKeys()), "[6, 7, 8]", "batch");
            }
            // The first id of the last INSERT: the rewritten multi-row one, or
            // the batch's last single-row one.
            eq(count(c, "SELECT LAST_INSERT_ID()"), name.contains("_rewrite") ? 6L : 8L,
                    "LAST_INSERT_ID() after the batch");
            eq(count(c, "SELECT MAX(id) FROM " + t), 8L, "max id");
        }
    }

    static String keys(ResultSet rs) throws SQLException {
        List<Long> k = new ArrayList<>();
        while (rs.next()) {
            k.add(rs.getLong(1));
        }
        rs.close();
        return k.toString();
    }

    static void transactions() throws Exception {
        try (Connection a = connect(""); Connection b = connect("")) {
            exec(a, "CREATE TABLE tx (id INT PRIMARY KEY, v INT)", "INSERT INTO tx VALUES (1, 10), (2, 20)");
            a.setAutoCommit(false);
            exec(a, "INSERT INTO tx VALUES (3, 30)", "UPDATE tx SET v = v + 1", "DELETE FROM tx WHERE id = 1");
            eq(count(a, "SELECT COUNT(*) FROM tx"), 2L, "own writes visible");
            eq(count(b, "SELECT SUM(v) FROM tx"), 30L, "other connection sees committed data only");
            a.rollback();
            eq(count(a, "SELECT SUM(v) FROM tx"), 30L, "after rollback");
            exec(a, "INSERT INTO tx VALUES (3, 30)", "UPDATE tx SET v = v + 1");
            a.commit();
            eq(count(b, "SELECT SUM(v) FROM tx"), 63L, "other connection after commit");
            // setAutoCommit(true) commits an open transaction (JDBC and MySQL).
            exec(a, "UPDATE tx SET v = 0 WHERE id = 3");
            a.setAutoCommit(true);
            eq(count(b, "SELECT v FROM tx WHERE id = 3"), 0L, "setAutoCommit(true) committed");
        }
    }

    static void isolation() throws Exception {
        // setAutoCommit(false) sends SET autocommit=0: the first SELECT
        // starts a transaction and, under REPEATABLE READ, its snapshot.
        try (Connection a = connect(""); Connection b = connect("")) {
            exec(a, "CREATE TABLE iso (id INT PRIMARY KEY, v INT)", "INSERT INTO iso VALUES (1, 11)");
            a.setAutoCommit(false);
            eq(count(a, "SELECT v FROM iso WHERE id = 1"), 11L, "first read");
            exec(b, "UPDATE iso SET v = 99 WHERE id = 1");
            eq(count(a, "SELECT v FROM iso WHERE id = 1"), 11L, "repeatable read");
            a.commit();
            eq(count(a, "SELECT v FROM iso WHERE id = 1"), 99L, "new snapshot after commit");
            a.setTransactionIsolation(Connection.TRANSACTION_READ_COMMITTED);
            eq(count(a, "SELECT v FROM iso WHERE id = 1"), 99L, "read committed, first read");
            exec(b, "UPDATE iso SET v = 98 WHERE id = 1");
            eq(count(a, "SELECT v FROM iso WHERE id = 1"), 98L, "read committed sees the new commit");
            a.commit();
        }
    }

    static void savepoints() throws Exception {
        try (Connection a = connect("")) {
            exec(a, "CREATE TABLE sp (id INT PRIMARY KEY)");
            a.setAutoCommit(false);
            exec(a, "INSERT INTO sp VALUES (1)");
            Savepoint s1 = a.setSavepoint("s1");
            exec(a, "INSERT INTO sp VALUES (2)");
            Savepoint s2 = a.setSavepoint();
            exec(a, "INSERT INTO sp VALUES (3)");
            a.rollback(s2);
            eq(count(a, "SELECT COUNT(*) FROM sp"), 2L, "after rollback to s2");
            a.rollback(s1);
            eq(count(a, "SELECT COUNT(*) FROM sp"), 1L, "after rollback to s1");
            exec(a, "INSERT INTO sp VALUES (4)");
            a.releaseSavepoint(s1);
            a.commit();
            eq(count(a, "SELECT SUM(id) FROM sp"), 5L, "committed rows");
        }
    }

    static void updateCounts() throws Exception {
        // Connector/J asks for CLIENT_FOUND_ROWS unless useAffectedRows=true:
        // an UPDATE then counts the rows it matched, changed or not.
        try (Connection c = connect("")) {
            exec(c, "CREATE TABLE uc (id INT PRIMARY KEY, v INT)", "INSERT INTO uc VALUES (1, 1), (2, 1), (3, 2)");
            try (Statement s = c.createStatement()) {
                eq(s.executeUpdate("UPDATE uc SET v = 1 WHERE id <= 3"), 3, "matched rows (found rows)");
            }
        }
        try (Connection c = connect("useAffectedRows=true")) {
            try (Statement s = c.createStatement()) {
                eq(s.executeUpdate("UPDATE uc SET v = 1 WHERE id <= 3"), 0, "changed rows (useAffectedRows)");
                eq(s.executeUpdate("UPDATE uc SET v = 2 WHERE id <= 2"), 2, "changed rows (useAffectedRows)");
            }
        }
    }

    static void errors() throws Exception {
        try (Connection c = connect("")) {
            exec(c, "CREATE TABLE er (id INT PRIMARY KEY, s VARCHAR(3) NOT NULL)", "INSERT INTO er VALUES (1, 'a')");
            SQLException e = expectError(1062, () -> exec(c, "INSERT INTO er VALUES (1, 'b')"));
            truth(e instanceof SQLIntegrityConstraintViolationException, "1062 class " + e.getClass().getName());
            eq(e.getSQLState(), "23000", "1062 SQLSTATE");
            e = expectError(1146, () -> exec(c, "SELECT * FROM nope"));
            truth(e instanceof SQLSyntaxErrorException, "1146 class " + e.getClass().getName());
            eq(e.getSQLState(), "42S02", "1146 SQLSTATE");
            e = expectError(1064, () -> exec(c, "SELEKT 1"));
            truth(e instanceof SQLSyntaxErrorException, "1064 class " + e.getClass().getName());
            e = expectError(1406, () -> exec(c, "INSERT INTO er VALUES (2, 'long')"));
            eq(e.getSQLState(), "22001", "1406 SQLSTATE");
            e = expectError(1048, () -> {
                try (PreparedStatement ps = c.prepareStatement("INSERT INTO er VALUES (?, ?)")) {
                    ps.setInt(1, 3);
                    ps.setNull(2, Types.VARCHAR);
                    ps.executeUpdate();
                }
            });
            truth(e instanceof SQLIntegrityConstraintViolationException, "1048 class " + e.getClass().getName());
            eq(count(c, "SELECT COUNT(*) FROM er"), 1L, "connection usable after errors");
        }
    }

    static void prepareErrors() throws Exception {
        // MySQL resolves names at COM_STMT_PREPARE. (Without
        // emulateUnsupportedPstmts=false the driver would fall back to a
        // client-side statement when the server's prepare fails.)
        try (Connection c = connect("useServerPrepStmts=true&emulateUnsupportedPstmts=false")) {
            SQLException e = expectError(1054, () -> c.prepareStatement("SELECT nope FROM er WHERE id = ?"));
            truth(e instanceof SQLSyntaxErrorException, "1054 from prepare: " + e.getClass().getName());
            e = expectError(1146, () -> c.prepareStatement("SELECT * FROM nope2 WHERE id = ?"));
            truth(e instanceof SQLSyntaxErrorException, "1146 from prepare: " + e.getClass().getName());
        }
    }

    static void lockWait() throws Exception {
        try (Connection a = connect(""); Connection b = connect("")) {
            exec(a, "CREATE TABLE lw (id INT PRIMARY KEY, v INT)", "INSERT INTO lw VALUES (1, 0), (2, 0)");
            exec(b, "SET SESSION innodb_lock_wait_timeout = 1");
            a.setAutoCommit(false);
            b.setAutoCommit(false);
            exec(a, "UPDATE lw SET v = 1 WHERE id = 1");
            exec(b, "UPDATE lw SET v = 2 WHERE id = 2");
            long t0 = System.nanoTime();
            SQLException e = expectError(1205, () -> exec(b, "UPDATE lw SET v = 2 WHERE id = 1"));
            double secs = (System.nanoTime() - t0) / 1e9;
            truth(secs >= 0.8 && secs <= 5, "1205 after " + secs + " s, want about 1 s");
            // The statement was rolled back, not the transaction.
            eq(count(b, "SELECT v FROM lw WHERE id = 2"), 2L, "b's earlier update kept");
            a.commit();
            b.commit();
            eq(count(a, "SELECT SUM(v) FROM lw"), 3L, "both committed");
            a.setAutoCommit(true);
            System.out.println("  (1205 arrived as " + e.getClass().getSimpleName() + ", SQLSTATE "
                    + e.getSQLState() + ")");
        }
    }

    static void deadlock() throws Exception {
        try (Connection a = connect(""); Connection b = connect("")) {
            exec(a, "CREATE TABLE dl (id INT PRIMARY KEY, v INT)", "INSERT INTO dl VALUES (1, 0), (2, 0)");
            a.setAutoCommit(false);
            b.setAutoCommit(false);
            exec(a, "UPDATE dl SET v = v + 1 WHERE id = 1");
            exec(b, "UPDATE dl SET v = v + 1 WHERE id = 2");
            AtomicReference<SQLException> aErr = new AtomicReference<>();
            CountDownLatch started = new CountDownLatch(1);
            Thread ta = new Thread(() -> {
                started.countDown();
                try {
                    exec(a, "UPDATE dl SET v = v + 1 WHERE id = 2");
                } catch (SQLException e) {
                    aErr.set(e);
                }
            });
            ta.start();
            started.await();
            Thread.sleep(300);
            SQLException bErr = null;
            try {
                exec(b, "UPDATE dl SET v = v + 1 WHERE id = 1");
                b.commit();
            } catch (SQLException e) {
                bErr = e;
            }
            ta.join(60000);
            truth(!ta.isAlive(), "the waiting connection finished");
            SQLException victim = bErr != null ? bErr : aErr.get();
            truth((bErr == null) != (aErr.get() == null), "exactly one deadlock error: a=" + aErr.get() + " b=" + bErr);
            eq(victim.getErrorCode(), 1213, "error code");
            eq(victim.getSQLState(), "40001", "SQLSTATE");
            eq(victim.getClass().getSimpleName(), "MySQLTransactionRollbackException", "exception class");
            if (bErr != null) {
                a.commit();
                b.rollback();
            } else {
                a.rollback();
            }
            eq(count(a, "SELECT SUM(v) FROM dl"), 2L, "only the winner's two increments");
            a.commit();
        }
    }

    static void largeResult() throws Exception {
        try (Connection c = connect("useServerPrepStmts=true")) {
            exec(c, "CREATE TABLE lr (id INT PRIMARY KEY, pad VARCHAR(100))");
            c.setAutoCommit(false);
            try (PreparedStatement ps = c.prepareStatement("INSERT INTO lr VALUES (?, ?)")) {
                for (int i = 1; i <= 20000; i++) {
                    ps.setInt(1, i);
                    ps.setString(2, "x".repeat(100));
                    ps.addBatch();
                    if (i % 2000 == 0) {
                        ps.executeBatch();
                    }
                }
            }
            c.commit();
            try (PreparedStatement ps = c.prepareStatement("SELECT id, pad FROM lr WHERE id > ? ORDER BY id")) {
                ps.setInt(1, 0);
                long n = 0;
                long sum = 0;
                try (ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) {
                        n++;
                        sum += rs.getInt(1);
                        if (rs.getString(2).length() != 100) {
                            throw new AssertionError("pad of row " + rs.getInt(1));
                        }
                    }
                }
                eq(n, 20000L, "rows");
                eq(sum, 20000L * 20001 / 2, "sum of ids");
            }
        }
    }
}
