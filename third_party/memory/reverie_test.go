// Reverie: tests of reverie.go.

package memory // import "modernc.org/memory"

import "testing"

// A requested trim runs at the next free, once: the regions the Allocator
// retained go back to the OS and only the pages holding live blocks stay.
func TestRequestTrim(t *testing.T) {
	var a Allocator
	defer a.Close()
	churn := func() {
		t.Helper()
		var ps []uintptr
		for _, size := range []int{16, 100, 1000, 5000, 100000, 300000} {
			for range 40 {
				p, err := a.UintptrMalloc(size)
				if err != nil {
					t.Fatal(err)
				}
				ps = append(ps, p)
			}
		}
		for _, p := range ps {
			if err := a.UintptrFree(p); err != nil {
				t.Fatal(err)
			}
		}
	}
	keep, err := a.UintptrMalloc(16)
	if err != nil {
		t.Fatal(err)
	}
	churn()
	if a.freedSize == 0 || len(a.regs) < 3 {
		t.Fatalf("after the churn %d regions are mapped, %d bytes retained; the test needs retained regions", len(a.regs), a.freedSize)
	}
	RequestTrim()
	p, err := a.UintptrMalloc(16)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.UintptrFree(p); err != nil {
		t.Fatal(err)
	}
	if len(a.regs) != 1 || a.freedSize != 0 {
		t.Errorf("after the requested trim %d regions are mapped, %d bytes retained; want only the live block's page", len(a.regs), a.freedSize)
	}
	churn()
	if a.freedSize == 0 {
		t.Error("a second churn's regions were trimmed too: the request must be taken once")
	}
	if err := a.UintptrFree(keep); err != nil {
		t.Fatal(err)
	}
}
