package voice

import (
	"fmt"
	"strings"

	"github.com/reverie-ai/reverie/internal/config"
	"github.com/reverie-ai/reverie/internal/providers/openai"
)

// spec is one stt or tts backend to build.
type spec struct {
	role, name, base, key, model string
}

// The environment variables of the speech roles, used for a role that
// models.roles does not name: REVERIE_STT_MODEL / REVERIE_TTS_MODEL turn
// the role on; its base URL and key default to OPENAI_BASE_URL and
// OPENAI_API_KEY (then OpenAI's API), so one OpenAI key serves chat, stt
// and tts. REVERIE_TTS_VOICE picks the voice (voice.voice).
var envVars = map[string][3]string{
	config.RoleSTT: {"REVERIE_STT_MODEL", "REVERIE_STT_BASE_URL", "REVERIE_STT_API_KEY"},
	config.RoleTTS: {"REVERIE_TTS_MODEL", "REVERIE_TTS_BASE_URL", "REVERIE_TTS_API_KEY"},
}

// roleSpecs resolves the stt and tts roles: models.roles first, else the
// environment.
func roleSpecs(m config.ModelsConfig, env []string) ([]spec, error) {
	var out []spec
	for _, role := range config.SpeechRoles {
		entries := m.Roles[role]
		if len(entries) == 0 {
			vars := envVars[role]
			model := envValue(env, vars[0])
			if model == "" {
				continue
			}
			base := firstOf(envValue(env, vars[1]), envValue(env, "OPENAI_BASE_URL"), openai.DefaultBaseURL)
			key := firstOf(envValue(env, vars[2]), envValue(env, "OPENAI_API_KEY"))
			out = append(out, spec{role: role, name: "env/" + model, base: base, key: key, model: model})
			continue
		}
		for _, entry := range entries {
			ref, err := config.ParseModelRef(entry)
			if err != nil {
				return nil, fmt.Errorf("models.roles.%s: %w", role, err)
			}
			b, ok := m.Backends[ref.Backend]
			if !ok {
				return nil, fmt.Errorf("models.roles.%s: unknown backend %q", role, ref.Backend)
			}
			if b.Kind != config.ModelKindOpenAI {
				return nil, fmt.Errorf("models.roles.%s: backend %q is of kind %s, which has no audio API", role, ref.Backend, b.Kind)
			}
			var key string // none: a local server
			if b.APIKey.IsSet() {
				if key, err = b.APIKey.Resolve(); err != nil {
					return nil, fmt.Errorf("models.backends.%s.api_key: %w", ref.Backend, err)
				}
			}
			out = append(out, spec{role: role, name: ref.String(), base: b.BaseURL, key: key, model: ref.Model})
		}
	}
	return out, nil
}

// envValue is the last value of k in env (os.Environ format), trimmed.
func envValue(env []string, k string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], k+"="); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

func firstOf(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}
