package config

import (
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestConfigurationDocumented checks docs/configuration.md against Config:
// every key of the configuration is documented, and every key the
// "Sections" table names for a section of Config exists. A key under a
// map (models.backends.<name>.kind) counts as documented when its map is
// and its own name is shown anywhere in the document (`kind` or kind:).
func TestConfigurationDocumented(t *testing.T) {
	raw, err := os.ReadFile("../../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	keys := configKeys(reflect.TypeFor[Config](), "")
	exists := map[string]bool{}
	sections := map[string]bool{}
	for _, k := range keys {
		exists[strings.ReplaceAll(k, ".*", "")] = true
		for p := k; ; {
			i := strings.LastIndex(p, ".")
			if i < 0 {
				break
			}
			p = p[:i]
			exists[strings.ReplaceAll(p, ".*", "")] = true
		}
		sections[strings.Split(k, ".")[0]] = true
	}

	documented := map[string]bool{}
	for _, row := range sectionRows(t, doc) {
		section := row.section
		if section != "" && !sections[section] {
			continue // an extension's section: its own struct, not Config
		}
		prefixed := func(tok string) []string {
			ks := expandBraces(tok)
			for i := range ks {
				if section != "" {
					ks[i] = section + "." + ks[i]
				}
			}
			return ks
		}
		// The keys of the cell; its remarks in parentheses may name
		// nested keys too (memory's `mcp.server`), or values.
		for _, tok := range backticked(row.keys) {
			for _, k := range prefixed(tok) {
				documented[k] = true
			}
		}
		for _, tok := range backticked(withoutParens(row.keys)) {
			for _, k := range prefixed(tok) {
				if !exists[k] {
					t.Errorf("docs/configuration.md documents %q, which Config does not have", k)
				}
			}
		}
	}
	shown := func(name string) bool {
		return strings.Contains(doc, "`"+name+"`") || strings.Contains(doc, " "+name+":")
	}
	for _, k := range keys {
		path := strings.ReplaceAll(k, ".*", "")
		if documented[path] || !leaf(keys, k) {
			continue
		}
		ok := false
		for p := k; !ok; {
			i := strings.LastIndex(p, ".")
			if i < 0 {
				break
			}
			p = p[:i]
			ok = documented[strings.ReplaceAll(p, ".*", "")] && shown(k[strings.LastIndex(k, ".")+1:])
		}
		if !ok {
			t.Errorf("config key %q is not documented in docs/configuration.md (Sections table)", path)
		}
	}
}

// leaf reports whether no other key is below k.
func leaf(keys []string, k string) bool {
	return !slices.ContainsFunc(keys, func(x string) bool { return strings.HasPrefix(x, k+".") })
}

type sectionRow struct{ section, keys string }

// sectionRows returns the rows of the table under "## Sections"; the
// section of "(top level)" is "".
func sectionRows(t *testing.T, doc string) []sectionRow {
	_, after, ok := strings.Cut(doc, "\n## Sections\n")
	if !ok {
		t.Fatal(`docs/configuration.md has no "## Sections"`)
	}
	body, _, _ := strings.Cut(after, "\n## ")
	var rows []sectionRow
	for line := range strings.SplitSeq(body, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 4 || strings.HasPrefix(strings.TrimSpace(cells[1]), "---") || strings.TrimSpace(cells[1]) == "section" {
			continue
		}
		name := strings.TrimSpace(cells[1])
		if name == "(top level)" {
			name = ""
		} else {
			name = strings.Trim(name, "`")
		}
		rows = append(rows, sectionRow{name, strings.Join(cells[2:len(cells)-1], "|")})
	}
	if len(rows) == 0 {
		t.Fatal("the Sections table of docs/configuration.md has no rows")
	}
	return rows
}

// configKeys lists the key paths of t's yaml fields; a map's keys are "*".
func configKeys(t reflect.Type, prefix string) []string {
	var out []string
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if !f.IsExported() || name == "-" || name == "" {
			continue
		}
		path := prefix + name
		out = append(out, path)
		ft := f.Type
		if ft.Kind() == reflect.Map {
			path += ".*"
			ft = ft.Elem()
		}
		if ft.Kind() == reflect.Struct && ft != reflect.TypeFor[time.Time]() && ft != reflect.TypeFor[Secret]() {
			out = append(out, configKeys(ft, path+".")...)
		}
	}
	return out
}

var backtickRe = regexp.MustCompile("`([^`]+)`")

func backticked(s string) []string {
	var out []string
	for _, m := range backtickRe.FindAllStringSubmatch(s, -1) {
		out = append(out, m[1])
	}
	return out
}

// withoutParens drops every parenthesised remark (nested ones too): what
// is left of a Sections cell are the keys.
func withoutParens(s string) string {
	var b strings.Builder
	depth := 0
	for _, r := range s {
		switch {
		case r == '(':
			depth++
		case r == ')' && depth > 0:
			depth--
		case depth == 0:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// expandBraces turns "shell.{a,b}" into "shell.a", "shell.b".
func expandBraces(tok string) []string {
	pre, rest, ok := strings.Cut(tok, "{")
	if !ok {
		return []string{tok}
	}
	list, post, _ := strings.Cut(rest, "}")
	var out []string
	for _, x := range strings.Split(list, ",") {
		out = append(out, expandBraces(pre+strings.TrimSpace(x)+post)...)
	}
	return slices.Compact(out)
}
