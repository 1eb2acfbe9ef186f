package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/reverie-ai/reverie/api"
	"github.com/reverie-ai/reverie/chat"
)

// Keys is the key help shown when the chat starts.
const Keys = "Enter sends · Alt+Enter, Ctrl+J or a trailing \\ adds a line · ↑/↓ history · " +
	"Ctrl+C cancels a reply (twice at an empty prompt quits) · Ctrl+D quits · Ctrl+O shows the last tool result · " +
	"Ctrl+T the model's last thinking · /attach FILE · /threads, /switch N · /retry · /edit · /rename TITLE · /help"

// ChatCommands are the chat's own commands, handled by the terminal (not
// sent to the assistant); /help shows them after the assistant's commands.
const ChatCommands = `This chat's own commands:
/retry — answer your last message again (the earlier reply is kept as a branch)
/edit TEXT — replace your last message with TEXT and answer it again (the earlier version and what followed are kept as a branch); /edit alone puts it in the input to change, Enter resends, Esc cancels
/rename TITLE — name this conversation
/threads — list the conversations; /switch N, /switch NAME — go on in another one
/attach PATH — add a file to your next message`

// sendTimeout bounds handing one message to the backend.
const sendTimeout = 30 * time.Second

// InteractiveOptions configure RunInteractive.
type InteractiveOptions struct {
	// In and Out are the terminal (os.Stdin and os.Stdout, or a
	// pseudo-terminal in tests).
	In  io.Reader
	Out io.Writer
	// Env is the environment (TERM, NO_COLOR, REVERIE_CHAT_STYLE).
	Env []string
	// History is the input history (nil: in memory only).
	History *History
}

// RunInteractive runs the terminal chat on b until the user quits (Ctrl+D,
// or Ctrl+C twice at an empty prompt) or ctx ends. Ctrl+C while a reply is
// being written cancels that turn only. A history that cannot be saved is
// reported once and kept in memory.
func RunInteractive(ctx context.Context, b Backend, o InteractiveOptions) error {
	if o.History == nil {
		o.History, _ = OpenHistory("", 0)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	m := newModel(ctx, b, o)
	p := tea.NewProgram(m,
		tea.WithContext(ctx),
		tea.WithInput(o.In),
		tea.WithOutput(o.Out),
		tea.WithEnvironment(o.Env),
		tea.WithoutSignalHandler(),
	)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			ev, err := b.Next(ctx)
			if err != nil {
				if ctx.Err() == nil {
					p.Send(backendGone{err})
				}
				return
			}
			p.Send(eventMsg{ev})
		}
	}()
	final, err := p.Run()
	cancel()
	wg.Wait()
	if fm, ok := final.(*model); ok {
		if fm.pending > 0 {
			// Quitting while a reply is being written: stop it.
			cctx, ccancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			b.Cancel(cctx)
			ccancel()
		}
		if fm.err != nil {
			return fm.err
		}
	}
	if err != nil {
		if errors.Is(err, tea.ErrProgramKilled) && ctx.Err() != nil {
			return context.Cause(ctx)
		}
		return fmt.Errorf("terminal: %w", err)
	}
	return nil
}

type eventMsg struct{ ev Event }
type backendGone struct{ err error }

// printedMsg says the last batch of lines was printed above the view.
type printedMsg struct{}

// styles of the chat; plain when NO_COLOR is set.
type styles struct {
	user, dim, tool, fail, notice, status lipgloss.Style
}

func newStyles(color bool) styles {
	if !color {
		return styles{}
	}
	return styles{
		user:   lipgloss.NewStyle().Bold(true),
		dim:    lipgloss.NewStyle().Faint(true),
		tool:   lipgloss.NewStyle().Foreground(lipgloss.Color("6")),
		fail:   lipgloss.NewStyle().Foreground(lipgloss.Color("1")),
		notice: lipgloss.NewStyle().Foreground(lipgloss.Color("3")),
		status: lipgloss.NewStyle().Faint(true).Italic(true),
	}
}

