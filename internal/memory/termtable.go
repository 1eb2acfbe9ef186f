package memory

// termTable holds, for the term ids of one query, each one's weight and
// kind group (qterm.group), for coverage, which looks up every distinct
// term of every memory it measures: ~1,500 lookups a turn once the
// conversation is long, where two Go maps (weight and group) took ~1 µs a
// memory. It is open-addressed with linear probing, at most half full.
type termTable struct {
	entries []termEntry
	shift   uint32
}

type termEntry struct {
	key    uint32 // term id + 1; 0: empty
	group  uint16
	weight float64
}

// newTermTable returns an empty table for up to n terms.
func newTermTable(n int) termTable {
	bits := uint32(3)
	for 1<<bits < 2*n {
		bits++
	}
	return termTable{entries: make([]termEntry, 1<<bits), shift: 32 - bits}
}

// at returns tid's entry: where it is, or the empty one where it would go.
func (tt *termTable) at(tid uint32) *termEntry {
	mask := len(tt.entries) - 1
	i := int((tid * 0x9e3779b1) >> tt.shift)
	for {
		if e := &tt.entries[i]; e.key == tid+1 || e.key == 0 {
			return e
		}
		i = (i + 1) & mask
	}
}

// setWeight sets tid's weight.
func (tt *termTable) setWeight(tid uint32, w float64) {
	e := tt.at(tid)
	e.key, e.weight = tid+1, w
}

// setGroup sets tid's kind group.
func (tt *termTable) setGroup(tid uint32, g uint16) {
	e := tt.at(tid)
	e.key, e.group = tid+1, g
}

// get returns tid's weight and group, zero when it holds none.
func (tt *termTable) get(tid uint32) (float64, uint16) {
	e := tt.at(tid)
	return e.weight, e.group
}

// slotTable maps the index slots of a recall's candidates to their place
// in its candidate list (recallRun.cs): every candidate the phases add and
// every neighbour spreading passes to is looked up, ~2,000 lookups a turn
// once the conversation is long, and a Go map took ~20 ns each. It is
// open-addressed with linear probing, at most half full, and kept for the
// next recall (recallScratch).
type slotTable struct {
	keys  []int32 // slot + 1; 0: empty
	vals  []int32
	n     int
	shift uint32
}

// newSlotTable returns an empty table for n slots before it grows.
func newSlotTable(n int) slotTable {
	bits := uint32(4)
	for 1<<bits < 2*n {
		bits++
	}
	return slotTable{keys: make([]int32, 1<<bits), vals: make([]int32, 1<<bits), shift: 32 - bits}
}

// at returns the position of slot: where it is, or the empty one where it
// would go.
func (st *slotTable) at(slot int) int {
	mask := len(st.keys) - 1
	i := int((uint32(slot) * 0x9e3779b1) >> st.shift)
	for {
		if k := st.keys[i]; k == int32(slot)+1 || k == 0 {
			return i
		}
		i = (i + 1) & mask
	}
}

// get returns the value of slot.
func (st *slotTable) get(slot int) (int, bool) {
	i := st.at(slot)
	return int(st.vals[i]), st.keys[i] != 0
}

// put sets the value of slot, which the table does not hold.
func (st *slotTable) put(slot, v int) {
	if 2*(st.n+1) > len(st.keys) {
		old := *st
		*st = newSlotTable(len(old.keys))
		for i, k := range old.keys {
			if k != 0 {
				st.put(int(k-1), int(old.vals[i]))
			}
		}
	}
	i := st.at(slot)
	st.keys[i], st.vals[i] = int32(slot)+1, int32(v)
	st.n++
}

// reset empties the table.
func (st *slotTable) reset() {
	clear(st.keys)
	st.n = 0
}
