package provider

import (
	"strings"
	"testing"
)

// Chunk shapes of real servers beyond the fake's quirk modes, decoded by oaStream.
func TestOpenAIChunksAsRealServersSendThem(t *testing.T) {
	for _, tt := range []struct {
		name     string
		chunks   []string
		text     string
		thoughts string
		calls    string // "providerID name args; …"
		usage    Usage
	}{
		{
			name: "reasoning and reasoning_content both, the same text (vLLM during its rename)",
			chunks: []string{
				`{"choices":[{"index":0,"delta":{"reasoning_content":"hm","reasoning":"hm"},"finish_reason":null}]}`,
				`{"choices":[{"index":0,"delta":{"content":"ok"},"finish_reason":"stop"}]}`,
			},
			text: "ok", thoughts: "hm",
		},
		{
			name: "content as a list of thinking and text parts (Mistral's Magistral)",
			chunks: []string{
				`{"choices":[{"index":0,"delta":{"content":[{"type":"thinking","thinking":[{"type":"text","text":"Let me see."}]}]},"finish_reason":null}]}`,
				`{"choices":[{"index":0,"delta":{"content":[{"type":"text","text":"Four."}]},"finish_reason":"stop"}]}`,
			},
			text: "Four.", thoughts: "Let me see.",
		},
		{
			name: "every call at index 0, told apart by its id",
			chunks: []string{
				`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"look","arguments":"{\"p\":"}}]},"finish_reason":null}]}`,
				`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"1}"}}]},"finish_reason":null}]}`,
				`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"b","function":{"name":"look","arguments":"{}"}}]},"finish_reason":"tool_calls"}]}`,
			},
			calls: `a look {"p":1}; b look {}`,
		},
		{
			name: "no index and no id: a name after complete arguments starts the next call",
			chunks: []string{
				`{"choices":[{"index":0,"delta":{"tool_calls":[{"function":{"name":"look","arguments":"{\"p\""}}]},"finish_reason":null}]}`,
				`{"choices":[{"index":0,"delta":{"tool_calls":[{"function":{"arguments":":1}"}}]},"finish_reason":null}]}`,
				`{"choices":[{"index":0,"delta":{"tool_calls":[{"function":{"name":"look","arguments":"{}"}}]},"finish_reason":null}]}`,
				`{"choices":[{"index":0,"delta":{"tool_calls":[{"function":{"name":"read","arguments":{"f":"x"}}}]},"finish_reason":"stop"}]}`,
			},
			calls: ` look {"p":1};  look {};  read {"f":"x"}`,
		},
		{
			name: "usage on every chunk, the last one counts; DeepSeek's cache hits",
			chunks: []string{
				`{"choices":[{"index":0,"delta":{"content":"a"},"finish_reason":null}],"usage":{"prompt_tokens":10,"completion_tokens":1}}`,
				`{"choices":[{"index":0,"delta":{"content":"b"},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":2,"prompt_cache_hit_tokens":8}}`,
			},
			text: "ab", usage: Usage{InputTokens: 10, OutputTokens: 2, CachedInputTokens: 8},
		},
		{
			name: "null everywhere it may be",
			chunks: []string{
				`{"choices":[{"index":0,"delta":{"role":"assistant","content":null,"reasoning_content":null,"tool_calls":null},"finish_reason":null}],"usage":null}`,
				`{"choices":[{"index":0,"delta":{"content":null,"tool_calls":[{"index":0,"id":"c","type":"function","function":{"name":"look","arguments":null}}]},"finish_reason":null}]}`,
				`{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`,
			},
			calls: "c look {}",
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var rec recorder
			s := oaStream{emit: rec.emit}
			for _, c := range tt.chunks {
				if err := s.add([]byte(c)); err != nil {
					t.Fatalf("%s: %v", c, err)
				}
			}
			res, err := s.result(&remote{name: "oa"})
			if err != nil {
				t.Fatal(err)
			}
			var calls []string
			for _, c := range res.ToolCalls {
				calls = append(calls, c.ProviderID+" "+c.Name+" "+string(c.Arguments))
			}
			if res.Text != tt.text || rec.text() != tt.text || strings.Join(rec.thoughts(), "") != tt.thoughts ||
				strings.Join(calls, "; ") != tt.calls || res.Usage != tt.usage || !s.finished {
				t.Errorf("text %q (streamed %q), thoughts %q, calls %q, usage %+v, finished %v",
					res.Text, rec.text(), rec.thoughts(), calls, res.Usage, s.finished)
			}
		})
	}
}
