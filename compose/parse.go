package compose

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/augceo/vibe/jsonv"

	"github.com/augceo/vibe/schema"
)

// PipelineFile names a pipeline expression in errors.
const PipelineFile = "<pipeline>"

// Expr is a node of a parsed pipeline expression: a *Prompt, a *Call, a
// *Ref to a bound name, or a *Program of bindings.
type Expr interface {
	// Pos is the byte offset of the node in the expression.
	Pos() int
	String() string
}

// Prompt is the pipeline's input: a quoted text, or the bare name prompt
// (Text == "") when the text is given at run time.
type Prompt struct {
	Text   string
	Offset int
}

// Call applies an instruction to arguments.
type Call struct {
	Name   string // the instruction's name as written
	Args   []Arg
	Offset int
}

// Arg is an argument of a Call, named (participants: X) or not.
type Arg struct {
	Name  string
	Value Expr
}

// Program is the sequential form of a pipeline, as seed 001 writes it:
//
//	const participants = IdentifyParticipants(prompt);
//	const invitation = DraftInvitation(participants, FindCommonSlot(participants));
//
// Each binding names a stage once; later stages use the name. It is the
// same pipeline as the nested form with each name replaced by its stage.
// Result is the pipeline's last stage: the last binding's value, or a final
// expression written after the bindings.
type Program struct {
	Bindings []*Binding
	Final    Expr // the expression after the last binding, or nil
}

// Binding is "const Name = Value".
type Binding struct {
	Name   string
	Value  Expr
	Offset int // of the name
}

// Ref is a use of a bound name, standing for the binding's value.
type Ref struct {
	Name    string
	Binding *Binding
	Offset  int
}

func (p *Prompt) Pos() int  { return p.Offset }
func (c *Call) Pos() int    { return c.Offset }
func (r *Ref) Pos() int     { return r.Offset }
func (p *Program) Pos() int { return p.Bindings[0].Offset }

// Result is the program's last stage.
func (p *Program) Result() Expr {
	if p.Final != nil {
		return p.Final
	}
	return p.Bindings[len(p.Bindings)-1].Value
}

func (r *Ref) String() string { return r.Name }

func (p *Program) String() string {
	var b strings.Builder
	for i, bd := range p.Bindings {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString("const " + bd.Name + " = " + bd.Value.String() + ";")
	}
	if p.Final != nil {
		b.WriteString(" " + p.Final.String())
	}
	return b.String()
}

func (p *Prompt) String() string {
	if p.Text == "" {
		return "prompt"
	}
	return string(jsonv.StringValue(p.Text).AppendJSON(nil))
}

func (c *Call) String() string {
	if len(c.Args) == 0 {
		return c.Name
	}
	args := make([]string, len(c.Args))
	for i, a := range c.Args {
		args[i] = a.Value.String()
		if a.Name != "" {
			args[i] = a.Name + ": " + args[i]
		}
	}
	return c.Name + "(" + strings.Join(args, ", ") + ")"
}

// ParsePipeline parses a pipeline expression. The three forms are accepted
// and mean the same:
//
//	"Schedule a meeting" | IdentifyParticipants | FetchAvailability
//	FetchAvailability(IdentifyParticipants("Schedule a meeting"))
//	const participants = IdentifyParticipants("Schedule a meeting");
//	const availability = FetchAvailability(participants);
//
// In a "|" chain, the stage before becomes the first argument of the next
// (X | F(a) is F(X, a)). Arguments may be named (DraftInvitation(
// participants: IdentifyParticipants(prompt), slot: …)); the bare name
// prompt stands for a prompt given at run time; "//" starts a comment that
// runs to the end of the line. Errors are *schema.Error values located by
// line and column in PipelineFile.
//
// In the sequential form (a *Program), each "const name = stage;" binds a
// name once, and a bare name is the stage bound to it; a bare name that is
// bound nowhere is an instruction called without arguments, as in the other
// forms. A name used before its binding, bound twice, or bound and never
// used (but for the last binding, the pipeline's result) is an error at the
// name; all such errors are reported together, as a schema.ErrorList.
//
// An expression of more than MaxSteps instruction calls is refused where
// the call past the bound stands.
func ParsePipeline(expr string) (Expr, error) { return parsePipeline(expr, MaxSteps) }