type model struct {
	ctx  context.Context
	b    Backend
	hist *History
	st   styles
	md   markdown
	// fixedStyle: the markdown style came from REVERIE_CHAT_STYLE or NO_COLOR
	// and is not changed by the terminal's background colour.
	fixedStyle bool

	in      editor
	histIdx int    // position while browsing the history; Len() when not
	draft   string // the input before browsing started

	width, height int
	live          strings.Builder // the reply segment being written
	pending       int             // messages sent and not idle yet
	queued        []string        // typed while busy, sent when idle
	activity      string
	deferred      []string        // notifications held until the reply ends
	lastTool      string          // the last tool result, in full (Ctrl+O)
	thinking      strings.Builder // the reasoning being streamed, folded
	lastThinking  string          // the last finished reasoning, in full (Ctrl+T)
	armedQuit     bool            // Ctrl+C at an empty idle prompt: once more quits
	hint          string
	histWarned    bool
	err           error // why the chat ended, when it failed
	bannerShown   bool
	quitting      bool // quit once everything is printed
	// threads is the list /threads showed last (/switch N picks from it).
	threads []api.Thread
	// attached are the files staged with /attach for the next message.
	attached []Attached
	// asking are the approval requests waiting for a y/n key, oldest
	// first; the first is the one a key answers.
	asking []Event
	// editing is the user message a bare /edit put in the input (0: not
	// editing): Enter resends the input as its new text, Esc cancels.
	editing int64

	// Lines printed above the view. tea.Println commands run concurrently,
	// so one batch is in flight at a time to keep the order.
	out      []string
	printing bool
}

func newModel(ctx context.Context, b Backend, o InteractiveOptions) *model {
	m := &model{ctx: ctx, b: b, hist: o.History, width: 80, height: 24}
	m.histIdx = m.hist.Len()
	noColor := lookupEnv(o.Env, "NO_COLOR") != ""
	m.st = newStyles(!noColor)
	m.md.style = "dark"
	switch s := lookupEnv(o.Env, "REVERIE_CHAT_STYLE"); {
	case s != "":
		m.md.style, m.fixedStyle = s, true
	case noColor:
		m.md.style, m.fixedStyle = "notty", true
	}
	return m
}

func lookupEnv(env []string, key string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], key+"="); ok {
			return v
		}
	}
	return ""
}

func (m *model) Init() tea.Cmd {
	if !m.fixedStyle {
		return tea.RequestBackgroundColor
	}
	return nil
}

// print queues s, wrapped to the terminal's width, to be printed above the
// view.
func (m *model) print(s string) { m.out = append(m.out, ansi.Wrap(s, m.width, "")) }

// flushed adds to cmd the printing of what is queued (one batch in flight
// at a time) and quitting once everything is printed.
func (m *model) flushed(cmd tea.Cmd) tea.Cmd {
	cmds := []tea.Cmd{cmd}
	if !m.printing && len(m.out) > 0 {
		m.printing = true
		text := strings.Join(m.out, "\n")
		m.out = nil
		cmds = append(cmds, tea.Sequence(tea.Println(text), func() tea.Msg { return printedMsg{} }))
	}
	if m.quitting && !m.printing {
		cmds = append(cmds, tea.Quit)
	}
	return tea.Batch(cmds...)
}

func (m *model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	var cmd tea.Cmd
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = max(msg.Width, 20), max(msg.Height, 5)
		if !m.bannerShown {
			m.bannerShown = true
			m.print(m.st.user.Render("Reverie") + m.st.dim.Render(fmt.Sprintf(" · %s · %s", sanitize(string(m.b.Thread())), sanitize(m.b.Where()))))
			m.print(m.st.dim.Render(Keys))
		}
	case printedMsg:
		m.printing = false
	case tea.BackgroundColorMsg:
		if !m.fixedStyle {
			m.md.style = "light"
			if msg.IsDark() {
				m.md.style = "dark"
			}
		}
	case tea.PasteMsg:
		m.in.insert(msg.Content)
		m.armedQuit = false
	case tea.KeyPressMsg:
		cmd = m.key(msg)
	case eventMsg:
		m.event(msg.ev)
	case backendGone:
		m.err = fmt.Errorf("lost the connection to the assistant: %w", msg.err)
		m.print(m.st.fail.Render("✗ " + sanitize(m.err.Error())))
		m.quitting = true
	}
	return m, m.flushed(cmd)
}

