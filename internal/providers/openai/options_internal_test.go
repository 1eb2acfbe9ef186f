package openai

import "testing"

func TestMaxTokensFieldDefault(t *testing.T) {
	tests := []struct{ name, base, field, want string }{
		{"openai by default", "", "", FieldMaxCompletionTokens},
		{"openai explicit", "https://api.openai.com/v1", "", FieldMaxCompletionTokens},
		{"openrouter", "https://openrouter.ai/api/v1", "", FieldMaxTokens},
		{"ollama", "http://127.0.0.1:11434/v1", "", FieldMaxTokens},
		{"override", "http://127.0.0.1:8000/v1", FieldMaxCompletionTokens, FieldMaxCompletionTokens},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o, err := Options{BaseURL: tc.base, Model: "m", MaxTokensField: tc.field}.normalize()
			if err != nil {
				t.Fatal(err)
			}
			if o.MaxTokensField != tc.want {
				t.Errorf("field = %q, want %q", o.MaxTokensField, tc.want)
			}
		})
	}
}