// PipelinePrompt says how a pipeline expression takes the person's
// request: at run time, where it names the bare prompt, or quoted in the
// expression. An expression that does not parse does neither; compiling
// it says what is wrong.
func PipelinePrompt(expr string) (atRunTime, quoted bool) {
	e, err := ParsePipeline(expr)
	if err != nil {
		return false, false
	}
	var walk func(e Expr)
	walk = func(e Expr) {
		switch e := e.(type) {
		case *Prompt:
			atRunTime, quoted = atRunTime || e.Text == "", quoted || e.Text != ""
		case *Call:
			for _, a := range e.Args {
				walk(a.Value)
			}
		case *Program:
			// A *Ref stands for a binding, walked here.
			for _, b := range e.Bindings {
				walk(b.Value)
			}
			if e.Final != nil {
				walk(e.Final)
			}
		}
	}
	walk(e)
	return atRunTime, quoted
}

// parsePipeline parses expr, refusing it at its call number maxCalls+1. The
// bound keeps the parser's recursion, and all that follows, in proportion.
func parsePipeline(expr string, maxCalls int) (Expr, error) {
	p := &parser{src: expr, maxCalls: maxCalls}
	p.next()
	if p.tok.kind == tEOF {
		return nil, p.errorAt(0, "empty pipeline: expected a quoted prompt or an instruction name")
	}
	if p.atConst() {
		return p.program()
	}
	e, err := p.chain()
	if err != nil {
		return nil, err
	}
	if p.tok.kind != tEOF {
		return nil, p.errorf("unexpected %s after the end of the pipeline", p.tok)
	}
	return e, nil
}

type tokKind int

const (
	tEOF tokKind = iota
	tName
	tString
	tPipe
	tLParen
	tRParen
	tComma
	tColon
	tEquals
	tSemicolon
	tBad
)

type token struct {
	kind tokKind
	text string // a name, or a string's unquoted text, or a bad character
	pos  int
}

func (t token) String() string {
	switch t.kind {
	case tEOF:
		return "end of input"
	case tName:
		return "name " + strconv.Quote(t.text)
	case tString:
		return "string " + strconv.Quote(t.text)
	case tPipe:
		return `"|"`
	case tLParen:
		return `"("`
	case tRParen:
		return `")"`
	case tComma:
		return `","`
	case tColon:
		return `":"`
	case tEquals:
		return `"="`
	case tSemicolon:
		return `";"`
	}
	return strconv.Quote(t.text)
}

type parser struct {
	src      string
	off      int
	tok      token
	lexErr   *schema.Error
	calls    int // instruction calls read so far
	maxCalls int

	// In a program: the bindings so far by name, and the bare names read
	// that were bound nowhere yet (checked against later bindings).
	bound    map[string]*Binding
	bare     []bareName
	bindings int // the bindings complete so far
}

// bareName is a bare name read in a program before any binding of it was
// complete.
type bareName struct {
	call   *Call
	before int // the bindings complete when it was read
}

func (p *parser) errorAt(pos int, format string, args ...any) *schema.Error {
	return locate(p.src, pos, fmt.Sprintf(format, args...))
}

// locate returns an error at byte offset off of the expression src.
func locate(src string, off int, msg string) *schema.Error {
	line, col := position(src, off)
	return &schema.Error{File: PipelineFile, Line: line, Column: col, Message: msg}
}