func (m *model) key(k tea.KeyPressMsg) tea.Cmd {
	s := k.String()
	if s != "ctrl+c" {
		m.armedQuit = false
		m.hint = ""
	}
	if len(m.asking) > 0 && m.in.empty() {
		switch s {
		case "y", "Y", "n", "N":
			m.answer(s == "y" || s == "Y")
			return nil
		}
	}
	switch s {
	case "ctrl+c":
		return m.interrupt()
	case "ctrl+d":
		if m.in.empty() {
			m.quitting = true
			return nil
		}
		m.in.del()
	case "enter":
		m.submit()
	case "alt+enter", "ctrl+j", "shift+enter":
		m.in.insert("\n")
	case "up":
		if !m.in.up() {
			m.historyPrev()
		}
	case "down":
		if !m.in.down() {
			m.historyNext()
		}
	case "left", "ctrl+b":
		m.in.left()
	case "right", "ctrl+f":
		m.in.right()
	case "home", "ctrl+a":
		m.in.home()
	case "end", "ctrl+e":
		m.in.end()
	case "alt+left", "ctrl+left", "alt+b":
		m.in.pos = m.in.wordBack()
	case "alt+right", "ctrl+right", "alt+f":
		m.in.pos = m.in.wordForward()
	case "backspace", "ctrl+h":
		m.in.backspace()
	case "delete":
		m.in.del()
	case "ctrl+u":
		m.in.killBack()
	case "ctrl+k":
		m.in.killForward()
	case "ctrl+w", "alt+backspace":
		m.in.deleteWord()
	case "ctrl+l":
		return tea.ClearScreen
	case "ctrl+z":
		return tea.Suspend
	case "ctrl+t":
		switch {
		case m.thinking.Len() > 0:
			m.print(m.st.dim.Render(sanitize(m.thinking.String())))
		case m.lastThinking == "":
			m.hint = "no thinking yet (the model streamed none)"
		default:
			m.print(m.st.dim.Render(sanitize(m.lastThinking)))
		}
	case "ctrl+o":
		if m.lastTool == "" {
			m.hint = "no tool result yet"
		} else {
			m.print(m.st.dim.Render(sanitize(m.lastTool)))
		}
	case "esc":
		if m.editing != 0 {
			m.editing = 0
			m.in.set("")
			m.histIdx = m.hist.Len()
			m.print(m.st.dim.Render("edit cancelled; your message stays as it was"))
			m.drain()
		}
	case "tab":
		m.in.insert("  ")
	default:
		if k.Text != "" && k.Mod&(tea.ModCtrl|tea.ModAlt) == 0 {
			m.in.insert(k.Text)
		}
	}
	return nil
}

// interrupt is Ctrl+C: cancel the turn in progress, else clear the input,
// else arm quitting; a second Ctrl+C at an empty prompt quits.
func (m *model) interrupt() tea.Cmd {
	switch {
	case m.pending > 0:
		if n := len(m.queued); n > 0 {
			m.print(m.st.dim.Render(fmt.Sprintf("(%d queued message(s) dropped; ↑ recalls them)", n)))
			m.queued = nil
		}
		ctx, cancel := context.WithTimeout(m.ctx, sendTimeout)
		what := m.b.Cancel(ctx)
		cancel()
		m.print(m.st.dim.Render("^C " + what))
		m.activity = "cancelling"
		m.armedQuit = false
	case !m.in.empty():
		m.in.set("")
		m.histIdx = m.hist.Len()
	case m.armedQuit:
		m.quitting = true
	default:
		m.armedQuit = true
		m.hint = "press Ctrl+C again or Ctrl+D to quit"
	}
	return nil
}

