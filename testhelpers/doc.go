// Package testhelpers holds what the tests of binlogstream share: the
// binlog encoder, Builder and dump engine of internal/binlogbuild under
// their names here (aliases.go), a FakeSource that serves built binlogs as
// a binlogstream.Source, decoded as the real sources decode, with faults
// on demand, and the build of a command's binary (Command). Programs do
// not import it: it links package testing.
//
// It imports binlogstream (FakeSource implements binlogstream.Source), so
// tests of the root package that use it must live in package
// binlogstream_test.
package testhelpers
