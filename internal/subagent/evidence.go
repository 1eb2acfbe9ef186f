package subagent

import (
	"github.com/reverie-ai/reverie/evidence"
)

// Packet is o as the evidence packet agent_NAME returns: the answer first
// (label "answer"), then one item per tool call the agent made, in order,
// titled with the tool's name, its arguments as the text (and the error of
// a failed call), labelled "tool call" or "tool call, failed".
func (o Output) Packet() evidence.Packet {
	p := evidence.Packet{Kind: evidence.AgentResult, Title: "The " + o.Agent + " agent's answer",
		Items: make([]evidence.Item, 0, 1+len(o.ToolCalls)), Meta: evidence.Meta{Source: ToolPrefix + o.Agent}}
	p.Items = append(p.Items, evidence.Item{Label: "answer", Text: o.Result})
	for _, c := range o.ToolCalls {
		it := evidence.Item{Title: c.Name, Label: "tool call", Text: string(c.Arguments)}
		if !c.OK {
			it.Label = "tool call, failed"
			it.Text += " → " + c.Error
		}
		p.Items = append(p.Items, it)
	}
	return p
}
