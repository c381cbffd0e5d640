package audit

// Flow collections ({key: value}, [a, b]) for blockToJSON, as people
// write them by hand: nested at any depth, over one line or several, with
// comments, quoted keys (JSON's too) and trailing commas. What it does
// not read as sigs.k8s.io/yaml does, it gives up on, as the block reader
// does: a plain scalar over several lines, a key without a value or over
// a line, a pair in a sequence ([a: b]), "?" keys, anchors, tags, escapes
// in double quotes, and a comment not after a space.

// flowBlock converts the flow collection at c.data[p], on the line at
// c.i, which must end the line it ends on but for a comment, and moves to
// the line after that one. on is as for mapping.
func (c *blockConv) flowBlock(p, on int) bool {
	q, ok := c.flowNode(p, on, 0)
	if !ok || c.done {
		return ok
	}
	for q < len(c.data) && c.data[q] == ' ' {
		q++
	}
	if q < len(c.data) && c.data[q] != '\n' {
		if c.data[q] != '#' || c.data[q-1] != ' ' {
			return false
		}
		for q < len(c.data) && c.data[q] != '\n' {
			q++
		}
	}
	c.i = min(q+1, len(c.data))
	c.line++
	return true
}

// maxFlowDepth bounds the nesting the flow reader follows (the YAML
// parsers bound theirs too); deeper documents are theirs to read.
const maxFlowDepth = 64

// flowNode converts the flow node at c.data[p] and returns where it ends.
func (c *blockConv) flowNode(p, on, depth int) (int, bool) {
	if p >= len(c.data) || depth > maxFlowDepth {
		return 0, false
	}
	switch c.data[p] {
	case '{':
		return c.flowMapping(p, on, depth)
	case '[':
		return c.flowSequence(p, on, depth)
	}
	end, ok := c.flowScalarEnd(p)
	if !ok {
		return 0, false
	}
	v := transient(c.data[p:end])
	if c.data[p] == '"' || c.data[p] == '\'' {
		ok = c.scalar(v)
	} else {
		ok = c.stop || c.plain(v) // (no comment in it to leave out)
	}
	return end, ok
}

// flowMapping converts the flow mapping whose "{" is at c.data[p].
func (c *blockConv) flowMapping(p, on, depth int) (int, bool) {
	c.emit('{')
	keys := len(c.keys)
	p, ok := c.flowSpace(p + 1)
	if !ok {
		return 0, false
	}
	for first := true; p >= len(c.data) || c.data[p] != '}'; first = false {
		// A key: a scalar on one line, then ":" and a space (or, after a
		// quoted key, as in JSON, anything).
		if p >= len(c.data) || c.data[p] == '[' || c.data[p] == '{' {
			return 0, false
		}
		end, ok := c.flowScalarEnd(p)
		if !ok {
			return 0, false
		}
		raw := transient(c.data[p:end])
		key, ok := mappingKey(raw, c.stop)
		ok = ok && c.newKey(keys, key)
		colon := end
		for colon < len(c.data) && c.data[colon] == ' ' {
			colon++
		}
		if !ok || colon-p > 1024 || colon >= len(c.data) || c.data[colon] != ':' {
			return 0, false // not a key, longer than an implicit one may be, or with no ":" on its line
		}
		if raw[0] != '"' && raw[0] != '\'' && colon+1 < len(c.data) && c.data[colon+1] != ' ' && c.data[colon+1] != '\n' {
			return 0, false
		}
		if !first {
			c.emit(',')
		}
		c.emitQuoted(key)
		c.emit(':')
		next := c.follow(on, func(step string) bool { return step == key })
		if c.done {
			return p, true
		}
		if p, ok = c.flowSpace(colon + 1); !ok || p >= len(c.data) {
			return 0, false
		}
		if c.data[p] == ',' || c.data[p] == '}' {
			c.emitString("null")
		} else if p, ok = c.flowNode(p, next, depth+1); !ok {
			return 0, false
		}
		if c.done {
			return p, true
		}
		if p, ok = c.flowEntryEnd(p, '}'); !ok {
			return 0, false
		}
	}
	c.leave(on)
	c.keys = c.keys[:keys]
	c.emit('}')
	return p + 1, true
}

