package testhelpers

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// ModuleBinary builds a program of this module's build (a package path
// as go build takes it, from the module root: "./testhelpers/kafka/kfakeserver",
// or a requirement's main package such as nats-server's) once per test
// process, into a temporary directory, with the module's go.mod choosing
// the versions. The zero value is ready to use.
type ModuleBinary struct {
	once sync.Once
	path string
	err  error
}

// Path builds pkg as name on first use and returns the binary's path;
// a failed build fails t, now and on every later call.
func (b *ModuleBinary) Path(t testing.TB, pkg, name string) string {
	t.Helper()
	b.once.Do(func() {
		out, err := exec.Command("go", "env", "GOMOD").Output()
		if err != nil {
			b.err = fmt.Errorf("go env GOMOD: %w", err)
			return
		}
		dir, err := os.MkdirTemp("", "binlogstream-"+name+"-")
		if err != nil {
			b.err = err
			return
		}
		b.path = filepath.Join(dir, name)
		cmd := exec.Command("go", "build", "-o", b.path, pkg)
		cmd.Dir = filepath.Dir(strings.TrimSpace(string(out)))
		if out, err := cmd.CombinedOutput(); err != nil {
			b.err = fmt.Errorf("building %s: %w: %s", name, err, out)
		}
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}
