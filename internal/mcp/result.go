package mcp

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/zeroclaw-labs/zeroclaw-go/internal/tool"
)

// MaxOutput is where a result's text is cut: the limit of shell output.
const MaxOutput = tool.MaxShellOutput

// mapResult turns a tools/call result into a tool result (docs/protocol.md,
// "Tools from MCP servers"): text blocks joined by newlines, an image or audio block
// as "[image: MIME, N bytes]", an embedded text resource as its text,
// structuredContent as its JSON when there is no text, isError kept, and everything
// past MaxOutput cut with a note.
func mapResult(res *sdk.CallToolResult) tool.Result {
	var parts []string
	hasText := false
	for _, c := range res.Content {
		switch c := c.(type) {
		case *sdk.TextContent:
			parts = append(parts, c.Text)
			hasText = true
		case *sdk.ImageContent:
			parts = append(parts, fmt.Sprintf("[image: %s, %d bytes]", c.MIMEType, len(c.Data)))
		case *sdk.AudioContent:
			parts = append(parts, fmt.Sprintf("[audio: %s, %d bytes]", c.MIMEType, len(c.Data)))
		case *sdk.ResourceLink:
			parts = append(parts, fmt.Sprintf("[resource link: %s]", c.URI))
		case *sdk.EmbeddedResource:
			switch r := c.Resource; {
			case r == nil:
			case r.Text != "":
				parts = append(parts, r.Text)
				hasText = true
			default:
				parts = append(parts, fmt.Sprintf("[resource: %s, %s, %d bytes]", r.URI, r.MIMEType, len(r.Blob)))
			}
		default:
			parts = append(parts, fmt.Sprintf("[%T content]", c))
		}
	}
	if !hasText && res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			parts = append(parts, string(b))
		}
	}
	out, truncated := capText(strings.Join(parts, "\n"))
	return tool.Result{Output: out, IsError: res.IsError, Truncated: truncated}
}

// capText cuts s to MaxOutput bytes (at a character boundary) with a note.
func capText(s string) (string, bool) {
	if len(s) <= MaxOutput {
		return strings.ToValidUTF8(s, "\uFFFD"), false
	}
	cut := MaxOutput
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	kept := strings.ToValidUTF8(s[:cut], "\uFFFD")
	return kept + fmt.Sprintf("\n[output truncated: %d bytes dropped after the first %d]", len(s)-cut, cut), true
}
