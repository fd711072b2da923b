package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// --help starts with the synopsis and names every flag's argument; a
// usage error is its cause and a pointer to --help, every missing
// required flag named at once.
func TestHelpAndUsageErrors(t *testing.T) {
	var stderr bytes.Buffer
	assert.Equal(t, 0, cli(context.Background(), []string{"--help"}, &stderr))
	assert.True(t, strings.HasPrefix(stderr.String(), "usage: binlog-publish --dsn DSN --nats URL[,URL...] --stream NAME\n"), stderr.String())
	assert.NotContains(t, stderr.String(), " value\n")
	for _, placeholder := range []string{" string\n", " int\n", " uint\n"} {
		assert.NotContains(t, stderr.String(), placeholder)
	}

	for _, c := range []struct {
		args []string
		msg  string
	}{
		{nil, "binlog-publish: missing required flags --dsn, --nats and --stream (or --kafka in place of --nats and --stream)\n"},
		{[]string{"--nats", "nats://h:4222"}, "binlog-publish: missing required flags --dsn and --stream\n"},
		{[]string{"--bogus"}, "binlog-publish: flag provided but not defined: -bogus\n"},
	} {
		stderr.Reset()
		assert.Equal(t, 2, cli(context.Background(), c.args, &stderr), "%q", c.args)
		assert.Equal(t, c.msg+"Run 'binlog-publish --help' for the flags.\n", stderr.String(), "%q", c.args)
	}
	stderr.Reset()
	assert.Equal(t, 0, cli(context.Background(), []string{"--version"}, &stderr))
	assert.True(t, strings.HasPrefix(stderr.String(), "binlog-publish "), stderr.String())
}
