"""The DB-Bench RETRIEVE corpus: short notes on the MySQL a DB-Bench task needs, written for this project.

Each entry is ``(doc_id, title, text)``; :data:`TYPE_DOCS` names the note each question type needs and
:data:`QUOTING_DOC` the note a task needs when its table or column names must be quoted.
"""

from __future__ import annotations

MYSQL_NOTES: tuple[tuple[str, str, str], ...] = (
    ("mysql-insert", "INSERT INTO: add a new row",
     "To add, insert or record a new entry in a table: INSERT INTO `table` (`col1`, `col2`) VALUES ('v1', 'v2'). "
     "List the columns in the order of the values. Every column of a DB-Bench table is TEXT, so quote every "
     "value, numbers included, exactly as given in the question: the grader hashes the stored text, so "
     "'Aoharu Ride' and 'Aoharu ride' are different rows even though comparisons ignore case."),
    ("mysql-update", "UPDATE ... SET ... WHERE: change existing rows",
     "To change, modify, set, correct or update values: UPDATE `table` SET `col` = 'new value' WHERE `key` = "
     "'which row'. Without WHERE every row changes. Several columns: SET `a` = '1', `b` = '2'. The WHERE "
     "clause must select exactly the rows the question names; check it first with a SELECT using the same WHERE."),
    ("mysql-delete", "DELETE FROM ... WHERE: remove rows",
     "To delete, remove or drop rows: DELETE FROM `table` WHERE condition. Without WHERE the table is emptied. "
     "Combine conditions with AND (all must hold) or OR (any may hold). Run SELECT COUNT(*) with the same WHERE "
     "first to see how many rows will go."),
    ("mysql-count", "COUNT: how many rows match",
     "How many, number of, count of: SELECT COUNT(*) FROM `table` WHERE condition counts matching rows. "
     "COUNT(`col`) skips NULLs; COUNT(DISTINCT `col`) counts different values, e.g. how many different teams. "
     "The answer is one number."),
    ("mysql-aggregate", "SUM, AVG, MIN, MAX: totals, averages, lowest and highest values",
     "Total, sum, add up: SUM(`col`). Average, mean: AVG(`col`), often ROUND(AVG(`col`), 2). Lowest, smallest, "
     "least, earliest: MIN. Highest, largest, most, latest: MAX. DB-Bench columns are TEXT: SUM and AVG convert "
     "text to numbers, but MIN and MAX compare text as text ('9' > '10'), so write MAX(`col` + 0) or "
     "MAX(CAST(`col` AS DECIMAL(20,4))) for numeric columns. The answer is one number."),
    ("mysql-where-compare", "Comparisons in WHERE: =, <>, <, >, <=, >=, BETWEEN",
     "Which rows have more than, less than, at least, at most, over, under, before or after a value: "
     "`col` > 5 compares numbers when the right side is a number, even on TEXT columns ('12 goals' counts as "
     "12). More than is >, at least is >=, less than is <, at most is <=. BETWEEN a AND b includes both ends. "
     "Text comparisons ignore case and accents: 'södertälje' = 'Sodertalje'."),
    ("mysql-order-limit", "ORDER BY and LIMIT: the highest, lowest, first or last row",
     "Which row has the highest, most, largest, best, first, last: SELECT `name` FROM `table` ORDER BY `col` "
     "DESC LIMIT 1 (ASC for the lowest, least, earliest). On TEXT columns ORDER BY sorts text ('100' before "
     "'20'); order numbers with ORDER BY `col` + 0 DESC. LIMIT n returns n rows; LIMIT 1 for a single answer."),
    ("mysql-select-where", "SELECT ... WHERE: look up a value",
     "What, which, who, when, where questions about one row: SELECT `wanted column` FROM `table` WHERE "
     "`known column` = 'known value'. Combine conditions with AND. SELECT DISTINCT removes repeated answers. "
     "Use LIKE '%word%' for a value that contains a word; % matches any text, _ one character."),
    ("mysql-quoting", "Quoting table and column names with backticks",
     "Names with spaces, punctuation or reserved words must be quoted with backticks: SELECT `No. in season` "
     "FROM `Olympic Medal Table`. Double quotes make a string in MySQL, not a name, so FROM \"My Table\" is a "
     "syntax error. Strings use single quotes; a quote inside a string is written \\' or ''."),
    ("mysql-show-describe", "SHOW TABLES and DESCRIBE: exploring a database",
     "SHOW TABLES lists the tables of the current database. DESCRIBE `table` (or SHOW COLUMNS FROM `table`) "
     "lists its columns with their types. SELECT * FROM `table` LIMIT 5 shows the first rows; SELECT DISTINCT "
     "`col` FROM `table` shows how values are spelled before you filter on them."),
    ("mysql-null", "NULL values",
     "NULL means no value. Test it with IS NULL or IS NOT NULL; col = NULL is never true. COUNT(`col`) and "
     "AVG(`col`) skip NULLs. IFNULL(`col`, 0) replaces NULL."),
    ("mysql-group-by", "GROUP BY: one result per group",
     "GROUP BY `col` returns one row per distinct value; combine with COUNT(*), SUM, AVG, MIN or MAX per group. "
     "HAVING filters groups after aggregation: HAVING COUNT(*) > 2. ORDER BY COUNT(*) DESC LIMIT 1 finds the "
     "most frequent value."),
    ("mysql-strings", "String functions",
     "CONCAT(a, b) joins strings; SUBSTRING(s, start, length) cuts; LENGTH(s) counts bytes and CHAR_LENGTH(s) "
     "characters; REPLACE(s, ',', '') removes thousands separators before a numeric comparison; LOWER and UPPER "
     "change case; TRIM removes surrounding spaces."),
    ("mysql-transactions", "Transactions and COMMIT",
     "InnoDB statements run inside a transaction; autocommit commits each statement. START TRANSACTION ... "
     "ROLLBACK undoes changes. DDL such as CREATE, ALTER or DROP commits implicitly and cannot be rolled back."),
)

TYPE_DOCS: dict[str, str] = {
    "INSERT": "mysql-insert",
    "UPDATE": "mysql-update",
    "DELETE": "mysql-delete",
    "counting": "mysql-count",
    "aggregation-SUM": "mysql-aggregate",
    "aggregation-AVG": "mysql-aggregate",
    "aggregation-MIN": "mysql-aggregate",
    "aggregation-MAX": "mysql-aggregate",
    "comparison": "mysql-where-compare",
    "ranking": "mysql-order-limit",
    "other": "mysql-select-where",
}
QUOTING_DOC = "mysql-quoting"
