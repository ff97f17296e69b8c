-- The mariadb command-line client against `cairndb server`, run by
-- scripts/sql-clients.sh as
--   mariadb -h127.0.0.1 -P$port -uroot --force --unbuffered -v < cli-smoke.sql
-- and compared with cli-smoke.expected, which is what MySQL 8.0 prints for
-- this file (errors go to stderr, merged in order).
CREATE DATABASE smoke;
USE smoke;
SHOW DATABASES LIKE 'smoke%';
SELECT DATABASE();

-- DDL
CREATE TABLE dept (
  id INT NOT NULL PRIMARY KEY,
  name VARCHAR(30) NOT NULL,
  UNIQUE KEY uk_name (name)
) DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci;
CREATE TABLE emp (
  id INT NOT NULL AUTO_INCREMENT,
  name VARCHAR(40) NOT NULL,
  dept_id INT,
  salary DECIMAL(10,2) NOT NULL DEFAULT 0,
  hired DATE,
  PRIMARY KEY (id),
  KEY k_dept (dept_id)
) DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci;
CREATE TABLE IF NOT EXISTS dept (id INT PRIMARY KEY);
SHOW WARNINGS;
CREATE INDEX k_hired ON emp (hired);
SHOW TABLES;
SHOW COLUMNS FROM emp;
DESCRIBE dept;
SELECT INDEX_NAME, SEQ_IN_INDEX, COLUMN_NAME, NON_UNIQUE
  FROM information_schema.STATISTICS
  WHERE TABLE_SCHEMA = 'smoke' AND TABLE_NAME = 'emp'
  ORDER BY NON_UNIQUE, INDEX_NAME, SEQ_IN_INDEX;
SHOW VARIABLES LIKE 'autocommit';

-- Multi-row inserts, AUTO_INCREMENT, LAST_INSERT_ID
INSERT INTO dept VALUES (1, 'eng'), (2, 'sales'), (3, 'ops'), (4, 'legal');
SELECT ROW_COUNT();
INSERT INTO emp (name, dept_id, salary, hired) VALUES
  ('ann', 1, 100.50, '2020-01-15'),
  ('bob', 1, 90, '2021-03-01'),
  ('cid', 2, 70.25, '2019-07-30'),
  ('dee', 2, 80, '2022-11-11'),
  ('eve', 3, 60, NULL),
  ('fay', NULL, 50, '2023-05-05');
SELECT LAST_INSERT_ID();
INSERT INTO emp SET name = 'gus', dept_id = 3, salary = 65.5;
SELECT LAST_INSERT_ID();
SELECT * FROM emp ORDER BY id;
SELECT COUNT(*), COUNT(dept_id), COUNT(DISTINCT dept_id), COUNT(hired) FROM emp;

-- Filters and expressions
SELECT id, name FROM emp WHERE salary BETWEEN 60 AND 80 ORDER BY salary DESC, id;
SELECT name FROM emp WHERE name LIKE '_e%' ORDER BY name;
SELECT name FROM emp WHERE dept_id IN (1, 3) AND hired IS NOT NULL ORDER BY hired;
SELECT name, dept_id FROM emp ORDER BY dept_id, name LIMIT 3;
SELECT name FROM emp ORDER BY id LIMIT 2 OFFSET 3;
SELECT name FROM dept WHERE name = 'ENG';
SELECT name,
       CASE WHEN salary >= 90 THEN 'high' WHEN salary >= 65 THEN 'mid' ELSE 'low' END AS band,
       IFNULL(hired, 'never') AS h,
       CONCAT(UPPER(name), '-', COALESCE(dept_id, 0)) AS tag
  FROM emp ORDER BY id;
SELECT 7 / 2, 7 DIV 2, 7 % 3, -7 % 3, 1 / 0, NULL = NULL, NULL <=> NULL, 'abc' = 'ABC';
SELECT CAST('12abc' AS SIGNED);
SHOW WARNINGS;

-- Joins
SELECT e.name, d.name AS dept
  FROM emp e JOIN dept d ON e.dept_id = d.id
  ORDER BY e.name;
SELECT d.name, COUNT(e.id) AS n
  FROM dept d LEFT JOIN emp e ON e.dept_id = d.id
  GROUP BY d.name
  ORDER BY n DESC, d.name;
SELECT e.name, d.name AS dept
  FROM emp e LEFT JOIN dept d ON d.id = e.dept_id
  WHERE d.id IS NULL;

-- GROUP BY / HAVING and a derived table
SELECT dept_id, COUNT(*) AS n, SUM(salary) AS total, AVG(salary) AS mean,
       MIN(hired), MAX(hired)
  FROM emp GROUP BY dept_id HAVING COUNT(*) >= 2 ORDER BY dept_id;
SELECT dept_id, SUM(salary) AS total FROM emp
  GROUP BY dept_id HAVING total > 100 ORDER BY total DESC;
