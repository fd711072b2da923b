// Package tailline writes the JSON lines of binlog-tail: one per row
// change, per Table_map, per statement and per progress point, each
// ending with the resume token for the moment right after it. Both
// binlog-tail (which appends them to its output file) and binlog-publish
// (which sends each as one JetStream message) use it, so a line is the
// same bytes wherever it goes. The format is documented in
// cmd/binlog-tail/doc.go.
package tailline
