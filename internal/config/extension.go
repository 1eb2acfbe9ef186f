package config

import (
	"fmt"
	"reflect"
)

// ExtensionEnabled reports whether extension id is enabled: the
// REVERIE_<ID>__ENABLED variable if set, else the section's `enabled` key if
// present, else defaultOn.
func (c *Config) ExtensionEnabled(id string, defaultOn bool) bool {
	if c.meta == nil {
		return defaultOn
	}
	c.meta.mu.Lock()
	defer c.meta.mu.Unlock()
	if on, ok := c.meta.enEnv[id]; ok {
		return on
	}
	if on, ok := c.meta.enabled[id]; ok {
		return on
	}
	return defaultOn
}

// HasExtensionSection reports whether the file has a non-empty section for
// extension id.
func (c *Config) HasExtensionSection(id string) bool {
	if c.meta == nil {
		return false
	}
	c.meta.mu.Lock()
	defer c.meta.mu.Unlock()
	_, ok := c.meta.sections[id]
	return ok
}

// ExtensionConfigured reports whether extension id is configured
// explicitly: the file has a non-empty section for it, or a
// REVERIE_<ID>__… environment variable sets one of its keys (enabled
// included). The agent does not start without an extension configured
// explicitly (see kernel.Options.Essential).
func (c *Config) ExtensionConfigured(id string) bool {
	if c.meta == nil {
		return false
	}
	c.meta.mu.Lock()
	_, ok := c.meta.sections[id]
	env := c.meta.env
	c.meta.mu.Unlock()
	if ok {
		return true
	}
	prefix := envName(id)
	for _, ev := range parseEnv(env) {
		if ev.section == prefix && ev.rest != nil {
			return true
		}
	}
	return false
}

// DecodeExtension decodes extension id's section strictly into v (a
// non-nil pointer, normally to the extension's config struct pre-filled
// with its defaults), ignoring the `enabled` key, then applies the
// REVERIE_<ID>__… environment overrides by yaml key path. A missing section
// leaves v as it is. Problems are *Error naming file, line (or variable) and
// key; secrets written inline add a warning (see Warnings).
func (c *Config) DecodeExtension(id string, v any) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return fmt.Errorf("config: DecodeExtension(%q) needs a non-nil pointer, got %T", id, v)
	}
	target := rv.Elem()
	if c.meta == nil {
		return nil
	}
	m := c.meta
	m.mu.Lock()
	section := m.sections[id]
	known := m.extIDs[id]
	m.mu.Unlock()
	if !known {
		return fmt.Errorf("config: %q is not a registered extension", id)
	}

	var warnings []string
	collect := func(format string, args ...any) { warnings = append(warnings, fmt.Sprintf(format, args...)) }
	lines := map[string]int{}
	envVars := map[string]string{}
	defer func() {
		m.mu.Lock()
		for k, l := range lines {
			m.lines[k] = l
		}
		for k, e := range envVars {
			m.envVars[k] = e
		}
		m.mu.Unlock()
		for _, w := range warnings {
			m.warn("%s", w)
		}
	}()

	if section != nil {
		d := &decoder{file: m.file, lines: lines, secrets: m.secrets, warn: collect, anchors: m.anchors}
		entries, _ := mappingEntries(section)
		t := target
		for t.Kind() == reflect.Pointer {
			if t.IsNil() {
				t.Set(reflect.New(t.Type().Elem()))
			}
			t = t.Elem()
		}
		switch t.Kind() {
		case reflect.Struct:
			if err := d.decodeStruct(entries, t, id, map[string]bool{"enabled": true}); err != nil {
				return err
			}
		default:
			if err := d.decode(section, t, id); err != nil {
				return err
			}
		}
	}

	prefix := envName(id)
	for _, ev := range parseEnv(m.env) {
		if ev.section != prefix || ev.rest == nil {
			continue
		}
		if len(ev.rest) == 1 && ev.rest[0] == "enabled" {
			continue
		}
		d := &decoder{envVar: ev.name, secrets: m.secrets}
		path, err := d.setPath(target, ev.rest, id, ev.value)
		if err != nil {
			return err
		}
		envVars[path] = ev.name
	}
	return nil
}

// Invalid returns an *Error for a bad value at the dotted key path (for
// example "web.listen"), naming the file line or environment variable the
// value came from. Extensions use it to report their own validation
// failures the way core keys are reported.
func (c *Config) Invalid(key, format string, args ...any) error {
	return c.invalid(key, format, args...)
}
