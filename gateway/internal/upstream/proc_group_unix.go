//go:build unix && !linux

package upstream

import "syscall"

// groupAlive reports whether process group pgid still has a process (a
// zombie counts until its parent reaps it).
func groupAlive(pgid int) bool {
	return syscall.Kill(-pgid, 0) == nil
}
