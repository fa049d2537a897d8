package chat

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/zeroclaw-labs/zeroclaw-go/client"
)

// The session controls of the interactive client (docs/protocol.md: session/set,
// models/list, session/compact, session/fork).

const controlsHelp = `  /mode [MODE]    show or set the mode: readonly, supervised (ask before changes), full
  /model [MODEL]  list the models, or switch to MODEL from the next model call
  /title TITLE    rename the session
  /compact [TEXT] have the model summarise the context (TEXT: what to keep)
  /fork [TITLE]   copy the session into a new one and switch to it`

// control runs a session-control command; it reports whether name was one.
func (ch *chat) control(ctx context.Context, name, arg string) bool {
	switch name {
	case "/mode":
		if arg == "" {
			ch.showControls(ctx)
			break
		}
		ch.set(ctx, client.SessionSettings{Mode: arg})
	case "/model":
		if arg == "" {
			ch.listModels(ctx)
			break
		}
		ch.set(ctx, client.SessionSettings{Model: arg})
	case "/title":
		if arg == "" {
			ch.printf("usage: /title TITLE\n")
			break
		}
		ch.set(ctx, client.SessionSettings{Title: arg})
	case "/compact":
		ch.printf("%scompacting…%s\n", faint, reset)
		r, err := ch.c.Compact(ctx, ch.sid, arg, "")
		switch {
		case err != nil:
			ch.printf("error: %v\n", err)
		case r.Cancelled:
			ch.printf("compaction cancelled; the context is as it was (%d characters)\n", r.Before)
		case r.Compacted:
			ch.printf("compacted the context from %d to %d characters\n", r.Before, r.After)
		default:
			ch.printf("the summary was not smaller; the context stays as it was (%d characters)\n", r.Before)
		}
	case "/fork":
		id, err := ch.c.Fork(ctx, ch.sid, arg)
		if err != nil {
			ch.printf("error: %v\n", err)
			break
		}
		if _, err := ch.c.Attach(ctx, id, 0, ch.render); err != nil {
			ch.printf("forked into %s, but attaching to it failed: %v\n", id, err)
			break
		}
		from := ch.sid
		ch.sid, ch.attachments = id, nil
		ch.printf("forked %s into %s; now in the fork\n", from, id)
	default:
		return false
	}
	return true
}

func (ch *chat) set(ctx context.Context, s client.SessionSettings) {
	r, err := ch.c.SetSession(ctx, ch.sid, s)
	var e *client.Error
	if errors.As(err, &e) && e.Code == client.CodeInvalidParams && s.Model != "" {
		ch.printf("error: %s\n", e.Message)
		ch.listModels(ctx)
		return
	}
	if err != nil {
		ch.printf("error: %v\n", err)
		return
	}
	ch.printf("mode %s, model %s, title %q\n", r.Mode, r.Model, r.Title)
}

func (ch *chat) showControls(ctx context.Context) {
	r, err := ch.c.SetSession(ctx, ch.sid, client.SessionSettings{})
	if err != nil {
		ch.printf("error: %v\n", err)
		return
	}
	ch.printf("mode %s, model %s, title %q (modes: readonly, supervised, full)\n", r.Mode, r.Model, r.Title)
}

func (ch *chat) listModels(ctx context.Context) {
	m, err := ch.c.ListModels(ctx, "", ch.sid)
	if err != nil {
		ch.printf("error: %v\n", err)
		return
	}
	var b strings.Builder
	for _, x := range m.Models {
		mark := " "
		if x.Current {
			mark = "*"
		}
		fmt.Fprintf(&b, "%s %s\n", mark, x.ID)
	}
	ch.printf("%smodels (from %s):%s\n%s", faint, m.Source, reset, b.String())
}
