//go:build unix

package web_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// browser starts headless Chromium (Debian's chromium) for one test. Without it the
// test is skipped, except in CI, which installs it (.ci/run).
func browser(t testing.TB) context.Context {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("chromium is not installed, and CI must run the browser tests (.ci/run installs it)")
		}
		t.Skip("chromium is not installed (apt-get install chromium)")
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1200, 900),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(actx)
	t.Cleanup(func() { cancelCtx(); cancelAlloc() })
	if err := chromedp.Do(ctx); err != nil { // starts the browser, with no deadline of its own
		t.Fatalf("starting chromium: %v", err)
	}
	return ctx
}

// newTab opens another tab of the same browser (the same cookies).
func newTab(t testing.TB, ctx context.Context) context.Context {
	t.Helper()
	tctx, cancel := chromedp.NewContext(ctx)
	t.Cleanup(cancel)
	if err := chromedp.Do(tctx); err != nil {
		t.Fatalf("opening a tab: %v", err)
	}
	return tctx
}

// run runs the steps within two minutes, and fails the test with the page's text
// when one fails.
func run(t testing.TB, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	sctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := chromedp.Do(sctx, steps...); err != nil {
		page, _ := eval[string](ctx, `document.body.innerText`)
		if len(page) > 4000 {
			page = page[len(page)-4000:]
		}
		t.Fatalf("%s: %v\npage: %s", what, err, page)
	}
}

// waitJS polls expr in the page until it is true (every 50 ms, within ctx's deadline).
func waitJS(expr string) chromedp.Action[chromedp.Void] {
	poll := chromedp.Poll[bool](expr, chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(60*time.Second))
	return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		deadline := time.Now().Add(60 * time.Second)
		for {
			_, err := poll(ctx, tg)
			if err == nil {
				return nil
			}
			// The page navigated (the login loads the app): poll the new one.
			if ctx.Err() == nil && time.Now().Before(deadline) &&
				(strings.Contains(err.Error(), "navigated") || strings.Contains(err.Error(), "context")) {
				continue
			}
			return fmt.Errorf("waiting for %s: %w", expr, err)
		}
	})
}

// eval evaluates expr in the page.
func eval[T any](ctx context.Context, expr string) (T, error) {
	ectx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return chromedp.Run(ectx, chromedp.Evaluate[T](expr))
}

func mustEval[T any](t testing.TB, ctx context.Context, expr string) T {
	t.Helper()
	v, err := eval[T](ctx, expr)
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	return v
}

// textOf is the text of every element matching selector, joined by newlines.
func textOf(selector string) string {
	return fmt.Sprintf(`[...document.querySelectorAll(%q)].map(e => e.textContent).join("\n")`, selector)
}

func hasText(selector, text string) chromedp.Action[chromedp.Void] {
	return waitJS(fmt.Sprintf(`(%s).includes(%q)`, textOf(selector), text))
}

// login opens the printed link and waits for the app to connect.
func login(t testing.TB, ctx context.Context, s *stack) {
	t.Helper()
	run(t, ctx, "logging in", chromedp.Navigate(s.loginURL()), waitJS(`window.zeroclaw && zeroclaw.state() === "connected"`))
}

// prompt types text into the input and presses Enter.
func prompt(t testing.TB, ctx context.Context, text string) {
	t.Helper()
	run(t, ctx, "prompting "+text,
		waitJS(`!document.getElementById("input").disabled`),
		chromedp.SetValue(chromedp.CSS("#input"), text),
		chromedp.Focus(chromedp.CSS("#input")),
		chromedp.KeyEvent("\r"))
}

func newSessionInPage(t testing.TB, ctx context.Context) string {
	t.Helper()
	run(t, ctx, "a new session",
		waitJS(`document.getElementById("agent").options.length > 0`),
		chromedp.Click(chromedp.CSS("#new")),
		waitJS(`location.hash.startsWith("#s=") && !document.getElementById("input").disabled`))
	return mustEval[string](t, ctx, `decodeURIComponent(location.hash.slice(3))`)
}

