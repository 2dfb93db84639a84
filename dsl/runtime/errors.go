package runtime

import (
	"github.com/privnotes/privnotes/dsl/release"
	"github.com/privnotes/privnotes/mechanisms/accounting"
)

// Error names of the DSL, as the engine shows them (engine.Error.Name).
// The execution core defines them (dsl/release); the runtime adds the
// names of its own refusals.
const (
	NameBudgetExceeded  = release.NameBudgetExceeded  // a charge or a cell would exceed a budget
	NameArgumentError   = release.NameArgumentError   // a bad argument or keyword of a DSL call
	NameDatasetError    = release.NameDatasetError    // an unknown dataset or a misuse of a handle
	NameBudgetBlock     = release.NameBudgetBlock     // nested or unbalanced budget blocks
	NameNotAvailable    = release.NameNotAvailable    // a method this build does not provide
	NameLedgerError     = release.NameLedgerError     // the state database failed
	NameMechanismFailed = release.NameMechanismFailed // a mechanism failed after its charge
	NameInterrupted     = release.NameInterrupted     // the cell was interrupted during a mechanism
	NameMagicError      = release.NameMagicError      // a bad magic line
	NameNoCell          = release.NameNoCell          // a DSL call outside any running cell
	NameProviderFailed  = release.NameProviderFailed  // a data server did not answer or refused the client
)

// Error is an error of a DSL call. The engine shows it as Name: Msg.
// Messages never hold values derived from private data.
type Error = release.Error

// BudgetError is a refused spend: of a budget block or of a dataset's
// budget. All values are (ε, δ) and public.
type BudgetError = release.BudgetError

func errorf(name, format string, args ...any) *Error {
	return release.Errorf(name, format, args...)
}

// asBudgetError converts an accounting refusal; ok is false for other
// errors.
func asBudgetError(scope string, err error, static bool) (*BudgetError, bool) {
	return release.AsBudgetError(scope, err, static)
}

func approxNote(ev accounting.Event, mode string) string { return release.ApproxNote(ev, mode) }

func fmtBudget(b accounting.Budget) string { return release.FmtBudget(b) }
