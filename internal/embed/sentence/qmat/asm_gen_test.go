package qmat

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestAsmGenerated checks that mult_amd64.s is what asm_gen.go writes, so
// that the assembly and its generator cannot drift apart.
func TestAsmGenerated(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the generator with the go command")
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command:", err)
	}
	out := filepath.Join(t.TempDir(), "mult_amd64.s")
	if b, err := exec.CommandContext(t.Context(), gobin, "run", "asm_gen.go", "-o", out).CombinedOutput(); err != nil {
		t.Fatalf("go run asm_gen.go: %v\n%s", err, b)
	}
	want, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("mult_amd64.s")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("mult_amd64.s differs from what asm_gen.go writes: run go generate")
	}
}