// docs/protocol.md, "The web client": the login page refuses a wrong token and the
// printed link logs in; a prompt's reply streams in as markdown with highlighted code.
func TestBrowserLoginAndAStreamedReply(t *testing.T) {
	s := newStack(t, "")
	ctx := browser(t)
	run(t, ctx, "the login page",
		chromedp.Navigate(s.base+"/"),
		chromedp.WaitVisible(chromedp.CSS("#login-form")))
	if mustEval[bool](t, ctx, `!!document.getElementById("composer")`) {
		t.Fatal("the app is served without a login")
	}
	run(t, ctx, "a wrong token",
		chromedp.Navigate(s.base+"/#token=wrong"),
		hasText("#login-error", "refused"))
	login(t, ctx, s)
	newSessionInPage(t, ctx)
	prompt(t, ctx, "hello **world**\n```go\nfunc main() { return }\n```")
	run(t, ctx, "the streamed reply",
		hasText(".msg.assistant", "echo: hello world"),
		waitJS(`document.querySelector(".msg.assistant strong")?.textContent === "world"`),
		waitJS(`[...document.querySelectorAll(".msg.assistant pre.code .hl-k")].some(e => e.textContent === "func")`),
		hasText(".msg.user", "hello **world**"))
}

// Approvals as a dialog; cancel; an upload with its marker in the prompt.
func TestBrowserApprovalCancelAndUpload(t *testing.T) {
	s := newStack(t, "")
	ctx := browser(t)
	login(t, ctx, s)
	newSessionInPage(t, ctx)

	prompt(t, ctx, `/tool shell {"command":"echo approved-run"}`)
	run(t, ctx, "the approval dialog, allowed once",
		waitJS(`document.getElementById("approval").open`),
		hasText("#approval-tool", "shell"),
		chromedp.Click(chromedp.CSS("#approve-once")),
		waitJS(`!document.getElementById("approval").open`),
		waitJS(`document.querySelector(".tool.done .tool-name")?.textContent === "shell"`),
		hasText(".tool-output pre", "approved-run"),
		hasText(".msg.assistant", "shell -> approved-run"))
	shot(t, ctx, "approved")

	prompt(t, ctx, `/tool shell {"command":"sleep 60"}`)
	run(t, ctx, "cancelling a running tool",
		waitJS(`document.getElementById("approval").open`),
		chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error { shot(t, ctx, "approval"); return nil }),
		chromedp.Click(chromedp.CSS("#approve-once")),
		waitJS(`document.querySelectorAll(".tool.running").length === 1`),
		waitJS(`!document.getElementById("cancel").disabled`),
		chromedp.Click(chromedp.CSS("#cancel")),
		hasText(".note", "turn ended: cancelled"),
		waitJS(`document.querySelectorAll(".tool.running").length === 0`))

	prompt(t, ctx, `/tool ask_user {"question":"Which colour?","choices":["red","blue"]}`)
	run(t, ctx, "the question as a dialog",
		waitJS(`document.getElementById("elicit").open`),
		hasText("#elicit-message", "Which colour?"),
		waitJS(`[...document.querySelectorAll("#elicit-fields option")].map(o => o.value).join() === "red,blue"`),
		chromedp.SetValue(chromedp.CSS("#elicit-fields select"), "blue"),
		chromedp.Click(chromedp.CSS("#elicit-accept")),
		waitJS(`!document.getElementById("elicit").open`),
		hasText(".msg.assistant", "ask_user -> blue"))

	file := filepath.Join(t.TempDir(), "notes.txt")
	if err := os.WriteFile(file, []byte(strings.Repeat("upload me\n", 300000)), 0o600); err != nil { // 3 MB: 3 chunks
		t.Fatal(err)
	}
	run(t, ctx, "attaching a file",
		chromedp.SetUploadFiles(chromedp.CSS("#file"), []string{file}),
		hasText("#staged .chip", "notes.txt"),
		waitJS(`document.getElementById("upload-progress").hidden`))
	prompt(t, ctx, "read this")
	run(t, ctx, "the prompt with its attachment", hasText(".msg.user", "[Document: notes.txt]"))
}

