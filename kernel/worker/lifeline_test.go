package worker

import (
	"testing"
	"time"
)

func TestWatchLifeline(t *testing.T) {
	child, parent, err := NewLifeline()
	if err != nil {
		t.Fatal(err)
	}
	defer child.Close()
	orphaned := make(chan struct{})
	WatchLifeline(child, func() { close(orphaned) })
	select {
	case <-orphaned:
		t.Fatal("orphaned while the parent's end is open")
	case <-time.After(50 * time.Millisecond):
	}
	parent.Close() // what the parent's death does
	select {
	case <-orphaned:
	case <-time.After(10 * time.Second):
		t.Fatal("not orphaned 10 s after the parent's end closed")
	}
}
