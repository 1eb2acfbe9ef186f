// Added for Reverie (see REVERIE.md at the root of this module): the
// package's regular expressions are compiled on first use, not at package
// initialisation, so a process that never uses them does not pay for them.

package parser

import (
	"regexp"
	"sync"
)

// lazyRegexp returns a function that compiles expr on its first call (and
// panics then if it does not compile, as regexp.MustCompile at package
// initialisation would have) and returns that same *regexp.Regexp on every
// call.
func lazyRegexp(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}