// submit is Enter: a trailing backslash continues on a new line, else the
// input is sent (or queued while a reply is being written).
func (m *model) submit() {
	text := m.in.String()
	if m.in.pos == len(m.in.buf) {
		if cont, ok := strings.CutSuffix(text, `\`); ok {
			m.in.set(cont + "\n")
			return
		}
	}
	if strings.TrimSpace(text) == "" {
		return
	}
	if err := m.hist.Add(text); err != nil && !m.histWarned {
		m.histWarned = true
		m.print(m.st.fail.Render("✗ " + sanitize(err.Error()) + " (history kept in memory only)"))
	}
	m.histIdx, m.draft = m.hist.Len(), ""
	m.in.set("")
	if id := m.editing; id != 0 {
		m.editing = 0
		m.edit(id, text)
		m.drain() // when the edit was refused: nothing is being answered
		return
	}
	if p, ok := localCommand(text, "retry"); ok && p != "" {
		m.print(m.st.dim.Render("/retry takes no argument: it answers your last message again (/edit TEXT changes it)"))
		return
	}
	if p, ok := localCommand(text, "rename"); ok {
		m.rename(p)
		return
	}
	if p, ok := localCommand(text, "attach"); ok {
		m.attach(p)
		return
	}
	if _, ok := localCommand(text, "threads"); ok {
		m.listThreads()
		return
	}
	if p, ok := localCommand(text, "switch"); ok {
		m.switchTo(p)
		return
	}
	if m.pending > 0 {
		m.queued = append(m.queued, text)
		return
	}
	m.run(text)
}

// run sends text, or runs the chat command it is (/retry, /edit [TEXT]:
// they wait in the queue like messages while a reply is being written,
// which it still is for a moment after the reply is shown).
func (m *model) run(text string) {
	if _, ok := localCommand(text, "retry"); ok {
		m.retry()
		return
	}
	if p, ok := localCommand(text, "edit"); ok {
		m.startEdit(p)
		return
	}
	m.send(text)
}

// localCommand reports whether text is the chat's own command /name
// (handled here, not sent) and returns its argument.
func localCommand(text, name string) (string, bool) {
	t := strings.TrimSpace(text)
	if t != "/"+name && !strings.HasPrefix(t, "/"+name+" ") {
		return "", false
	}
	return strings.TrimSpace(strings.TrimPrefix(t, "/"+name)), true
}

// listThreads is /threads: the conversations, numbered for /switch.
func (m *model) listThreads() {
	ctx, cancel := context.WithTimeout(m.ctx, sendTimeout)
	ts, err := m.b.Threads(ctx)
	cancel()
	if err != nil {
		m.print(m.st.fail.Render("✗ no conversation list: " + sanitize(err.Error())))
		return
	}
	m.threads = ts
	if len(ts) == 0 {
		m.print(m.st.dim.Render("No conversations yet."))
		return
	}
	cur := m.b.Thread()
	var b strings.Builder
	b.WriteString("Conversations (/switch N or /switch NAME):")
	for i, t := range ts {
		title := t.Title
		if title == "" {
			title = "(untitled)"
		}
		mark := ""
		if t.ID == cur {
			mark = "  ← this one"
		}
		fmt.Fprintf(&b, "\n%3d. %s · %s · %s%s", i+1, sanitize(title), sanitize(string(t.ID)), t.UpdatedAt.Local().Format("Jan 2 15:04"), mark)
	}
	m.print(m.st.dim.Render(b.String()))
}

// switchTo is /switch N|THREAD|NAME: the chat goes on in another
// conversation (NAME is a thread of this chat's channel: cli:NAME).
func (m *model) switchTo(arg string) {
	if arg == "" {
		m.print(m.st.dim.Render("/switch N (from /threads), /switch THREAD (cli:ann) or /switch NAME (a new or existing conversation)"))
		return
	}
	if m.pending > 0 {
		m.print(m.st.fail.Render("✗ a reply is still being written; switch when it is done (or Ctrl+C it)"))
		return
	}
	target := chat.ThreadID(arg)
	if n, err := strconv.Atoi(arg); err == nil {
		if n < 1 || n > len(m.threads) {
			m.print(m.st.fail.Render(fmt.Sprintf("✗ no conversation %d; /threads lists them", n)))
			return
		}
		target = m.threads[n-1].ID
	} else if !strings.Contains(arg, ":") {
		target = chat.ThreadID(m.b.Thread().Channel() + ":" + arg)
	}
	ctx, cancel := context.WithTimeout(m.ctx, sendTimeout)
	err := m.b.Switch(ctx, target)
	cancel()
	if err != nil {
		m.print(m.st.fail.Render("✗ not switched: " + sanitize(err.Error())))
		return
	}
	m.attached = nil
	m.print("\n" + m.st.user.Render("Now in "+sanitize(string(target))) + m.st.dim.Render(" · what you send goes to this conversation"))
}

// busyRefused reports (and says) that what is being asked must wait for
// the reply being written.
func (m *model) busyRefused(what string) bool {
	if m.pending == 0 {
		return false
	}
	m.print(m.st.fail.Render("✗ a reply is still being written; " + what + " when it is done (or Ctrl+C it)"))
	return true
}

// lastMessage is the last message the user wrote, or false (said) when
// there is none or it cannot be read; what is "retry" or "edit".
func (m *model) lastMessage(what string) (api.Message, bool) {
	ctx, cancel := context.WithTimeout(m.ctx, sendTimeout)
	msg, ok, err := m.b.LastUserMessage(ctx)
	cancel()
	switch {
	case err != nil:
		m.print(m.st.fail.Render("✗ cannot " + what + ": " + sanitize(err.Error())))
		return api.Message{}, false
	case !ok:
		m.print(m.st.fail.Render("✗ nothing to " + what + " yet: this conversation has no message of yours; send one first"))
		return api.Message{}, false
	}
	return msg, true
}

// retry is /retry: the last message is answered again; the new reply
// streams below a mark (the earlier one stays above it in the scrollback,
// and is kept as a branch of the conversation).
func (m *model) retry() {
	if m.busyRefused("/retry") {
		return
	}
	msg, ok := m.lastMessage("retry")
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(m.ctx, sendTimeout)
	err := m.b.Regenerate(ctx)
	cancel()
	if err != nil {
		m.print(m.st.fail.Render("✗ not retried: " + sanitize(err.Error())))
		return
	}
	m.print("\n" + m.st.dim.Render("↻ answering again (the reply above is kept as an earlier version):"))
	m.print(m.echo(msg.Text)[1:])
	m.pending++
	m.activity = "thinking"
}

// startEdit is /edit [TEXT]: with TEXT the last message is replaced at
// once; bare, it is put in the input for editing.
func (m *model) startEdit(text string) {
	if m.busyRefused("/edit") {
		return
	}
	msg, ok := m.lastMessage("edit")
	if !ok {
		return
	}
	if text != "" {
		m.edit(msg.ID, text)
		return
	}
	if !m.in.empty() { // typed while a bare /edit waited in the queue
		m.print(m.st.fail.Render("✗ not editing: the input holds a draft; send or clear it, then /edit"))
		return
	}
	m.editing = msg.ID
	m.in.set(msg.Text)
}

// edit resends text as the new version of the user message id.
func (m *model) edit(id int64, text string) {
	if m.busyRefused("edit") {
		return
	}
	ctx, cancel := context.WithTimeout(m.ctx, sendTimeout)
	err := m.b.Edit(ctx, id, text)
	cancel()
	if err != nil {
		m.print(m.st.fail.Render("✗ not edited: " + sanitize(err.Error())))
		return
	}
	m.print("\n" + m.st.dim.Render("✎ your last message, edited (the earlier version and what followed are kept as a branch):"))
	m.print(m.echo(text)[1:])
	m.pending++
	m.activity = "thinking"
}

// rename is /rename TITLE.
func (m *model) rename(title string) {
	if title == "" {
		m.print(m.st.dim.Render("/rename TITLE names this conversation (shown by /threads and on the web page), e.g. /rename Lyon trip"))
		return
	}
	ctx, cancel := context.WithTimeout(m.ctx, sendTimeout)
	th, err := m.b.Rename(ctx, title)
	cancel()
	if err != nil {
		m.print(m.st.fail.Render("✗ not renamed: " + sanitize(err.Error())))
		return
	}
	m.print(m.st.dim.Render("This conversation is now “" + sanitize(th.Title) + "”"))
}

// attach is /attach PATH: the file is saved for the assistant and goes
// with the next message.
func (m *model) attach(p string) {
	if p == "" {
		m.print(m.st.dim.Render("/attach PATH adds a file (an image, a document) to your next message; the assistant gets it in its workspace."))
		return
	}
	ctx, cancel := context.WithTimeout(m.ctx, sendTimeout)
	a, err := m.b.Attach(ctx, p)
	cancel()
	if err != nil {
		m.print(m.st.fail.Render("✗ not attached: " + sanitize(err.Error())))
		return
	}
	m.attached = append(m.attached, a)
	m.print(m.st.dim.Render("📎 " + sanitize(a.Describe()) + " goes with your next message"))
}

func (m *model) send(text string) {
	isCmd := commandText().MatchString(strings.TrimSpace(text))
	m.print(m.echo(text))
	if _, ok := localCommand(text, "help"); ok {
		m.print(m.st.dim.Render(ChatCommands))
	}
	if !isCmd {
		for _, a := range m.attached {
			m.print(m.st.user.Render("  📎 " + sanitize(a.Describe())))
		}
	}
	ctx, cancel := context.WithTimeout(m.ctx, sendTimeout)
	err := m.b.Send(ctx, text)
	cancel()
	if err != nil {
		m.print(m.st.fail.Render("✗ not sent: " + sanitize(err.Error())))
		return
	}
	if !isCmd {
		m.attached = nil
	}
	m.pending++
	m.activity = "thinking"
}

func (m *model) echo(text string) string {
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		p := "  "
		if i == 0 {
			p = "› "
		}
		lines[i] = m.st.user.Render(p + l)
	}
	return "\n" + strings.Join(lines, "\n")
}

func (m *model) historyPrev() {
	if m.histIdx == 0 {
		return
	}
	if m.histIdx == m.hist.Len() {
		m.draft = m.in.String()
	}
	m.histIdx--
	m.in.set(m.hist.At(m.histIdx))
}

func (m *model) historyNext() {
	if m.histIdx >= m.hist.Len() {
		return
	}
	m.histIdx++
	if m.histIdx == m.hist.Len() {
		m.in.set(m.draft)
		return
	}
	m.in.set(m.hist.At(m.histIdx))
}

// event shows what the backend reports.
func (m *model) event(ev Event) {
	if ev.Kind != EventThinking && ev.Kind != EventNotify && ev.Kind != EventApproval {
		m.foldThinking()
	}
	switch ev.Kind {
	case EventThinking:
		m.thinking.WriteString(ev.Text)
		m.activity = "thinking"
	case EventWait:
		// Said as it happens; the spinner keeps going.
		m.flushLive()
		m.print(m.st.dim.Render("⏳ " + sanitize(ev.Text)))
		m.activity = "waiting: " + sanitize(ev.Text)
	case EventDelta:
		m.live.WriteString(ev.Text)
		m.activity = "writing"
	case EventToolCall:
		m.flushLive()
		m.print(m.st.tool.Render("⚙ " + toolCallLine(ev.Tool, ev.Arguments)))
		m.activity = "running " + sanitize(ev.Tool)
	case EventToolResult:
		m.lastTool = ev.Result
		mark, style := "↳", m.st.dim
		if ev.IsError {
			mark, style = "✗", m.st.fail
		}
		m.print(style.Render("  " + mark + " " + toolResultLine(ev.Result)))
		m.activity = "thinking"
	case EventDone:
		text := ev.Text
		if strings.TrimSpace(text) == "" {
			text = m.live.String()
		}
		m.live.Reset()
		if strings.TrimSpace(text) != "" {
			m.print("\n" + m.md.render(text, m.width))
		}
	case EventError:
		m.flushLive()
		m.print(m.st.fail.Render("✗ " + sanitize(ev.Text)))
	case EventApproval:
		m.approval(ev)
	case EventNotify:
		line := m.st.notice.Render("◆ " + sanitize(ev.Text))
		if m.pending > 0 || m.live.Len() > 0 {
			m.deferred = append(m.deferred, line)
		} else {
			m.print("\n" + line)
		}
	case EventIdle:
		if m.pending > 0 {
			m.pending--
		}
		if m.pending == 0 {
			m.flushLive()
			m.activity = ""
			for _, d := range m.deferred {
				m.print("\n" + d)
			}
			m.deferred = nil
			m.drain()
		}
	}
}

// drain runs what was typed while a reply was being written, in order,
// until one of them is being answered, or a bare /edit has put the last
// message in the input (the rest waits until it is resent or cancelled).
func (m *model) drain() {
	for m.pending == 0 && m.editing == 0 && len(m.queued) > 0 {
		next := m.queued[0]
		m.queued = m.queued[1:]
		m.run(next)
	}
}

// approval shows an approval request (and asks for y/n) or its outcome.
func (m *model) approval(ev Event) {
	switch ev.State {
	case chat.ApprovalPending, "":
		for _, a := range m.asking {
			if a.Approval == ev.Approval {
				return // shown already (sent again after a reconnect)
			}
		}
		m.flushLive()
		m.asking = append(m.asking, ev)
		m.print(m.st.notice.Render("⚠ approve " + toolCallLine(ev.Tool, ev.Arguments) + "?"))
		m.print(m.st.dim.Render("  " + sanitize(ev.Text) + " — press y to allow, n to refuse"))
		m.activity = "waiting for your approval (y/n)"
		return
	}
	for i, a := range m.asking {
		if a.Approval == ev.Approval {
			m.asking = append(m.asking[:i], m.asking[i+1:]...)
			break
		}
	}
	outcome := map[chat.ApprovalState]string{
		chat.ApprovalApproved: "✓ approved: ",
		chat.ApprovalDenied:   "✗ denied: ",
		chat.ApprovalExpired:  "✗ not answered in time: ",
	}[ev.State]
	m.print(m.st.dim.Render("  " + outcome + sanitize(ev.Tool)))
	if len(m.asking) == 0 && m.activity == "waiting for your approval (y/n)" {
		m.activity = "thinking"
	}
}

// answer answers the oldest request waiting for a key.
func (m *model) answer(approve bool) {
	a := m.asking[0]
	ctx, cancel := context.WithTimeout(m.ctx, sendTimeout)
	err := m.b.Answer(ctx, a.Approval, approve)
	cancel()
	if err != nil {
		m.print(m.st.fail.Render("✗ the answer did not reach the assistant: " + sanitize(err.Error())))
	}
}

// foldThinking ends the reasoning being streamed: it is printed as one
// folded line (Ctrl+T unfolds it) and kept.
func (m *model) foldThinking() {
	if m.thinking.Len() == 0 {
		return
	}
	m.lastThinking = m.thinking.String()
	m.thinking.Reset()
	m.flushLive()
	words := len(strings.Fields(m.lastThinking))
	m.print(m.st.dim.Render(fmt.Sprintf("▸ thought (%d words) · Ctrl+T shows it", words)))
}

// flushLive prints the segment written so far (text before a tool call,
// or what a cancelled reply had written) and clears it.
func (m *model) flushLive() {
	if strings.TrimSpace(m.live.String()) != "" {
		m.print("\n" + m.md.render(m.live.String(), m.width))
	}
	m.live.Reset()
}

func (m *model) View() tea.View {
	var b strings.Builder
	inputRows, curX, curY := m.in.render(m.width, "› ", "  ")
	lines := 0
	if m.thinking.Len() > 0 {
		// Folded while it streams: one line, its latest words.
		tail := strings.Join(strings.Fields(sanitize(m.thinking.String())), " ")
		room := max(m.width-14, 10)
		if ansi.StringWidth(tail) > room {
			tail = "…" + ansi.TruncateLeft(tail, ansi.StringWidth(tail)-room+1, "")
		}
		b.WriteString(m.st.dim.Render("▸ thinking: "+tail) + "\n")
		lines++
	}
	if m.live.Len() > 0 {
		wrapped := strings.Split(ansi.Wrap(sanitize(m.live.String()), max(m.width-2, 10), ""), "\n")
		keep := max(m.height-len(inputRows)-4, 3)
		if len(wrapped) > keep {
			wrapped = wrapped[len(wrapped)-keep:]
		}
		for _, l := range wrapped {
			b.WriteString("  " + l + "\n")
			lines++
		}
	}
	if m.pending > 0 {
		status := "… " + m.activity + " · Ctrl+C cancels"
		if n := len(m.queued); n > 0 {
			status += fmt.Sprintf(" · %d queued", n)
		}
		b.WriteString(m.st.status.Render(status) + "\n")
		lines++
	}
	if n := len(m.attached); n > 0 {
		b.WriteString(m.st.dim.Render(fmt.Sprintf("📎 %d file(s) attached to your next message", n)) + "\n")
		lines++
	}
	if m.editing != 0 {
		b.WriteString(m.st.notice.Render("✎ editing your last message · Enter resends it · Esc cancels") + "\n")
		lines++
	}
	if m.hint != "" {
		b.WriteString(m.st.dim.Render(m.hint) + "\n")
		lines++
	}
	b.WriteString(strings.Join(inputRows, "\n"))
	v := tea.NewView(b.String())
	v.Cursor = tea.NewCursor(curX, lines+curY)
	return v
}
