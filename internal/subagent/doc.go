// Package subagent runs specialised agents: a name, a description (what
// the main agent reads to choose one), a prompt, a model role and a tool
// allowlist. Each is offered to the main agent as one tool, agent_NAME
// (arguments task and optional context); a call runs a bounded session of
// its own — the agent's prompt as the system prompt, the task as the only
// message, its own tools — and returns the agent's answer with the tool
// calls it made.
//
// # Definitions
//
// Agents are Markdown files in the format Claude Code and others share
// for sub-agents: YAML front matter with name, description, tools and
// model, then the agent's prompt as the body (Parse). tools is a list or a
// comma-separated string of tool names and "@category" entries, the syntax
// of tools.allow; the tool names of Claude Code (Read, Write, Edit, Bash,
// WebFetch, WebSearch, …) are read as Reverie's equivalents; omitted, the
// agent gets every tool but the agents. model is a model role
// (models.roles); empty means sub_sessions, "inherit" main; another name
// that no role has behaves like main, as any unknown role does.
//
// The Library holds the built-in agents (researcher and builder, embedded
// from builtin/) and the files in <data>/agents/NAME.md, which override a
// built-in of the same name. It lists the directory again when the
// directory's modification time changed (a file added or removed), and at
// most every Options.StatInterval otherwise (an edit in place), so an
// agent written by hand is offered from the next turn on, without a
// restart; a file that does not
// parse is left out and reported (Library.Problems), never fatal.
//
// # Runs
//
// Runner.Run bounds a run by Options.MaxRounds model rounds and
// Options.Timeout. The run's tool calls carry the calling turn's thread and
// tool.Call.Delegate, so approvals apply as they do to the turn's own
// calls: a call that needs approval asks the user of that thread; a
// conversation that was tainted when it called the agent taints the
// agent's session from its start, and the task's addresses then do not
// count as the user's (internal/approval). An agent never gets agent
// tools (no nesting). Progress goes to the event bus as agent.started,
// agent.tool_call (each finished call), agent.completed and agent.failed;
// each run leaves an interaction-log entry (action "agent") with the
// agent's system prompt, its tools, the task and the result, and one
// tool_call entry per call. The tool's result is untrusted input
// (tool.UntrustedResults): the agent's answer is made of what its tools
// brought in.
package subagent
