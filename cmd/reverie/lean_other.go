//go:build !unix

package main

// execLeanSupervisor returns nil where a process cannot replace itself
// (execve): `reverie run` supervises in process.
func execLeanSupervisor() leanSupervisor { return nil }
