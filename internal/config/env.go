package config

import (
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
)

// EnvPrefix starts every configuration environment variable.
const EnvPrefix = "REVERIE_"

// notConfig are REVERIE_ variables that are not configuration keys.
var notConfig = map[string]bool{
	"HOME":  true, // the data dir (datadir.Resolve)
	"MODEL": true, // the model name for the zero-config provider setup
	// INSTANCE is the per-start id the supervisor gives the agent
	// (supervisor.InstanceEnv), echoed by /healthz.
	"INSTANCE": true,
}

// envVar is one REVERIE_ variable, split at `__`.
type envVar struct {
	name    string
	value   string
	section string   // upper-case first segment
	rest    []string // lower-case later segments; nil when the name has no `__`
}

// parseEnv returns the configuration variables in env, sorted by name (the
// last of duplicate names wins, like the process environment). Empty values
// count as unset.
func parseEnv(env []string) []envVar {
	byName := map[string]string{}
	for _, kv := range env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || !strings.HasPrefix(k, EnvPrefix) {
			continue
		}
		byName[k] = v
	}
	out := make([]envVar, 0, len(byName))
	for k, v := range byName {
		rest := k[len(EnvPrefix):]
		if v == "" || rest == "" || notConfig[rest] {
			continue
		}
		ev := envVar{name: k, value: v}
		sec, sub, has := strings.Cut(rest, "__")
		ev.section = sec
		if has {
			ev.rest = strings.Split(strings.ToLower(sub), "__")
		}
		out = append(out, ev)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// envName is the section part of an environment variable for an id.
func envName(id string) string {
	return strings.ToUpper(strings.NewReplacer("-", "_", ".", "_").Replace(id))
}

// isLeafType reports whether a top-level field is a single value (settable
// as REVERIE_NAME) rather than a section.
func isLeafType(t reflect.Type) bool {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == secretType || t == durationType || reflect.PointerTo(t).Implements(textUnmarshal) {
		return true
	}
	switch t.Kind() {
	case reflect.Struct, reflect.Map, reflect.Slice, reflect.Array:
		return false
	}
	return true
}

// applyEnv applies the overrides for core keys and records the extension
// `enabled` overrides. Other extension overrides are applied by
// DecodeExtension.
func (c *Config) applyEnv() error {
	m := c.meta
	core := coreKeys()
	rv := reflect.ValueOf(c).Elem()
	extByEnv := map[string]string{}
	for id := range m.extIDs {
		extByEnv[envName(id)] = id
	}
	for _, ev := range parseEnv(m.env) {
		d := &decoder{envVar: ev.name, secrets: m.secrets}
		lsec := strings.ToLower(ev.section)
		if ev.rest == nil {
			idx, ok := core[lsec]
			if !ok || !isLeafType(rv.Field(idx).Type()) {
				continue // not configuration (or a whole section, which cannot be set at once)
			}
			if err := d.setString(rv.Field(idx), ev.value, lsec); err != nil {
				return err
			}
			m.envVars[lsec] = ev.name
			continue
		}
		if idx, ok := core[lsec]; ok {
			path, err := d.setPath(rv.Field(idx), ev.rest, lsec, ev.value)
			if err != nil {
				return err
			}
			m.envVars[path] = ev.name
			continue
		}
		if id, ok := extByEnv[ev.section]; ok {
			if len(ev.rest) == 1 && ev.rest[0] == "enabled" {
				on, err := strconv.ParseBool(ev.value)
				if err != nil {
					return &Error{Var: ev.name, Key: id + ".enabled",
						Msg: fmt.Sprintf("%s.enabled: %q is not true or false", id, ev.value)}
				}
				m.enEnv[id] = on
				m.envVars[id+".enabled"] = ev.name
			}
			continue
		}
		m.warn("environment variable %s is ignored: this build has no configuration section %q", ev.name, lsec)
	}
	return nil
}

// setPath walks v along the lower-case key segments and sets the value
// there. It returns the dotted path that was set.
func (d *decoder) setPath(v reflect.Value, segs []string, path, value string) (string, error) {
	if len(segs) == 0 {
		return path, d.setString(v, value, path)
	}
	seg := segs[0]
	full := join(path, seg)
	t := v.Type()
	switch {
	case t.Kind() == reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(t.Elem()))
		}
		return d.setPath(v.Elem(), segs, path, value)
	case t == secretType || t == durationType || seg == "":
		return "", d.errAt(0, full, "unknown key %q", full)
	case t.Kind() == reflect.Struct && !reflect.PointerTo(t).Implements(textUnmarshal):
		fields := structFields(t)
		var idx []int
		cands := make([]string, 0, len(fields))
		for name, i := range fields {
			cands = append(cands, name)
			if strings.EqualFold(name, seg) {
				idx = i
			}
		}
		if idx == nil {
			return "", d.errAt(0, full, "unknown key %q%s", full, suggest(seg, cands))
		}
		fv, err := fieldByIndex(v, idx)
		if err != nil {
			return "", d.errAt(0, full, "%s: %v", full, err)
		}
		return d.setPath(fv, segs[1:], full, value)
	case t.Kind() == reflect.Map && t.Key().Kind() == reflect.String:
		if v.IsNil() {
			v.Set(reflect.MakeMap(t))
		}
		kv := reflect.ValueOf(seg).Convert(t.Key())
		elem := reflect.New(t.Elem()).Elem()
		if old := v.MapIndex(kv); old.IsValid() {
			elem.Set(old)
		}
		got, err := d.setPath(elem, segs[1:], full, value)
		if err != nil {
			return "", err
		}
		v.SetMapIndex(kv, elem)
		return got, nil
	}
	return "", d.errAt(0, full, "unknown key %q: %s is a single value, not a section", full, path)
}
