package skills

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reverie-ai/reverie/tool"
)

// call runs a tool as the tool loop does: schema validation, then Call.
func call(t *testing.T, tl tool.Tool, args string) (string, error) {
	t.Helper()
	if v, ok := tl.(interface{ ValidateArgs(json.RawMessage) error }); ok {
		if err := v.ValidateArgs(json.RawMessage(args)); err != nil {
			return "", err
		}
	}
	ctx := tool.WithCall(context.Background(), tool.Call{Thread: "sub_7", Agent: "sub_7", Depth: 1})
	res, err := tl.Call(ctx, json.RawMessage(args))
	return res.Content, err
}

func TestAddAndReadTools(t *testing.T) {
	e := newEnv(t)
	add, read := AddTool(e.store), ReadTool(e.store)
	if add.Name() != "add_skill" || read.Name() != "read_skill" || !tool.IsReadOnly(read) || tool.IsReadOnly(add) {
		t.Fatalf("names/read-only: %s %s", add.Name(), read.Name())
	}
	steps := []struct {
		name    string
		tool    tool.Tool
		args    string
		want    []string
		wantErr string
	}{
		{"read with no skills", read, `{"name":"x"}`, nil, "there are no skills yet"},
		{"add body", add, `{"name":"deploy-blog","body":"Deploy the blog\n1. hugo\n2. rsync"}`, []string{`"ok":true`, `"name":"deploy-blog"`, `"replaced":false`, `"summary":"Deploy the blog"`, `created skill deploy-blog`}, ""},
		{"add summary and content", add, `{"name":"backup","summary":"Back up the laptop","content":"1. restic backup ~"}`, []string{`"summary":"Back up the laptop"`, `"replaced":false`}, ""},
		{"replace says so", add, `{"name":"deploy-blog","body":"Deploy the blog v2\n1. make deploy"}`, []string{`"replaced":true`, "replaced the existing skill deploy-blog"}, ""},
		{"same text", add, `{"name":"deploy-blog","body":"Deploy the blog v2\n1. make deploy"}`, []string{"nothing changed"}, ""},
		{"both forms", add, `{"name":"x","body":"a","summary":"b"}`, nil, "either body, or summary and content"},
		{"nothing", add, `{"name":"x"}`, nil, "the skill is empty"},
		{"summary only", add, `{"name":"x","summary":"b"}`, nil, "content"},
		{"path name", add, `{"name":"../../BASE_PROMPT","body":"Pwned\nx"}`, nil, "path characters"},
		{"bad name", add, `{"name":"My Skill","body":"x\ny"}`, nil, `"my-skill"`},
		{"missing name (schema)", add, `{"body":"x"}`, nil, "name"},
		{"read", read, `{"name":"deploy-blog"}`, []string{`"body":"Deploy the blog v2\n1. make deploy"`, `"summary":"Deploy the blog v2"`}, ""},
		{"read with .md", read, `{"name":"backup.md"}`, []string{`"name":"backup"`}, ""},
		{"read unknown lists names", read, `{"name":"deploy"}`, nil, "the skills are: backup, deploy-blog"},
		{"read invalid lists names", read, `{"name":"../x"}`, nil, "the skills are: backup, deploy-blog"},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			out, err := call(t, s.tool, s.args)
			if s.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), s.wantErr) {
					t.Fatalf("err = %v, want %q (result %s)", err, s.wantErr, out)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range s.want {
				if !strings.Contains(out, w) {
					t.Errorf("result %s lacks %s", out, w)
				}
			}
		})
	}
	if _, err := os.Stat(filepath.Join(e.dataDir, "BASE_PROMPT.md")); !os.IsNotExist(err) {
		t.Errorf("a path name escaped: %v", err)
	}
	loads, err := e.store.Loads(context.Background(), LoadFilter{Mode: LoadRead})
	if err != nil || len(loads) != 2 || loads[0].Thread != "sub_7" || loads[0].Skill != "backup" || loads[1].Skill != "deploy-blog" {
		t.Errorf("read loads = %+v, %v", loads, err)
	}
	if got := e.files(t); strings.Join(got, ",") != "backup.md,deploy-blog.md" {
		t.Errorf("files = %v", got)
	}
}
