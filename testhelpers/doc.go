// Package testhelpers holds what the tests and demos of binlogstream share:
// an encoder that writes real MySQL/MariaDB binlog events (go-mysql has
// none), a Builder that scripts binlogs that read like the ones they model,
// and a FakeSource that serves them as a server's dump would, decoded by
// go-mysql's own parser, with faults on demand.
//
// It imports binlogstream (FakeSource implements binlogstream.Source), so
// tests of the root package that use it must live in package
// binlogstream_test.
package testhelpers
