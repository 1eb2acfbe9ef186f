package web

import "golang.org/x/sys/unix"

// fdPeerUID is the uid of the peer of the Unix socket fd, from
// SO_PEERCRED (the credentials at connect time).
func fdPeerUID(fd int) (int, error) {
	cred, err := unix.GetsockoptUcred(fd, unix.SOL_SOCKET, unix.SO_PEERCRED)
	if err != nil {
		return -1, err
	}
	return int(cred.Uid), nil
}
