package skills

import "time"

// Reload drops the cache, so the next call re-lists skills/ and re-reads
// every file. The app calls it after a restore of the data dir's history
// rewrote skill files, which must be seen at once even where the file
// system's timestamps are too coarse to tell (see the package
// documentation's Cache section).
func (s *Store) Reload() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dirKnown, s.checked = false, time.Time{}
	clear(s.files)
	s.list = nil
}
