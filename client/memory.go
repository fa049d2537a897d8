package client

import (
	"context"
	"time"

	"github.com/zeroclaw-labs/zeroclaw-go/protocol"
)

// UpdateMemoryRecalled is the type of the update that names the memories a turn
// recalled into its provider request (docs/protocol.md, "Memory"): package
// protocol's name.
const UpdateMemoryRecalled = protocol.MemoryRecalled

// RecalledEntry is one memory a turn recalled (package protocol's).
type RecalledEntry = protocol.RecalledMemory

// Recalled returns the entries of a memory_recalled update (nil for another type).
func Recalled(u Update) []RecalledEntry {
	if u.Type != UpdateMemoryRecalled {
		return nil
	}
	return u.Recalled
}

// Memory is one memory of memory/list.
type Memory struct {
	ID       string    `json:"id"`
	Agent    string    `json:"agent"`
	Owner    string    `json:"owner"`
	Key      string    `json:"key"`
	Content  string    `json:"content"`
	Tags     []string  `json:"tags"`
	Score    *float64  `json:"score"`
	Created  time.Time `json:"created"`
	Updated  time.Time `json:"updated"`
	Embedded bool      `json:"embedded"`
}

// MemoryQuery selects memories: the newest first by pages, or with Query the best
// matches.
type MemoryQuery struct {
	AgentAlias string `json:"agentAlias"`
	Query      string `json:"query,omitzero"`
	Limit      int    `json:"limit,omitzero"`
	Cursor     string `json:"cursor,omitzero"`
}

// MemoryList calls memory/list; the cursor of the next page is "" after the last.
func (c *Client) MemoryList(ctx context.Context, q MemoryQuery) ([]Memory, string, error) {
	var r struct {
		Memories   []Memory `json:"memories"`
		NextCursor string   `json:"nextCursor"`
	}
	err := c.Call(ctx, "memory/list", q, &r)
	return r.Memories, r.NextCursor, err
}

// NewMemory is a memory for MemoryPut.
type NewMemory struct {
	AgentAlias string   `json:"agentAlias"`
	Content    string   `json:"content"`
	Key        string   `json:"key,omitzero"`
	Tags       []string `json:"tags,omitzero"`
}

// MemoryPut calls memory/put and returns the memory's id.
func (c *Client) MemoryPut(ctx context.Context, m NewMemory) (string, error) {
	var r struct {
		ID string `json:"id"`
	}
	err := c.Call(ctx, "memory/put", m, &r)
	return r.ID, err
}

// MemoryDelete calls memory/delete.
func (c *Client) MemoryDelete(ctx context.Context, id string) error {
	return c.Call(ctx, "memory/delete", map[string]string{"id": id}, nil)
}