// A session open in a tab shows another client's prompts and replies live; a reload
// shows the history; the tab resumes after the daemon restarts.
func TestBrowserLiveHistoryAndRestart(t *testing.T) {
	s := newStack(t, "")
	ctx := browser(t)
	login(t, ctx, s)
	sid := newSessionInPage(t, ctx)
	prompt(t, ctx, "first from the tab")
	run(t, ctx, "the tab's turn", hasText(".msg.assistant", "echo: first from the tab"))

	// Another client (a second tab's protocol, as the TUI speaks it) prompts the same session.
	other := s.openTab()
	other.call("session/attach", `{"sessionId":"`+sid+`"}`)
	other.call("session/prompt", `{"sessionId":"`+sid+`","prompt":"from the terminal"}`)
	run(t, ctx, "the other client's turn, live",
		hasText(".msg.user", "from the terminal"),
		hasText(".msg.assistant", "echo: from the terminal"))

	// A second browser tab on the same session sees the same.
	tab2 := newTab(t, ctx)
	run(t, tab2, "a second tab opened on the session",
		chromedp.Navigate(s.base+"/#s="+sid),
		hasText(".msg.assistant", "echo: first from the tab"),
		hasText(".msg.assistant", "echo: from the terminal"))

	run(t, ctx, "a reload", chromedp.Reload(),
		waitJS(`window.zeroclaw && zeroclaw.state() === "connected"`),
		hasText(".msg.user", "first from the tab"),
		hasText(".msg.assistant", "echo: from the terminal"))
	if n := mustEval[int](t, ctx, `document.querySelectorAll(".msg.assistant").length`); n != 2 {
		t.Fatalf("after the reload the transcript has %d replies, want 2 (no duplicate)", n)
	}

	// A fork shows the rows it copied (it has nothing to replay).
	run(t, ctx, "forking the session",
		chromedp.Click(chromedp.CSS(`#sessions li.current button[aria-label^="Fork"]`)),
		waitJS(`location.hash !== "#s=`+sid+`"`),
		hasText(".msg.assistant", "echo: from the terminal"))
	run(t, ctx, "back to the session", chromedp.Navigate(s.base+"/#s="+sid), chromedp.Reload(),
		waitJS(`zeroclaw.state() === "connected"`), hasText(".msg.assistant", "echo: from the terminal"))

	stop(s.daemon)
	run(t, ctx, "the link dropped", waitJS(`zeroclaw.state() !== "connected"`))
	s.startDaemon()
	run(t, ctx, "reconnected",
		waitJS(`zeroclaw.state() === "connected"`),
		hasText(".note", "daemon restarted"))
	prompt(t, ctx, "after the restart")
	run(t, ctx, "a turn after the restart", hasText(".msg.assistant", "echo: after the restart"))
	if n := mustEval[int](t, ctx, `document.querySelectorAll(".msg.assistant").length`); n != 3 {
		t.Fatalf("after the restart the transcript has %d replies, want 3 (no gap, no duplicate)", n)
	}
}

// shot saves a screenshot of the page as DIR/name.png when ZEROCLAW_WEB_SHOTS=DIR
// (for a person to look at; the tests never judge pixels).
func shot(t testing.TB, ctx context.Context, name string) {
	dir := os.Getenv("ZEROCLAW_WEB_SHOTS")
	if dir == "" {
		return
	}
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Logf("screenshot %s: %v", name, err)
		return
	}
	os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644)
}

// At phone width the app still works: the sidebar folds behind the menu button.
func TestBrowserAtPhoneWidth(t *testing.T) {
	s := newStack(t, "")
	ctx := browser(t)
	run(t, ctx, "a phone's viewport", chromedp.EmulateViewport(390, 800))
	login(t, ctx, s)
	run(t, ctx, "the sidebar behind the menu",
		waitJS(`getComputedStyle(document.getElementById("menu")).display !== "none"`),
		chromedp.Click(chromedp.CSS("#menu")),
		waitJS(`document.getElementById("sidebar").getBoundingClientRect().left === 0`))
	newSessionInPage(t, ctx)
	run(t, ctx, "the sidebar folded", waitJS(`!document.getElementById("sidebar").classList.contains("open")`))
	prompt(t, ctx, "/think pondering\nsmall screen")
	run(t, ctx, "the reply", hasText(".msg.assistant", "echo: small screen"), hasText(".thought-body", "pondering"))
	if w := mustEval[int](t, ctx, `document.documentElement.scrollWidth`); w > 390 {
		t.Errorf("the page is %d px wide at a 390 px viewport", w)
	}
	shot(t, ctx, "phone")
}
