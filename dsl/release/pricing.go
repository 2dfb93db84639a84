package release

import "github.com/privnotes/privnotes/mechanisms/accounting"

// pricing names the filter of a dataset's accountant (mode) that prices
// the event, as the ledger's receipt of its charge does: a replay's receipt
// shows what priced the charge it replays, not an empty "priced by".
func pricing(mode string, ev accounting.Event) string {
	m, err := accounting.ParseMode(mode)
	if err != nil {
		return ""
	}
	return m.Pricing(ev)
}
