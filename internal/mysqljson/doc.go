// Package mysqljson reads MySQL's partial JSON updates: MySQL's binary
// JSON decoded into a small document tree and written as text, the binary
// diff vector a PARTIAL_UPDATE_ROWS_EVENT carries for a JSON column,
// MySQL's JSON path syntax, the diffs applied with the semantics of
// apply_json_diffs in MySQL's sql/json_diff.cc, and the row images of such
// an event read from its raw bytes, where the diff vectors are (go-mysql
// v1.16.0 decodes only the first diff of a vector). No I/O.
package mysqljson
