//go:build linux

package versioning

import (
	"io/fs"
	"syscall"
)

// sysStat adds what git compares besides the modification time and size.
func sysStat(info fs.FileInfo, st *statData) {
	s, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return
	}
	st.ctimeSec, st.ctimeNsec = uint32(s.Ctim.Sec), uint32(s.Ctim.Nsec)
	st.dev, st.ino = uint32(s.Dev), uint32(s.Ino)
	st.uid, st.gid = s.Uid, s.Gid
}
