package clikit

import (
	"bytes"
	"errors"
	"flag"
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestMissing(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	a, b, c := fs.String("a", "", ""), fs.String("b", "", ""), fs.String("c", "", "")
	_, _, _ = a, b, c
	assert.NoError(t, fs.Parse([]string{"-b", "1"}))
	assert.EqualError(t, Missing(fs, "a", "b", "c"), "missing required flags --a and --c")
	assert.EqualError(t, Missing(fs, "a", "b"), "missing required flag --a")
	assert.NoError(t, Missing(fs, "b"))
}

func TestParseHelpVersionAndErrors(t *testing.T) {
	var out bytes.Buffer
	newFS := func() *flag.FlagSet {
		out.Reset()
		fs := flag.NewFlagSet("cmd", flag.ContinueOnError)
		fs.SetOutput(&out)
		fs.String("file", "", "read `FILE`")
		return fs
	}
	h := Help{Synopsis: "usage: cmd --file FILE\n", Text: "Does things.\n", After: "After.\n"}
	assert.ErrorIs(t, Parse(newFS(), []string{"-h"}, h), flag.ErrHelp)
	assert.Contains(t, out.String(), "usage: cmd --file FILE\n\nDoes things.\n  -file FILE\n")
	assert.Contains(t, out.String(), "After.\n")

	err := Parse(newFS(), []string{"--version"}, h)
	assert.ErrorIs(t, err, flag.ErrHelp)
	assert.True(t, errors.Is(err, ErrVersion))
	assert.Regexp(t, `^cmd \S+`, out.String())

	err = Parse(newFS(), []string{"--nope"}, h)
	assert.EqualError(t, err, "flag provided but not defined: -nope")
	assert.Empty(t, out.String(), "a bad flag prints nothing by itself")
	assert.EqualError(t, Parse(newFS(), []string{"x"}, h), `unexpected argument "x"`)

	var stderr bytes.Buffer
	assert.Equal(t, 2, UsageError(&stderr, "cmd", err))
	assert.Equal(t, "cmd: flag provided but not defined: -nope\nRun 'cmd --help' for the flags.\n", stderr.String())

	fs := newFS()
	fs.String("bare", "", "no name")
	assert.Equal(t, []string{"--bare string"}, CheckPlaceholders(fs))
}

func TestVersionOf(t *testing.T) {
	bi := &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "v1.2.3"}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.time", Value: "2026-01-02T03:04:05Z"}, {Key: "vcs.modified", Value: "true"}}}
	assert.Equal(t, "tool v1.2.3 commit abc123 (modified) 2026-01-02T03:04:05Z go1.26.0", versionOf("tool", bi))
	assert.Equal(t, "tool (devel) go1.26.0", versionOf("tool", &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "(devel)"}}))
}