// flowSequence converts the flow sequence whose "[" is at c.data[p].
func (c *blockConv) flowSequence(p, on, depth int) (int, bool) {
	c.emit('[')
	p, ok := c.flowSpace(p + 1)
	if !ok {
		return 0, false
	}
	for n := 0; p >= len(c.data) || c.data[p] != ']'; n++ {
		if p >= len(c.data) || c.data[p] == ',' {
			return 0, false
		}
		if n > 0 {
			c.emit(',')
		}
		next := c.follow(on, func(step string) bool { i, ok := index(step); return ok && i == n })
		if c.done {
			return p, true
		}
		if p, ok = c.flowNode(p, next, depth+1); !ok {
			return 0, false
		}
		if c.done {
			return p, true
		}
		if p, ok = c.flowEntryEnd(p, ']'); !ok {
			return 0, false // a pair ([a: b]) among them
		}
	}
	c.leave(on)
	c.emit(']')
	return p + 1, true
}

// flowEntryEnd reads past the "," after an entry of a flow collection
// closed by end, and returns where the next entry (or end) is.
func (c *blockConv) flowEntryEnd(p int, end byte) (int, bool) {
	p, ok := c.flowSpace(p)
	if !ok || p >= len(c.data) {
		return 0, false
	}
	switch c.data[p] {
	case end:
		return p, true
	case ',':
		return c.flowSpace(p + 1)
	}
	return 0, false
}

// flowScalarEnd is where the scalar at c.data[p] ends: a quoted one
// (which must end on its line), or a plain one, which ends at a flow
// indicator, ": ", " #" or the end of its line, trailing spaces left out.
// A plain one that ends a line must not go on on the next: the next
// thing after spaces and comments must end an entry.
func (c *blockConv) flowScalarEnd(p int) (int, bool) {
	d := c.data
	switch d[p] {
	case '"', '\'':
		for i := p + 1; i < len(d); i++ {
			switch d[i] {
			case '\n':
				return 0, false
			case d[p]:
				if d[p] == '\'' && i+1 < len(d) && d[i+1] == '\'' {
					i++ // '' in single quotes
					continue
				}
				return i + 1, true
			}
		}
		return 0, false
	}
	end := p
	i := p
	for ; i < len(d); i++ {
		b := d[i]
		if !flowStop[b] {
			end = i + 1
			continue
		}
		if b == ' ' {
			if i+1 < len(d) && d[i+1] == '#' {
				break
			}
			continue
		}
		if b == ':' {
			if i+1 == len(d) || d[i+1] == ' ' || d[i+1] == '\n' {
				break
			}
			if flowStop[d[i+1]] {
				return 0, false // ":" then an indicator: the parsers disagree
			}
			end = i + 1
			continue
		}
		if b == '?' {
			return 0, false
		}
		break // a newline or a flow indicator
	}
	if end == p {
		return 0, false
	}
	// Past spaces and a comment to the line's end: the scalar must not go
	// on on the next line (YAML would fold it into one).
	for i < len(d) && d[i] == ' ' {
		i++
	}
	if i < len(d) && d[i] == '#' {
		for i < len(d) && d[i] != '\n' {
			i++
		}
	}
	if i < len(d) && d[i] == '\n' {
		save := c.line
		q, ok := c.flowSpace(i)
		c.line = save
		if !ok || q >= len(d) || (d[q] != ',' && d[q] != ']' && d[q] != '}') {
			return 0, false
		}
	}
	return end, true
}

// flowStop marks the bytes flowScalarEnd stops at in a plain scalar.
var flowStop = func() (t [256]bool) {
	for _, c := range "\n ,[]{}:?" {
		t[c] = true
	}
	return t
}()

// flowSpace moves past spaces, line ends and comments (a "#" after a space
// or at a line's start) in a flow collection, counting lines.
func (c *blockConv) flowSpace(p int) (int, bool) {
	d := c.data
	for p < len(d) {
		switch d[p] {
		case ' ':
			p++
		case '\n':
			p++
			c.line++
			// A document marker ends the document, collection or not.
			if rest := d[p:]; len(rest) >= 3 && (string(rest[:3]) == "---" || string(rest[:3]) == "...") && (len(rest) == 3 || rest[3] == ' ' || rest[3] == '\n') {
				return 0, false
			}
		case '#':
			if p == 0 || (d[p-1] != ' ' && d[p-1] != '\n') {
				return 0, false
			}
			for p < len(d) && d[p] != '\n' {
				p++
			}
		default:
			return p, true
		}
	}
	return p, true
}
