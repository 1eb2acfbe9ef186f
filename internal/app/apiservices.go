package app

import (
	"context"

	"github.com/reverie-ai/reverie/api"
	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/internal/projectstatus"
)

// fillAPIServices sets the services the HTTP API serves (extensions reach
// them through api.ServicesFrom) from the agent's components. It runs after
// the runtime is built and before the extensions are initialised. A
// feature whose component this app does not have stays nil and its
// endpoints answer 501.
func (a *App) fillAPIServices(svc *api.Services) {
	svc.Info = apiInfo{a}
	svc.Threads = apiThreads{a.Conversations}
	svc.Chat = apiChat{a.Router}
	svc.Conversations = apiConversations{c: a.Conversations, r: a.Router}
	svc.Interactions = apiInteractions{a.Interactions}
	svc.Usage = apiUsage{a.Models}
	svc.Models = apiModels{a.Models, a.Voice}
	svc.Events = apiEvents{bus: a.Bus, db: a.DB}
	svc.Setup = apiSetup{a}
	svc.Pairing = apiPairing{a}
	svc.Endpoints = a.Kernel
	if a.prompts != nil {
		svc.Prompt = a.prompts
	}
	if a.Memory != nil {
		svc.Memories = apiMemories{a.Memory}
	}
	a.fillFeatureServices(svc)
	svc.Project = apiProject{svc}
}

// apiProject compiles the project status from the API's own services,
// read at each call (the workflow service is filled in after the others).
type apiProject struct{ svc *api.Services }

func (p apiProject) compiler() *projectstatus.Compiler {
	c := &projectstatus.Compiler{}
	if p.svc.World != nil {
		c.World = p.svc.World
	}
	if p.svc.Pulse != nil {
		c.Pulse = p.svc.Pulse
	}
	if p.svc.Workflows != nil {
		c.Workflows = p.svc.Workflows
	}
	if p.svc.Threads != nil {
		c.Threads = p.svc.Threads
	}
	return c
}

func (p apiProject) Status(ctx context.Context, thread chat.ThreadID) (api.ProjectStatus, error) {
	return p.compiler().Status(ctx, thread)
}

var _ api.Project = apiProject{}

// fillFeatureServices adds the services of the features built on their own
// stores: pulse (App.Pulse), skills (App.Skills), world state (App.World)
// and the data dir's history (App.Versions). Tasks are filled from the
// scheduler and workflows from the workflow manager once the app holds
// them.
func (a *App) fillFeatureServices(svc *api.Services) {
	if a.Pulse != nil {
		svc.Pulse = apiPulse{a.Pulse}
	}
	if a.Skills != nil {
		svc.Skills = apiSkills{a.Skills}
	}
	if a.World != nil {
		svc.World = apiWorld{a.World}
	}
	if a.Scheduler != nil {
		svc.Tasks = apiTasks{a.Scheduler}
	}
	if a.Versions != nil {
		svc.History = apiHistory{a}
	}
	if a.Dreamer != nil {
		svc.Dreams = apiDreams{d: a.Dreamer, configured: a.Models.Configured}
	}
}

// panelURL is the web debug panel's address for /debug, asked from the web
// channel ("" when it is not running).
func (a *App) panelURL() string {
	ch, ok := a.Kernel.Channel("web")
	if !ok {
		return ""
	}
	if p, ok := ch.(interface{ PanelURL() string }); ok {
		return p.PanelURL()
	}
	return ""
}
