package app

import (
	"context"
	"runtime/debug"

	"github.com/reverie-ai/reverie/api"
)

type apiInfo struct{ a *App }

func (i apiInfo) Info(ctx context.Context) (api.AgentInfo, error) {
	out := api.AgentInfo{Version: buildVersion(), ModelsConfigured: i.a.Models.Configured()}
	for _, c := range i.a.Router.Commands() {
		out.Commands = append(out.Commands, api.Command{Name: c.Name, Help: c.Help})
	}
	for _, st := range i.a.Kernel.Status() {
		msg := st.Error
		if st.HealthError != "" {
			msg = st.HealthError
		}
		out.Extensions = append(out.Extensions, api.ExtensionStatus{ID: st.ID, State: string(st.State), Health: string(st.Health), Error: msg})
	}
	if i.a.Memory != nil {
		if vs, ok := i.a.Memory.LocalVectors(); ok {
			if st, err := vs.Embedding(ctx); err == nil {
				out.Embedding = &api.EmbeddingInfo{Model: st.Model, Serving: st.Serving, Dimensions: st.Dimensions, Pending: st.Pending,
					Reembedding: st.Running, Done: st.Done, Total: st.Total, Error: i.a.Secrets.Redact(st.Error)}
			}
		}
	}
	return out, nil
}

// buildVersion is the module version and VCS revision of the binary.
func buildVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "dev"
	}
	v := bi.Main.Version
	if v == "" || v == "(devel)" {
		v = "dev"
	}
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" && len(s.Value) >= 12 {
			v += "+" + s.Value[:12]
		}
	}
	return v
}
