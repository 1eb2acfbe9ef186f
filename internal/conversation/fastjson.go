package conversation

import (
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// fastDecode parses the parts column as written by encodeParts — an array
// of flat objects whose values are strings or booleans — without
// reflection; History of a long thread spends most of its time here. It
// reports false for anything else (other value kinds, unknown keys,
// malformed input), and the caller then uses encoding/json, so the result
// never differs from json.Unmarshal on well-formed input.
func fastDecode(data []byte) ([]storedPart, bool) {
	p := parser{data: data}
	p.ws()
	if !p.eat('[') {
		return nil, false
	}
	out := make([]storedPart, 0, 1)
	p.ws()
	if p.eat(']') {
		return out, p.end()
	}
	for {
		p.ws()
		sp, ok := p.object()
		if !ok {
			return nil, false
		}
		out = append(out, sp)
		p.ws()
		if p.eat(']') {
			return out, p.end()
		}
		if !p.eat(',') {
			return nil, false
		}
	}
}

type parser struct {
	data []byte
	i    int
}

func (p *parser) ws() {
	for p.i < len(p.data) {
		switch p.data[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *parser) eat(c byte) bool {
	if p.i < len(p.data) && p.data[p.i] == c {
		p.i++
		return true
	}
	return false
}

func (p *parser) end() bool {
	p.ws()
	return p.i == len(p.data)
}

func (p *parser) object() (storedPart, bool) {
	var sp storedPart
	if !p.eat('{') {
		return sp, false
	}
	p.ws()
	if p.eat('}') {
		return sp, true
	}
	for {
		p.ws()
		key, ok := p.rawStr()
		if !ok {
			return sp, false
		}
		p.ws()
		if !p.eat(':') {
			return sp, false
		}
		p.ws()
		switch string(key) {
		case "type":
			var t []byte
			if t, ok = p.rawStr(); ok {
				sp.Type = internType(t)
			}
		case "text":
			sp.Text, ok = p.str()
		case "id":
			sp.ID, ok = p.str()
		case "name":
			sp.Name, ok = p.str()
		case "arguments":
			var s string
			if s, ok = p.str(); ok {
				sp.Arguments = &s
			}
		case "call_id":
			sp.CallID, ok = p.str()
		case "content":
			sp.Content, ok = p.str()
		case "path":
			sp.Path, ok = p.str()
		case "media_type":
			sp.MediaType, ok = p.str()
		case "signature":
			sp.Signature, ok = p.str()
		case "data":
			sp.Data, ok = p.str()
		case "b64":
			sp.B64, ok = p.boolean()
		case "is_error":
			sp.IsError, ok = p.boolean()
		default:
			return sp, false // unknown key: let encoding/json decide
		}
		if !ok {
			return sp, false
		}
		p.ws()
		if p.eat('}') {
			return sp, true
		}
		if !p.eat(',') {
			return sp, false
		}
	}
}

// rawStr returns the bytes of a string without escapes (keys, the type
// discriminator) without allocating; false for a string with escapes.
func (p *parser) rawStr() ([]byte, bool) {
	if !p.eat('"') {
		return nil, false
	}
	start := p.i
	for p.i < len(p.data) {
		switch c := p.data[p.i]; {
		case c == '"':
			p.i++
			b := p.data[start : p.i-1]
			return b, utf8.Valid(b)
		case c == '\\' || c < 0x20:
			return nil, false
		}
		p.i++
	}
	return nil, false
}

func internType(b []byte) string {
	switch string(b) {
	case partText:
		return partText
	case partToolCall:
		return partToolCall
	case partToolResult:
		return partToolResult
	}
	return string(b)
}

func (p *parser) boolean() (bool, bool) {
	rest := p.data[p.i:]
	switch {
	case len(rest) >= 4 && string(rest[:4]) == "true":
		p.i += 4
		return true, true
	case len(rest) >= 5 && string(rest[:5]) == "false":
		p.i += 5
		return false, true
	}
	return false, false
}

// str parses a JSON string. Invalid UTF-8 is replaced by U+FFFD, as
// encoding/json does.
func (p *parser) str() (string, bool) {
	if !p.eat('"') {
		return "", false
	}
	start := p.i
	// Fast path: no escapes, all ASCII or valid UTF-8.
	for p.i < len(p.data) {
		c := p.data[p.i]
		switch {
		case c == '"':
			s := p.data[start:p.i]
			p.i++
			if !utf8.Valid(s) {
				return string([]rune(string(s))), true
			}
			return string(s), true
		case c == '\\':
			return p.strSlow(start)
		case c < 0x20:
			return "", false
		}
		p.i++
	}
	return "", false
}

func (p *parser) strSlow(start int) (string, bool) {
	buf := make([]byte, 0, p.i-start+16)
	buf = append(buf, p.data[start:p.i]...)
	for p.i < len(p.data) {
		c := p.data[p.i]
		switch {
		case c == '"':
			p.i++
			if !utf8.Valid(buf) {
				return string([]rune(string(buf))), true
			}
			return string(buf), true
		case c < 0x20:
			return "", false
		case c != '\\':
			buf = append(buf, c)
			p.i++
			continue
		}
		p.i++
		if p.i >= len(p.data) {
			return "", false
		}
		e := p.data[p.i]
		p.i++
		switch e {
		case '"', '\\', '/':
			buf = append(buf, e)
		case 'b':
			buf = append(buf, '\b')
		case 'f':
			buf = append(buf, '\f')
		case 'n':
			buf = append(buf, '\n')
		case 'r':
			buf = append(buf, '\r')
		case 't':
			buf = append(buf, '\t')
		case 'u':
			r, ok := p.hex4()
			if !ok {
				return "", false
			}
			if utf16.IsSurrogate(r) {
				// A high surrogate followed by \uDC00–\uDFFF is one rune;
				// anything else is U+FFFD, as in encoding/json.
				save := p.i
				if r2, ok2 := p.lowSurrogate(); ok2 {
					if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
						buf = utf8.AppendRune(buf, dec)
						continue
					}
				}
				p.i = save
				r = utf8.RuneError
			}
			buf = utf8.AppendRune(buf, r)
		default:
			return "", false
		}
	}
	return "", false
}

func (p *parser) hex4() (rune, bool) {
	if p.i+4 > len(p.data) {
		return 0, false
	}
	v, err := strconv.ParseUint(string(p.data[p.i:p.i+4]), 16, 32)
	if err != nil {
		return 0, false
	}
	p.i += 4
	return rune(v), true
}

func (p *parser) lowSurrogate() (rune, bool) {
	if p.i+6 > len(p.data) || p.data[p.i] != '\\' || p.data[p.i+1] != 'u' {
		return 0, false
	}
	p.i += 2
	return p.hex4()
}
