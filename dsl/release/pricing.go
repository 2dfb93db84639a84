package release

import (
	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/mechanisms/accounting"
)

// pricing names the filter of a dataset's accountant that prices the
// event and what it charges, as the ledger's receipt of its charge does: a
// replay's or a dry run's receipt shows what priced (or would price) the
// charge, not an empty "priced by". The ledger's accountant prices it
// (accounting.Accountant.Pricing: the rdp accountant's amount depends on
// the order its dataset's state records); without a store, the mode alone.
func pricing(st *ledger.Store, dataset, mode string, ev accounting.Event) string {
	if st != nil {
		if p, err := st.Pricing(dataset, ev); err == nil {
			return p
		}
	}
	m, err := accounting.ParseMode(mode)
	if err != nil {
		return ""
	}
	return m.Pricing(ev)
}
