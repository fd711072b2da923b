// Package binlogbuild writes real MySQL/MariaDB binlogs (go-mysql has no
// encoder): an encoder for each event, a Builder that scripts binlogs that
// read like the ones they model, and a FakeSource that serves them as a
// server's dump would, decoded or as the bytes a server sends. Tests reach
// it through testhelpers; the fake primary behind binlog-tail's demo
// serves its binlogs. It does not import binlogstream.
package binlogbuild
