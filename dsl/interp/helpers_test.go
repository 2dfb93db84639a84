package interp

import (
	"fmt"
	"strings"
	"sync"

	"github.com/privnotes/privnotes/dsl/engine"
)

// recOutput records outputs in order.
type recOutput struct {
	mu    sync.Mutex
	items []string
	disp  []engine.Display
}

func (o *recOutput) Stream(name, text string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.items = append(o.items, name+":"+text)
}

func (o *recOutput) Display(d engine.Display) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.disp = append(o.disp, d)
	o.items = append(o.items, fmt.Sprintf("display(%s,update=%v):%v", d.DisplayID, d.Update, d.Data["text/plain"]))
}

func (o *recOutput) ClearOutput(wait bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.items = append(o.items, fmt.Sprintf("clear(%v)", wait))
}

func (o *recOutput) stdout() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	var b strings.Builder
	for _, it := range o.items {
		if s, ok := strings.CutPrefix(it, "stdout:"); ok {
			b.WriteString(s)
		}
	}
	return b.String()
}

func engineReq(code string) engine.ExecuteRequest {
	return engine.ExecuteRequest{Code: code, CellID: "test", StoreHistory: true}
}
