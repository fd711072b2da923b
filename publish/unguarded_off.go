//go:build !binlogstream_unguarded

package publish

// unguarded is false in every build but the zombie test's negative
// control (see unguarded_on.go).
const unguarded = false
