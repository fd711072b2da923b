package clikit

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReadPasswordFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(body), mode))
		require.NoError(t, os.Chmod(p, mode))
		return p
	}
	pw, err := ReadPasswordFile("--pw", write("ok", "s3cret\r\nignored\n", 0o600))
	require.NoError(t, err)
	assert.Equal(t, "s3cret", pw)
	pw, err = ReadPasswordFile("--pw", write("nolf", "only", 0o400))
	require.NoError(t, err)
	assert.Equal(t, "only", pw)

	for _, c := range []struct{ path, want string }{
		{write("open", "s3cret\n", 0o644), "--pw " + dir + "/open: mode 0644 gives group or others access; run chmod 600"},
		{write("empty", "\nsecond\n", 0o600), "the first line is empty"},
		{write("big", strings.Repeat("x", 4097), 0o600), "longer than 4096 bytes"},
		{filepath.Join(dir, "missing"), "--pw: open"},
	} {
		_, err := ReadPasswordFile("--pw", c.path)
		require.Error(t, err, c.path)
		assert.Contains(t, err.Error(), c.want)
		assert.NotContains(t, err.Error(), "s3cret")
	}

	t.Setenv("MYSQL_PWD", "from-env")
	pw, err = DefaultPassword("")
	require.NoError(t, err)
	assert.Equal(t, "from-env", pw)
}