// position returns the line and column of byte offset off of src.
func position(src string, off int) (line, col int) {
	line, col = 1, 1
	for i, r := range src {
		if i >= off {
			break
		}
		if r == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return line, col
}

func (p *parser) errorf(format string, args ...any) *schema.Error {
	if p.lexErr != nil {
		return p.lexErr
	}
	return p.errorAt(p.tok.pos, format, args...)
}

// next reads the next token into p.tok.
func (p *parser) next() {
	for p.off < len(p.src) {
		r, w := utf8.DecodeRuneInString(p.src[p.off:])
		switch {
		case unicode.IsSpace(r):
			p.off += w
			continue
		case strings.HasPrefix(p.src[p.off:], "//"):
			if i := strings.IndexByte(p.src[p.off:], '\n'); i >= 0 {
				p.off += i
			} else {
				p.off = len(p.src)
			}
			continue
		}
		break
	}
	start := p.off
	if p.off >= len(p.src) {
		p.tok = token{kind: tEOF, pos: start}
		return
	}
	r, w := utf8.DecodeRuneInString(p.src[p.off:])
	single := map[rune]tokKind{'|': tPipe, '(': tLParen, ')': tRParen, ',': tComma, ':': tColon, '=': tEquals, ';': tSemicolon}
	if k, ok := single[r]; ok {
		p.off += w
		p.tok = token{kind: k, text: string(r), pos: start}
		return
	}
	if r == '"' || r == '\'' {
		p.tok = p.str(r)
		return
	}
	if isNameRune(r, true) {
		for p.off < len(p.src) {
			r, w := utf8.DecodeRuneInString(p.src[p.off:])
			if !isNameRune(r, false) {
				break
			}
			p.off += w
		}
		p.tok = token{kind: tName, text: p.src[start:p.off], pos: start}
		return
	}
	if r == utf8.RuneError && w == 1 {
		p.tok = p.bad(start, "invalid UTF-8")
		return
	}
	if err := schema.CheckName(string(r)); err != nil {
		p.tok = p.bad(start, fmt.Sprintf("the pipeline %v: its names must read as they are written", err))
		return
	}
	p.off += w
	p.tok = token{kind: tBad, text: string(r), pos: start}
}

func isNameRune(r rune, first bool) bool {
	if unicode.IsLetter(r) || r == '_' {
		return true
	}
	return !first && (unicode.IsDigit(r) || r == '/')
}

// str reads a quoted string. Both quotes take JSON's escapes (\" \\ \/ \b
// \f \n \r \t \uXXXX) and \'.
func (p *parser) str(quote rune) token {
	start := p.off
	p.off++
	var b strings.Builder
	for p.off < len(p.src) {
		r, w := utf8.DecodeRuneInString(p.src[p.off:])
		switch {
		case r == quote:
			p.off++
			return token{kind: tString, text: b.String(), pos: start}
		case r == '\n':
			return p.bad(start, "unterminated string: a quoted prompt must end on its line")
		case r == utf8.RuneError && w == 1:
			return p.bad(p.off, "invalid UTF-8 in a quoted prompt")
		case r == '\\':
			r, n := unescape(p.src[p.off:])
			if n == 0 {
				end := min(p.off+2, len(p.src))
				return p.bad(p.off, fmt.Sprintf("invalid escape %q in a quoted prompt", p.src[p.off:end]))
			}
			b.WriteRune(r)
			p.off += n
			continue
		}
		b.WriteRune(r)
		p.off += w
	}
	return p.bad(start, fmt.Sprintf("unterminated string: missing closing %c", quote))
}

// bad records a lexical error at off and ends the input.
func (p *parser) bad(off int, msg string) token {
	p.lexErr = locate(p.src, off, msg)
	p.off = len(p.src)
	return token{kind: tBad, text: "?", pos: off}
}

// unescape decodes the escape at the start of s; n is 0 when it is invalid.
func unescape(s string) (r rune, n int) {
	if len(s) < 2 {
		return 0, 0
	}
	switch s[1] {
	case '"', '\'', '\\', '/':
		return rune(s[1]), 2
	case 'b':
		return '\b', 2
	case 'f':
		return '\f', 2
	case 'n':
		return '\n', 2
	case 'r':
		return '\r', 2
	case 't':
		return '\t', 2
	case 'u':
		hex := func(s string) (rune, bool) {
			if len(s) < 4 {
				return 0, false
			}
			v, err := strconv.ParseUint(s[:4], 16, 32)
			return rune(v), err == nil
		}
		r, ok := hex(s[2:])
		if !ok {
			return 0, 0
		}
		if utf16.IsSurrogate(r) {
			if len(s) >= 12 && s[6] == '\\' && s[7] == 'u' {
				if r2, ok := hex(s[8:]); ok {
					if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
						return d, 12
					}
				}
			}
			return utf8.RuneError, 6
		}
		return r, 6
	}
	return 0, 0
}

