//go:build !binlogstream_unfenced

package publish

// unfenced is false in every build but the tests' negative control (see
// unfenced_on.go).
const unfenced = false
