//go:build !linux && !darwin

package web

import "errors"

// fdPeerUID cannot read a peer's credentials on this platform: every
// connection to the control socket is refused.
func fdPeerUID(int) (int, error) {
	return -1, errors.New("peer credentials are not supported on this platform")
}