// chain := stage ("|" stage)*
func (p *parser) chain() (Expr, error) {
	e, err := p.stage(nil)
	if err != nil {
		return nil, err
	}
	for p.tok.kind == tPipe {
		p.next()
		if e, err = p.stage(e); err != nil {
			return nil, err
		}
	}
	return e, nil
}

// stage := STRING | call; prev, when not nil, is the stage before, which
// becomes the first argument.
func (p *parser) stage(prev Expr) (Expr, error) {
	switch p.tok.kind {
	case tString:
		if prev != nil {
			return nil, p.errorf("a quoted prompt can only start a pipeline, not follow \"|\"")
		}
		s := &Prompt{Text: p.tok.text, Offset: p.tok.pos}
		if s.Text == "" {
			return nil, p.errorf("empty prompt: write the text, or the bare name prompt for one given at run time")
		}
		p.next()
		return s, nil
	case tName:
		return p.call(prev)
	case tEOF:
		if prev != nil {
			return nil, p.errorf("expected an instruction name after \"|\"")
		}
	}
	return nil, p.errorf("expected a quoted prompt or an instruction name, found %s", p.tok)
}

// call := NAME ["(" [arg ("," arg)*] ")"]; arg := [NAME ":"] (STRING | call)
func (p *parser) call(prev Expr) (Expr, error) {
	name, pos := p.tok.text, p.tok.pos
	p.next()
	if name == "prompt" && p.tok.kind != tLParen {
		if prev != nil {
			return nil, p.errorAt(pos, "the prompt can only start a pipeline, not follow \"|\"")
		}
		return &Prompt{Offset: pos}, nil
	}
	if p.calls++; p.calls > p.maxCalls {
		return nil, p.errorAt(pos, "the pipeline is too long: over the limit of %d instruction calls for one pipeline", p.maxCalls)
	}
	c := &Call{Name: name, Offset: pos}
	if prev != nil {
		c.Args = append(c.Args, Arg{Value: prev})
	}
	if p.tok.kind != tLParen {
		if _, ok := p.bound[name]; ok && prev != nil {
			return nil, p.errorAt(pos, "%s is a bound name, not an instruction: pass it as an argument, %s(…)", name, "F")
		}
		if p.bound != nil && prev == nil {
			if b, ok := p.bound[name]; ok {
				p.calls-- // not a call
				return &Ref{Name: name, Binding: b, Offset: pos}, nil
			}
			p.bare = append(p.bare, bareName{c, p.bindings})
		}
		return c, nil
	}
	open := p.tok.pos
	p.next()
	for p.tok.kind != tRParen {
		if len(c.Args) > 0 && (prev == nil || len(c.Args) > 1) {
			if p.tok.kind != tComma {
				if p.tok.kind == tEOF {
					return nil, p.errorAt(open, "unclosed \"(\" of %s", name)
				}
				return nil, p.errorf("expected \",\" or \")\" in the arguments of %s, found %s", name, p.tok)
			}
			p.next()
		}
		var arg Arg
		if p.tok.kind == tName {
			save, saveOff := p.tok, p.off
			p.next()
			if p.tok.kind == tColon {
				arg.Name = save.text
				p.next()
			} else {
				p.tok, p.off = save, saveOff
			}
		}
		if p.tok.kind == tEOF {
			return nil, p.errorAt(open, "unclosed \"(\" of %s", name)
		}
		v, err := p.stage(nil)
		if err != nil {
			return nil, err
		}
		// An argument may itself be a "|" chain.
		for p.tok.kind == tPipe {
			p.next()
			if v, err = p.stage(v); err != nil {
				return nil, err
			}
		}
		arg.Value = v
		for _, other := range c.Args {
			if arg.Name != "" && other.Name == arg.Name {
				return nil, p.errorAt(v.Pos(), "argument %q of %s is given twice", arg.Name, name)
			}
		}
		c.Args = append(c.Args, arg)
	}
	p.next()
	return c, nil
}

