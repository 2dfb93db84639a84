package syntax

import "testing"

func TestClosest(t *testing.T) {
	names := []string{"private_pca", "private_count", "budget", "People"}
	for _, tc := range []struct {
		name, want string
		ok         bool
	}{
		{"privat_pca", "private_pca", true},
		{"private_cuont", "private_count", true},
		{"budge", "budget", true},
		{"people", "People", true}, // case only
		{"private_pca", "", false}, // itself is no suggestion
		{"xyz", "", false},
		{"mean", "", false},
	} {
		got, ok := Closest(tc.name, names)
		if got != tc.want || ok != tc.ok {
			t.Errorf("Closest(%q) = %q, %v; want %q, %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}
