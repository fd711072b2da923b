package mariadb

import (
	"os"
	"os/exec"
	"syscall"
)

// detach puts the server in its own process group (a terminal's Ctrl-C goes
// to the test only) and has the kernel SIGKILL it when the thread that
// started it dies. startProcess keeps that thread alive for the server's
// lifetime, so the signal comes only when the test process dies.
func detach(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// lockOwner takes an exclusive flock on f without blocking and keeps it:
// the kernel drops it when this process dies.
func lockOwner(f *os.File) bool { return tryFlock(f) }

// lockStale reports whether f's flock is free, i.e. its owner is gone.
func lockStale(f *os.File) bool { return tryFlock(f) }

func tryFlock(f *os.File) bool {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil
}
