// Package mcptest finds the real MCP peers the tests run against: the npm
// packages @modelcontextprotocol/server-everything, server-memory and
// inspector, installed from extensions/mcp/testdata/npm (`npm ci` there;
// .ci/run does it). Without them a test is skipped with a clear message,
// and fails when CI=true.
package mcptest

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// Peers are the commands that start the npm MCP peers.
type Peers struct {
	// Node is the node binary.
	Node string
	// Dir is the npm directory (testdata/npm).
	Dir string
	// Everything starts server-everything (append "stdio" or
	// "streamableHttp").
	Everything []string
	// Memory starts server-memory over stdio (MEMORY_FILE_PATH picks its
	// file).
	Memory []string
	// Inspector runs the inspector CLI (append "--cli", the command and
	// "--method …").
	Inspector []string
}

// Find returns the peers, skipping the test when they are not installed
// (failing it when CI=true).
func Find(t testing.TB) Peers {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Join(filepath.Dir(file), "..", "testdata", "npm")
	mods := filepath.Join(dir, "node_modules", "@modelcontextprotocol")
	p := Peers{
		Dir:        dir,
		Everything: []string{filepath.Join(mods, "server-everything", "dist", "index.js")},
		Memory:     []string{filepath.Join(mods, "server-memory", "dist", "index.js")},
		Inspector:  []string{filepath.Join(mods, "inspector", "clients", "launcher", "build", "index.js")},
	}
	missing := func(what string) {
		msg := "MCP test peers not available (" + what + "): run `npm ci` in " + dir
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		missing("node is not installed")
	}
	p.Node = node
	for _, f := range [][]string{p.Everything, p.Memory, p.Inspector} {
		if _, err := os.Stat(f[0]); err != nil {
			missing(f[0] + " is missing")
		}
	}
	return p
}
