package testhelpers

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

var command struct {
	once sync.Once
	dir  string
	path string
	err  error
}

// Command builds the main package of the working directory (where the
// tests of a cmd/ package run) once per test process and returns the
// binary's path, name in a temporary directory. It builds without -race:
// the kill tests want a fast binary. CleanupCommand, from TestMain, removes
// it.
func Command(t testing.TB, name string) string {
	t.Helper()
	command.once.Do(func() {
		if command.dir, command.err = os.MkdirTemp("", name+"-bin-"); command.err != nil {
			return
		}
		command.path = filepath.Join(command.dir, name)
		if out, err := exec.Command("go", "build", "-o", command.path, ".").CombinedOutput(); err != nil {
			command.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if command.err != nil {
		t.Fatal(command.err)
	}
	return command.path
}

// CleanupCommand removes what Command built.
func CleanupCommand() {
	if command.dir != "" {
		os.RemoveAll(command.dir)
	}
}
