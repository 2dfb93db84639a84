package worker

import (
	"syscall"
	"testing"
)

func TestDieWithParent(t *testing.T) {
	attr := DieWithParent(&syscall.SysProcAttr{Setpgid: true})
	if !attr.Setpgid {
		t.Error("DieWithParent dropped the attributes it was given")
	}
	if attr.Pdeathsig != syscall.SIGKILL {
		t.Errorf("Pdeathsig %v, want SIGKILL", attr.Pdeathsig)
	}
	if w := sysProcAttr(); w.Pdeathsig != syscall.SIGKILL || !w.Setpgid {
		t.Errorf("the worker's attributes %+v lack Setpgid or Pdeathsig", w)
	}
}
