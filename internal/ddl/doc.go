// Package ddl reads DDL statement text into the TiDB parser's AST. Where
// the parser stops at MariaDB's or MySQL 8's syntax it does not know (a
// collation, a column type, SYSTEM VERSIONING, PERIOD FOR, CONVERT
// PARTITION, NATIONAL types, ...), the text is rewritten into what it
// reads with the same columns, and what the rewrite took out is returned
// as Notes. It also finds the tables a statement names without the
// parser (Targets), for a statement the parser cannot read. Pure: no I/O.
package ddl
