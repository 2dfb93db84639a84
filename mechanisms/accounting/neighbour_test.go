package accounting

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestNeighbour(t *testing.T) {
	var zero Neighbour
	if zero != ReplaceOne {
		t.Error("zero Neighbour is not ReplaceOne")
	}
	cases := []struct {
		in   string
		want Neighbour
	}{
		{"replace-one", ReplaceOne}, {"add-remove", AddRemove},
		{"Replace_One", ReplaceOne}, {" ADD REMOVE ", AddRemove},
	}
	for _, c := range cases {
		got, err := ParseNeighbour(c.in)
		if err != nil || got != c.want {
			t.Errorf("ParseNeighbour(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
	for _, n := range []Neighbour{ReplaceOne, AddRemove} {
		if got, err := ParseNeighbour(n.String()); err != nil || got != n {
			t.Errorf("ParseNeighbour(%v.String()) = %v, %v", n, got, err)
		}
	}
	_, err := ParseNeighbour("swap")
	if err == nil || !strings.Contains(err.Error(), `"replace-one" or "add-remove"`) {
		t.Errorf("ParseNeighbour(swap) error = %v, want the valid names", err)
	}
	if s := Neighbour(5).String(); s != "Neighbour(5)" {
		t.Errorf("invalid String() = %q", s)
	}
	b, err := json.Marshal(struct{ N Neighbour }{AddRemove})
	if err != nil || string(b) != `{"N":"add-remove"}` {
		t.Errorf("json = %s, %v", b, err)
	}
	var v struct{ N Neighbour }
	if err := json.Unmarshal(b, &v); err != nil || v.N != AddRemove {
		t.Errorf("unmarshal = %v, %v", v.N, err)
	}
	if _, err := json.Marshal(struct{ N Neighbour }{Neighbour(9)}); err == nil {
		t.Error("marshalled an invalid relation")
	}
}
