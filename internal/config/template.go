package config

import _ "embed"

//go:embed default.yaml
var defaultFile []byte

// DefaultFile returns the fully commented config.yaml that `reverie init`
// writes: every core key with its default and a one-line explanation, plus
// commented examples of extension and model sections. It decodes to exactly
// Default().
func DefaultFile() []byte {
	return append([]byte(nil), defaultFile...)
}
