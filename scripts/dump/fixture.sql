-- The dump round trip's schema and rows (scripts/dump-roundtrip.sh): every
-- column type both servers support, indexes (prefix key parts too), a
-- view, foreign keys, CHECK
-- constraints, comments, and values that stress quoting (quotes,
-- backslashes, NUL and other control bytes, raw binary, 4-byte UTF-8,
-- range ends, NULLs). Loaded into the current database.
CREATE TABLE parent (
  id INT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  code VARCHAR(20) NOT NULL,
  UNIQUE KEY uk_code (code)
) COMMENT='referenced rows';
CREATE TABLE t_all (
  id INT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  ti TINYINT, tu TINYINT UNSIGNED, si SMALLINT, su SMALLINT UNSIGNED,
  mi MEDIUMINT, mu MEDIUMINT UNSIGNED, ii INT, iu INT UNSIGNED,
  bi BIGINT, bu BIGINT UNSIGNED NOT NULL DEFAULT 0,
  b BOOL, de DECIMAL(12,3), dz DECIMAL(38,10), f FLOAT, d DOUBLE,
  c CHAR(5), vc VARCHAR(100) NOT NULL DEFAULT 'x' COMMENT 'a comment with ''quotes''',
  tt TINYTEXT, tx TEXT, mt MEDIUMTEXT, lt LONGTEXT,
  bn BINARY(4), vb VARBINARY(20), tb TINYBLOB, bl BLOB, mb MEDIUMBLOB, lb LONGBLOB,
  cb VARCHAR(10) COLLATE utf8mb4_bin,
  dt DATE, dtt DATETIME, dt3 DATETIME(3), dt6 DATETIME(6), ts TIMESTAMP NULL, ts2 TIMESTAMP(2) NULL,
  pid INT,
  UNIQUE KEY uk (vc, id), KEY k_dt (dt, dtt), KEY k_pid (pid),
  KEY k_tx (tx(10)), KEY k_vblt (vb(3), lt(5)),
  CONSTRAINT fk_parent FOREIGN KEY (pid) REFERENCES parent (id) ON DELETE SET NULL,
  CONSTRAINT chk_ti CHECK (ti IS NULL OR ti > -100)
) COMMENT='every type';
CREATE TABLE child (
  id INT PRIMARY KEY,
  pid INT NOT NULL,
  note VARCHAR(30),
  KEY k_pid (pid),
  FOREIGN KEY (pid) REFERENCES parent (id) ON DELETE CASCADE
);
CREATE TABLE nopk (a INT, b VARCHAR(10));
CREATE TABLE t_more (
  id INT PRIMARY KEY,
  e ENUM('small', 'medium', 'large', 'it''s') NOT NULL DEFAULT 'medium',
  st SET('a', 'b', 'c', 'd'),
  y YEAR, tm TIME, tm3 TIME(3), bt BIT(5), b64 BIT(64),
  js JSON,
  KEY k_e (e), KEY k_tm (tm)
);
INSERT INTO parent (code) VALUES ('one'), ('two'), ('three');
INSERT INTO t_all (ti, tu, si, su, mi, mu, ii, iu, bi, bu, b, de, dz, f, d, c, vc, tt, tx, mt, lt,
                   bn, vb, tb, bl, mb, lb, cb, dt, dtt, dt3, dt6, ts, ts2, pid) VALUES
 (-99, 255, -32768, 65535, -8388608, 16777215, -2147483648, 4294967295,
  -9223372036854775808, 18446744073709551615, 1, -123456789.125, 1234567890123456789012345678.0123456789,
  1.5, 2.25e100, 'ab', 'it''s "quoted" \\ back', 'tiny', 'multi\nline\ttab\r end', 'medium', REPEAT('long ', 300),
  'ab\0\1', x'00ff10', x'fffe', x'deadbeef00', x'00', x'ff00ff', 'Case',
  '2024-02-29', '2024-02-29 23:59:59', '2024-02-29 23:59:59.123', '1999-12-31 23:59:59.999999',
  '2020-01-01 00:00:00', '2038-01-19 03:14:07.99', 1),
 (NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0, NULL, NULL, NULL, NULL, NULL, NULL,
  'ünïcödé 😀 ✓', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
  NULL, NULL, NULL, NULL, NULL, NULL, NULL),
 (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, -0.25, -1e-300, '', '', '', '', '', '',
  '', '', '', '', '', '', '', '1000-01-01', '1000-01-01 00:00:00', '9999-12-31 23:59:59.999',
  '9999-12-31 23:59:59.999999', '1970-01-02 00:00:01', '1970-01-02 00:00:01.5', 2);
INSERT INTO child VALUES (1, 1, 'a'), (2, 2, NULL), (3, 2, 'semi;colon'), (4, 3, '/* not a comment */');
INSERT INTO nopk VALUES (1, 'x'), (1, 'x'), (NULL, NULL);
INSERT INTO t_more VALUES
 (1, 'large', 'c,a', 2024, '-838:59:59', '12:34:56.789', b'10101', 18446744073709551615,
  '{"a": 1, "bb": [true, null, 2.5, "é", {"c": "d e"}]}'),
 (2, 'it''s', '', 1901, '00:00:00', '-00:00:01.5', b'0', 0, '[]'),
 (3, 'small', 'a,b,c,d', 2155, '838:59:59', NULL, NULL, NULL, '"just a string"'),
 (4, DEFAULT, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
CREATE VIEW v_join AS
  SELECT t.id, t.vc, p.code FROM t_all t LEFT JOIN parent p ON p.id = t.pid WHERE t.id > 0;
