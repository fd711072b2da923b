//go:build binlogstream_unfenced

package publish

// unfenced, in a build with the tag binlogstream_unfenced (the negative
// control of cmd/binlog-publish's tests, never a release), turns off what
// makes the stream exact: the resume from the stream's last message, the
// Nats-Msg-Ids and the expected last sequence.
const unfenced = true
