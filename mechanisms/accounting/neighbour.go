package accounting

import (
	"fmt"
	"strings"
)

// Neighbour is the neighbouring relation that a sensitivity, and therefore a
// privacy guarantee, refers to. The zero value is ReplaceOne, the stricter
// relation for the usual clipped sums: replacing a row moves a sum of rows of
// norm ≤ C by up to 2C, adding or removing one moves it by up to C.
type Neighbour int

const (
	// ReplaceOne: datasets of the same size that differ in one privacy unit
	// (a row, or all rows of one user), which is replaced by an arbitrary one.
	ReplaceOne Neighbour = iota
	// AddRemove: one dataset is the other with one privacy unit added.
	AddRemove
)

// String returns the canonical spelling accepted by ParseNeighbour.
func (n Neighbour) String() string {
	switch n {
	case ReplaceOne:
		return "replace-one"
	case AddRemove:
		return "add-remove"
	}
	return fmt.Sprintf("Neighbour(%d)", int(n))
}

// ParseNeighbour reads "replace-one" or "add-remove". Case and the choice of
// '-', '_' or ' ' as separator do not matter.
func ParseNeighbour(s string) (Neighbour, error) {
	norm := strings.NewReplacer("_", "-", " ", "-").Replace(strings.ToLower(strings.TrimSpace(s)))
	switch norm {
	case "replace-one":
		return ReplaceOne, nil
	case "add-remove":
		return AddRemove, nil
	}
	return 0, fmt.Errorf("accounting: unknown neighbour relation %q: use \"replace-one\" or \"add-remove\"", s)
}

// MarshalText implements encoding.TextMarshaler, so that stored records spell
// the relation out.
func (n Neighbour) MarshalText() ([]byte, error) {
	if n != ReplaceOne && n != AddRemove {
		return nil, fmt.Errorf("accounting: invalid neighbour relation %d", int(n))
	}
	return []byte(n.String()), nil
}

// UnmarshalText implements encoding.TextUnmarshaler.
func (n *Neighbour) UnmarshalText(b []byte) error {
	v, err := ParseNeighbour(string(b))
	if err != nil {
		return err
	}
	*n = v
	return nil
}
