package service

import (
	"testing"

	pb "github.com/privnotes/privnotes/api/privnotes/v1"
)

// TestEveryMethodHasACallUse: every RPC of the service says how it uses
// call ids, so a new one is listed deliberately (unlisted, bind treats it
// as continuing a call: the caller's own only).
func TestEveryMethodHasACallUse(t *testing.T) {
	for _, m := range pb.DataService_ServiceDesc.Methods {
		full := "/" + pb.DataService_ServiceDesc.ServiceName + "/" + m.MethodName
		if _, ok := callUses[full]; !ok {
			t.Errorf("%s is not in callUses", full)
		}
	}
	if n := len(pb.DataService_ServiceDesc.Streams); n != 0 {
		t.Errorf("the service has %d streaming RPCs; bind covers unary ones only", n)
	}
}
