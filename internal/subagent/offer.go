package subagent

import (
	"slices"
	"sync"

	"github.com/reverie-ai/reverie/tool"
)

// Offer is the tools of a Library's agents, run by a Runner. A tool is
// built once per definition and rebuilt only when its agent's definition
// changed, so asking every turn costs no schema derivation. Safe for
// concurrent use.
type Offer struct {
	lib *Library
	run *Runner

	mu    sync.Mutex
	built map[string]offered
}

type offered struct {
	spec Spec
	tool tool.Tool
}

// NewOffer returns the offer of lib's agents run by run.
func NewOffer(lib *Library, run *Runner) *Offer {
	return &Offer{lib: lib, run: run, built: map[string]offered{}}
}

// Tools returns one tool per agent, in the order of the agents' names.
func (o *Offer) Tools() []tool.Tool {
	specs := o.lib.Agents()
	o.mu.Lock()
	defer o.mu.Unlock()
	out := make([]tool.Tool, 0, len(specs))
	keep := make(map[string]bool, len(specs))
	for _, s := range specs {
		keep[s.Name] = true
		b, ok := o.built[s.Name]
		if !ok || !sameSpec(b.spec, s) {
			b = offered{spec: s, tool: o.run.Tool(s)}
			o.built[s.Name] = b
		}
		out = append(out, b.tool)
	}
	for name := range o.built {
		if !keep[name] {
			delete(o.built, name)
		}
	}
	return out
}

func sameSpec(a, b Spec) bool {
	return a.Name == b.Name && a.Description == b.Description && a.Prompt == b.Prompt && a.Role == b.Role &&
		a.Source == b.Source && (a.Tools == nil) == (b.Tools == nil) && slices.Equal(a.Tools, b.Tools)
}