SELECT MAX(total) FROM (SELECT dept_id, SUM(salary) AS total FROM emp GROUP BY dept_id) AS t;
SELECT DISTINCT dept_id FROM emp ORDER BY dept_id DESC;
SELECT d.name, MAX(e.salary) AS top FROM dept d JOIN emp e ON e.dept_id = d.id
  GROUP BY d.name ORDER BY COUNT(*) DESC, MAX(e.salary) LIMIT 2;

-- UPDATE and DELETE with WHERE, ORDER BY, LIMIT
UPDATE emp SET salary = salary * 1.10 WHERE dept_id = 1;
SELECT ROW_COUNT();
UPDATE emp SET salary = salary WHERE dept_id = 1;
SELECT ROW_COUNT();
UPDATE emp SET salary = salary + 10 WHERE dept_id = 2 ORDER BY salary LIMIT 1;
SELECT ROW_COUNT();
UPDATE emp SET dept_id = 4 WHERE dept_id IS NULL LIMIT 5;
SELECT name, dept_id, salary FROM emp ORDER BY id;
DELETE FROM emp WHERE salary < 70 ORDER BY salary DESC LIMIT 1;
SELECT ROW_COUNT();
DELETE FROM emp WHERE dept_id = 4;
SELECT ROW_COUNT();
SELECT id, name FROM emp ORDER BY id;

-- Upserts, assignment order, escapes
CREATE TABLE kv (k VARCHAR(10) PRIMARY KEY, a INT, b INT, note VARCHAR(40));
INSERT INTO kv VALUES ('x', 1, 0, 'tab\there'), ('y', 2, 0, 'it''s "quoted"');
INSERT INTO kv (k, a, b) VALUES ('x', 5, 5) ON DUPLICATE KEY UPDATE a = a + VALUES(a);
SELECT ROW_COUNT();
INSERT INTO kv (k, a, b) VALUES ('z', 7, 7) ON DUPLICATE KEY UPDATE a = a + VALUES(a);
SELECT ROW_COUNT();
UPDATE kv SET a = a + 1, b = a * 10 WHERE k = 'y';
REPLACE INTO kv VALUES ('z', 8, 8, 'replaced');
SELECT ROW_COUNT();
SELECT * FROM kv ORDER BY k;
SELECT k FROM kv WHERE a > '5' ORDER BY k;
TRUNCATE TABLE kv;
SELECT COUNT(*) FROM kv;
DROP TABLE kv;

-- Transactions and savepoints
START TRANSACTION;
INSERT INTO dept VALUES (10, 'tmp10');
SAVEPOINT s1;
INSERT INTO dept VALUES (11, 'tmp11');
SAVEPOINT s2;
INSERT INTO dept VALUES (12, 'tmp12');
ROLLBACK TO SAVEPOINT s2;
SELECT id FROM dept WHERE id >= 10 ORDER BY id;
ROLLBACK TO s1;
SELECT id FROM dept WHERE id >= 10 ORDER BY id;
RELEASE SAVEPOINT s1;
ROLLBACK TO SAVEPOINT s1;
COMMIT;
SELECT id, name FROM dept WHERE id >= 10;
BEGIN;
DELETE FROM dept WHERE id = 10;
UPDATE dept SET name = 'changed' WHERE id = 1;
SELECT COUNT(*) FROM dept;
ROLLBACK;
SELECT id, name FROM dept ORDER BY id;
SET autocommit = 0;
INSERT INTO dept VALUES (20, 'uncommitted');
ROLLBACK;
INSERT INTO dept VALUES (21, 'committed');
COMMIT;
SET autocommit = 1;
SELECT id FROM dept WHERE id >= 20;
SELECT @@autocommit, @@transaction_isolation;

-- Errors (the client goes on with --force)
INSERT INTO dept VALUES (1, 'again');
INSERT INTO dept VALUES (30, 'eng');
INSERT INTO dept VALUES (31, 'ENG');
INSERT INTO emp (name) VALUES (NULL);
INSERT INTO emp (name) VALUES ('a-name-that-is-longer-than-forty-characters-long');
INSERT INTO dept VALUES (2147483648, 'big');
INSERT INTO emp (name, hired) VALUES ('bad date', '2021-02-30');
SELECT * FROM nope;
SELECT nope FROM dept;
SELECT * FORM dept;
DROP TABLE nope;
CREATE TABLE dept (id INT PRIMARY KEY);
USE nope;
ROLLBACK TO SAVEPOINT never;
INSERT IGNORE INTO dept VALUES (1, 'ignored');
SHOW WARNINGS;
INSERT IGNORE INTO dept VALUES (40, 'a-department-name-that-is-far-too-long');
SHOW WARNINGS;
SELECT id, name FROM dept WHERE id = 40;
SELECT COUNT(*) FROM dept;

-- Clean up
DROP TABLE emp, dept;
SHOW TABLES;
DROP DATABASE smoke;
SHOW DATABASES LIKE 'smoke%';
