package testtier

import "testing"

func TestLongSkipsOnlyUnderShort(t *testing.T) {
	ran := false
	t.Run("long", func(t *testing.T) {
		Long(t)
		ran = true
	})
	if ran == testing.Short() {
		t.Errorf("Long ran=%v under -short=%v", ran, testing.Short())
	}
}

func TestIntegrationFollowsTheTag(t *testing.T) {
	ran := false
	t.Run("integration", func(t *testing.T) {
		Integration(t)
		ran = true
	})
	if ran != Enabled() {
		t.Errorf("Integration ran=%v with the integration tag %v", ran, Enabled())
	}
}
