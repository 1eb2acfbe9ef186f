package memory

// idTable maps uint32 ids (term ids, index slots) to values of V for one
// recall. Two of recall's hot loops look ids up in one:
//   - coverage looks up every distinct term of every memory it measures in
//     a table of the query's term weights and kind groups (termVal): ~1,500
//     lookups a turn once the conversation is long, where two Go maps
//     (weight and group) took ~1 µs a memory;
//   - the candidates are found by slot (recallRun.byslot): every candidate
//     the phases add and every neighbour spreading passes to, ~2,000
//     lookups a turn, where a Go map took ~20 ns each.
//
// It is open-addressed with a Fibonacci hash and linear probing, at most
// half full, and grows as ids are added. The zero idTable must be made
// with newIDTable before use.
type idTable[V any] struct {
	entries []idEntry[V]
	n       int // ids held
	shift   uint32
}

type idEntry[V any] struct {
	key uint32 // id + 1; 0: empty
	val V      // the zero V where empty
}

// termVal is what coverage's table holds for a query term.
type termVal struct {
	weight float64
	group  uint16 // its kind group (qterm.group), 0: none
}

// newIDTable returns an empty table for n ids before it grows.
func newIDTable[V any](n int) idTable[V] {
	bits := uint32(3)
	for 1<<bits < 2*n {
		bits++
	}
	return idTable[V]{entries: make([]idEntry[V], 1<<bits), shift: 32 - bits}
}

// at returns id's entry: where it is, or the empty one where it would go.
func (t *idTable[V]) at(id uint32) *idEntry[V] {
	mask := len(t.entries) - 1
	i := int((id * 0x9e3779b1) >> t.shift)
	for {
		if e := &t.entries[i]; e.key == id+1 || e.key == 0 {
			return e
		}
		i = (i + 1) & mask
	}
}

// get returns id's value and whether the table holds id; the zero V when
// it does not.
func (t *idTable[V]) get(id uint32) (V, bool) {
	e := t.at(id)
	return e.val, e.key != 0
}

// ref returns where id's value is, adding id with the zero V when the table
// does not hold it; the pointer is valid until the next ref.
func (t *idTable[V]) ref(id uint32) *V {
	e := t.at(id)
	if e.key == 0 {
		if 2*(t.n+1) > len(t.entries) {
			t.grow()
			e = t.at(id)
		}
		e.key = id + 1
		t.n++
	}
	return &e.val
}

// grow doubles the table.
func (t *idTable[V]) grow() {
	old := t.entries
	*t = newIDTable[V](len(old))
	for i := range old {
		if o := &old[i]; o.key != 0 {
			*t.at(o.key - 1) = *o
			t.n++
		}
	}
}

// reset empties the table.
func (t *idTable[V]) reset() {
	clear(t.entries)
	t.n = 0
}
