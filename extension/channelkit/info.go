package channelkit

import "github.com/reverie-ai/reverie/extension"

// Info is a channel's registration: opt-in (Disabled), turned on by its
// configuration (configured, extension.Info.AutoEnable), each instance
// made by newChannel.
func Info(id, description string, configured func(decode func(v any) error) bool, newChannel func() extension.Extension) extension.Info {
	return extension.Info{ID: id, New: newChannel, Disabled: true, AutoEnable: configured, Description: description}
}