// atConst reports whether the input starts a binding: the name const
// followed by a name (an instruction may still be called const).
func (p *parser) atConst() bool {
	if p.tok.kind != tName || p.tok.text != "const" {
		return false
	}
	save, saveOff := p.tok, p.off
	p.next()
	ok := p.tok.kind == tName
	p.tok, p.off = save, saveOff
	return ok
}

// program := ("const" NAME "=" chain [";"])+ [chain [";"]]
func (p *parser) program() (Expr, error) {
	p.bound = make(map[string]*Binding)
	prog := &Program{}
	used := make(map[*Binding]bool)
	var errs schema.ErrorList
	for p.tok.kind != tEOF {
		if !p.atConst() {
			if len(prog.Bindings) == 0 || prog.Final != nil {
				return nil, p.errorf("expected \"const name = …\", found %s", p.tok)
			}
			e, err := p.chain()
			if err != nil {
				return nil, err
			}
			prog.Final = e
			markUsed(e, used)
			p.semicolon()
			if p.tok.kind != tEOF {
				return nil, p.errorf("unexpected %s after the pipeline's result: a pipeline ends with its last stage", p.tok)
			}
			break
		}
		p.next() // const
		b := &Binding{Name: p.tok.text, Offset: p.tok.pos}
		p.next()
		if p.tok.kind != tEquals {
			return nil, p.errorf("expected \"=\" after const %s, found %s", b.Name, p.tok)
		}
		p.next()
		if p.tok.kind == tEOF {
			return nil, p.errorf("expected the stage bound to %s", b.Name)
		}
		e, err := p.chain()
		if err != nil {
			return nil, err
		}
		b.Value = e
		markUsed(e, used)
		switch first, twice := p.bound[b.Name]; {
		case b.Name == "prompt":
			errs = append(errs, p.errorAt(b.Offset, "prompt is the pipeline's input: it cannot be bound"))
		case twice:
			fl, fc := position(p.src, first.Offset)
			errs = append(errs, p.errorAt(b.Offset, "%s is bound twice: first at %d:%d", b.Name, fl, fc))
		default:
			p.bound[b.Name] = b
		}
		prog.Bindings = append(prog.Bindings, b)
		p.bindings++
		p.semicolon()
	}
	// A bare name bound only later is a use before the binding.
	for _, u := range p.bare {
		if b, ok := p.bound[u.call.Name]; ok && slices.Index(prog.Bindings, b) >= u.before {
			bl, bc := position(p.src, b.Offset)
			errs = append(errs, p.errorAt(u.call.Offset, "%s is used before it is bound at %d:%d", u.call.Name, bl, bc))
			used[b] = true
		}
	}
	for i, b := range prog.Bindings {
		last := i == len(prog.Bindings)-1 && prog.Final == nil
		if !used[b] && !last && p.bound[b.Name] == b {
			errs = append(errs, p.errorAt(b.Offset, "%s is bound and never used: use it in a later stage, or drop its binding", b.Name))
		}
	}
	if len(errs) > 0 {
		errs.Sort()
		return nil, errs
	}
	return prog, nil
}

// semicolon skips an optional ";" ending a statement.
func (p *parser) semicolon() {
	if p.tok.kind == tSemicolon {
		p.next()
	}
}

// markUsed marks the bindings e refers to.
func markUsed(e Expr, used map[*Binding]bool) {
	switch e := e.(type) {
	case *Ref:
		used[e.Binding] = true
	case *Call:
		for _, a := range e.Args {
			markUsed(a.Value, used)
		}
	}
}
