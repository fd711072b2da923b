package binlogstream_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/binlogstream/binlogstream/testhelpers/mariadb"
)

// exampleComment returns the lines of the comment in fn's body of
// example_server_test.go that follow marker, without the "// ".
func exampleComment(t *testing.T, fn, marker string) []string {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "example_server_test.go", nil, parser.ParseComments)
	require.NoError(t, err)
	var body *ast.BlockStmt
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok && fd.Name.Name == fn {
			body = fd.Body
		}
	}
	require.NotNil(t, body, fn)
	for _, cg := range f.Comments {
		if cg.Pos() < body.Lbrace || cg.End() > body.Rbrace {
			continue
		}
		text := cg.Text()
		if i := strings.Index(text, marker); i >= 0 {
			return strings.Split(strings.TrimSpace(text[i+len(marker):]), "\n")
		}
	}
	t.Fatalf("no %q comment in %s", marker, fn)
	return nil
}

// captureStdout runs f with os.Stdout going to a pipe, as go test does
// for an example, and returns what it printed.
func captureStdout(t *testing.T, f func()) string {
	t.Helper()
	r, w, err := os.Pipe()
	require.NoError(t, err)
	stdout := os.Stdout
	os.Stdout = w
	out := make(chan string)
	go func() {
		b, _ := io.ReadAll(r)
		out <- string(b)
	}()
	defer func() { os.Stdout = stdout }()
	f()
	os.Stdout = stdout
	require.NoError(t, w.Close())
	return <-out
}

// TestExampleServer runs Example_server against a throwaway server
// holding the INSERTs its comment names, and compares what it prints with
// the rest of that comment.
func TestExampleServer(t *testing.T) {
	srv := mariadb.Start(t, mariadb.Options{})
	want := exampleComment(t, "Example_server", "it prints:")
	srv.Exec(t, "CREATE DATABASE shop", "CREATE TABLE shop.orders (id INT PRIMARY KEY, item VARCHAR(20))",
		"INSERT INTO shop.orders VALUES (1, 'apple'), (2, 'pear'), (3, 'plum')",
		"INSERT INTO shop.orders VALUES (4, 'fig'), (5, 'kiwi')")
	t.Setenv("BINLOGSTREAM_DSN", srv.DSN(mariadb.ReplUser))
	t.Setenv("BINLOGSTREAM_STATE_DIR", t.TempDir())
	got := captureStdout(t, Example_server)
	assert.Equal(t, want, strings.Split(strings.TrimSpace(got), "\n"))
}

// The README's library example is follow from example_server_test.go,
// word for word, so it is the code TestExampleServer runs.
func TestReadmeExampleIsChecked(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	require.NoError(t, err)
	m := regexp.MustCompile("(?s)## Library example\n.*?```go\n(.*?)```").FindSubmatch(readme)
	require.NotNil(t, m, "README.md has no go block under ## Library example")
	src, err := os.ReadFile("example_server_test.go")
	require.NoError(t, err)
	block := string(m[1])
	assert.Contains(t, block, "func follow(")
	assert.Contains(t, string(src), block, "README.md's library example is not example_server_test.go's text")
}
