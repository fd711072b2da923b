package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/binlogstream/binlogstream/cmd/internal/clikit"
)

// --help starts with the synopsis and names every flag's argument; a
// usage error is its cause and a pointer to --help, two lines.
func TestHelpAndUsageErrors(t *testing.T) {
	var stderr bytes.Buffer
	assert.Equal(t, 0, cli(context.Background(), []string{"--help"}, &stderr))
	assert.True(t, strings.HasPrefix(stderr.String(), "usage: binlog-replicate --source DSN --target DSN --tables PATTERNS [flags]\n"), stderr.String())
	assert.Contains(t, stderr.String(), "-tables PATTERNS")
	assert.Contains(t, stderr.String(), "-version")
	assert.Empty(t, clikit.CheckPlaceholders(newFlagSet(new(options), new(rawFlags), &stderr)))

	for _, c := range []struct {
		args []string
		msg  string
	}{
		{nil, "binlog-replicate: missing required flags --source, --target and --tables\n"},
		{[]string{"--bogus"}, "binlog-replicate: flag provided but not defined: -bogus\n"},
		{[]string{"--source", "r:secret@tcp(h:1)/", "--tables", "a.b"}, "binlog-replicate: missing required flag --target\n"},
	} {
		stderr.Reset()
		assert.Equal(t, 2, cli(context.Background(), c.args, &stderr), "%q", c.args)
		assert.Equal(t, c.msg+"Run 'binlog-replicate --help' for the flags.\n", stderr.String(), "%q", c.args)
	}

	stderr.Reset()
	assert.Equal(t, 0, cli(context.Background(), []string{"--version"}, &stderr))
	assert.True(t, strings.HasPrefix(stderr.String(), "binlog-replicate "), stderr.String())
	assert.Equal(t, 1, strings.Count(stderr.String(), "\n"))
}
