// Package archtest holds the architecture tests of the module: every package
// has a package doc comment, and imports follow the direction of DESIGN §2
// (vocabulary packages depend on the standard library only, extensions never
// depend on each other or on internal packages, internal packages never
// depend on extensions except the composition root). It has no non-test
// code; run it with `go test ./internal/archtest`.
package archtest
