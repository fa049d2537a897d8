package tui

import (
	"encoding/json/jsontext"
	"encoding/json/v2"
	"strings"

	tea "charm.land/bubbletea/v2"
	"charm.land/huh/v2"

	"github.com/zeroclaw-labs/zeroclaw-go/client"
)

// elicitForm is an elicitation/create question as a Huh form: a list when the
// schema names choices, else a text input. Enter accepts, Esc declines, Ctrl-C
// cancels.
type elicitForm struct {
	e      client.Elicitation
	reply  chan client.ElicitationResult
	form   *huh.Form
	answer string
	done   bool
}

func newElicitForm(e client.Elicitation, reply chan client.ElicitationResult, width int, th theme) *elicitForm {
	f := &elicitForm{e: e, reply: reply}
	var field huh.Field
	if choices := schemaChoices(e.RequestedSchema); len(choices) > 0 {
		field = huh.NewSelect[string]().Title(e.Message).Options(huh.NewOptions(choices...)...).Value(&f.answer)
	} else {
		field = huh.NewInput().Title(e.Message).Value(&f.answer)
	}
	theme := huh.ThemeFunc(huh.ThemeCharm)
	if th.noColor {
		theme = huh.ThemeFunc(huh.ThemeBase)
	}
	f.form = huh.NewForm(huh.NewGroup(field)).WithShowHelp(true).WithTheme(theme).WithWidth(max(20, width-6))
	return f
}

func (f *elicitForm) init() tea.Cmd { return f.form.Init() }

func (f *elicitForm) resize(width int) { f.form = f.form.WithWidth(max(20, width-6)) }

func (f *elicitForm) view() string {
	return strings.TrimRight(f.form.View(), "\n") + "\n" + "Enter answers · Esc declines"
}

// update passes msg to the form and answers once it completes.
func (f *elicitForm) update(msg tea.Msg, m *Model) tea.Cmd {
	if k, ok := msg.(tea.KeyPressMsg); ok && k.String() == "esc" {
		f.finish(m, client.ElicitationResult{Action: "decline"})
		return m.nextQuestion()
	}
	model, cmd := f.form.Update(msg)
	if hf, ok := model.(*huh.Form); ok {
		f.form = hf
	}
	switch f.form.State {
	case huh.StateCompleted:
		f.finish(m, client.ElicitationResult{Action: "accept", Content: map[string]any{"answer": f.answer}})
		return m.nextQuestion()
	case huh.StateAborted:
		f.finish(m, client.ElicitationResult{Action: "cancel"})
		return m.nextQuestion()
	}
	return cmd
}

func (f *elicitForm) abort(m *Model) tea.Cmd {
	f.finish(m, client.ElicitationResult{Action: "cancel"})
	return m.nextQuestion()
}

func (f *elicitForm) finish(m *Model, r client.ElicitationResult) {
	if !f.done {
		f.done = true
		f.reply <- r
	}
	m.form = nil
	switch r.Action {
	case "accept":
		m.notice("answered: "+f.answer, false)
	default:
		m.notice("question "+r.Action+"d", false)
	}
}

// nextQuestion opens the form of the next question waiting, if any.
func (m *Model) nextQuestion() tea.Cmd {
	if m.form != nil || len(m.questions) == 0 {
		return nil
	}
	q := m.questions[0]
	m.questions = m.questions[1:]
	m.form = newElicitForm(q.e, q.reply, m.width, m.th)
	return m.form.init()
}

// schemaChoices returns the enum of the "answer" property of an elicitation schema.
func schemaChoices(schema jsontext.Value) []string {
	var s struct {
		Properties struct {
			Answer struct {
				Enum []string `json:"enum"`
			} `json:"answer"`
		} `json:"properties"`
	}
	if json.Unmarshal(schema, &s) != nil {
		return nil
	}
	return s.Properties.Answer.Enum
}
