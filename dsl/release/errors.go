package release

import (
	"errors"
	"fmt"

	"github.com/privnotes/privnotes/dsl/ledger"
	"github.com/privnotes/privnotes/mechanisms/accounting"
)

// Error names of the DSL, as the engine shows them (engine.Error.Name).
const (
	NameBudgetExceeded  = "BudgetExceeded"   // a charge or a cell would exceed a budget
	NameArgumentError   = "ArgumentError"    // a bad argument or keyword of a DSL call
	NameDatasetError    = "DatasetError"     // an unknown dataset or a misuse of a handle
	NameBudgetBlock     = "BudgetBlockError" // nested or unbalanced budget blocks
	NameNotAvailable    = "NotAvailable"     // a method this build does not provide
	NameLedgerError     = "LedgerError"      // the state database failed
	NameMechanismFailed = "MechanismFailed"  // a mechanism failed after its charge
	NameInterrupted     = "Interrupted"      // the cell was interrupted during a mechanism
	NameMagicError      = "MagicError"       // a bad magic line
	NameNoCell          = "NoCell"           // a DSL call outside any running cell
	NameProviderFailed  = "ProviderFailed"   // a data service did not answer or refused the client
)

// Error is an error of a DSL call. The engine shows it as Name: Msg.
// Messages never hold values derived from private data.
type Error struct {
	Name string
	Msg  string
}

func (e *Error) Error() string { return e.Msg }

// ErrorName implements dsl/interp's NamedError.
func (e *Error) ErrorName() string { return e.Name }

// Errorf returns an Error named name with a formatted message.
func Errorf(name, format string, args ...any) *Error {
	return &Error{Name: name, Msg: fmt.Sprintf(format, args...)}
}

// BudgetError is a refused spend: of a budget block or of a dataset's
// budget. All values are (ε, δ) and public.
type BudgetError struct {
	// Scope says whose budget: `dataset "census"` or `budget block at
	// line 3 of cell [4]`.
	Scope     string
	Requested accounting.Budget
	Spent     accounting.Budget
	Remaining accounting.Budget
	Budget    accounting.Budget
	// Asked is the refused call's cost in the terms the analyst asked
	// and in the accountant's own measure ("eps=0.8, delta=1e-06, priced
	// by the zCDP filter ρ=0.03056"); "" when no single call is refused
	// (a block's header), whose Requested is shown alone.
	Asked string
	// Static is set when the pre-check refused the cell before it ran.
	Static bool
	// Notes explain the numbers (an approximate event under the zcdp
	// accountant) and what already stands (charges of the cell before
	// the refused one). Public.
	Notes []string
}

func (e *BudgetError) Error() string {
	when := "refused"
	if e.Static {
		when = "cell refused before running (nothing ran)"
	}
	requested := "requested " + FmtBudget(e.Requested)
	if e.Asked != "" {
		requested = fmt.Sprintf("this call asks %s (alone %s at the budget's δ)", e.Asked, FmtBudget(e.Requested))
	}
	msg := fmt.Sprintf("%s: %s would exceed the budget: %s; spent %s; remaining %s of %s",
		when, e.Scope, requested, FmtBudget(e.Spent), FmtBudget(e.Remaining), FmtBudget(e.Budget))
	for _, n := range e.Notes {
		msg += ". " + n
	}
	return msg
}

// ApproxNote explains a refusal's requested (ε, δ) when the event is an
// approximate (ε, δ) one composed by the zcdp accountant, which converts
// it to ρ = ε²/2 (plus its δ) and states the total at the dataset's δ:
// eps=0.5 can then request ε ≈ 2.4.
func ApproxNote(ev accounting.Event, mode string) string {
	if ev.Kind != accounting.ApproxDP || (mode != "" && mode != accounting.ModeZCDP.String()) {
		return ""
	}
	return fmt.Sprintf("Note: %s costs an approximate (ε=%.4g, δ=%.4g) event, which the zcdp accountant composes as ρ = ε²/2 plus its δ and states at the budget's δ, so the requested ε is larger than the call's eps (see docs/accounting.md, \"Approximate-DP events in a zCDP data set\"; calibration=\"zcdp\" methods such as npm or gauss cost far less there)",
		ev.Mechanism, ev.Eps, ev.Delta)
}

// ErrorName implements dsl/interp's NamedError.
func (e *BudgetError) ErrorName() string { return NameBudgetExceeded }

// Is makes errors.Is(err, accounting.ErrBudgetExceeded) true.
func (e *BudgetError) Is(target error) bool { return target == accounting.ErrBudgetExceeded }

func budgetError(scope string, ex *accounting.ExceededError, static bool) *BudgetError {
	return &BudgetError{Scope: scope, Requested: ex.Requested, Spent: ex.Spent, Remaining: ex.Remaining, Budget: ex.Budget, Static: static}
}

// AsBudgetError converts an accounting refusal; ok is false for other
// errors.
func AsBudgetError(scope string, err error, static bool) (*BudgetError, bool) {
	var ex *accounting.ExceededError
	if errors.As(err, &ex) {
		be := budgetError(scope, ex, static)
		if h, ok := errors.AsType[*ledger.HeldError](err); ok { // live reservations counted: say so
			be.Notes = append(be.Notes, h.Note())
		}
		return be, true
	}
	return nil, false
}

// FmtBudget formats a budget as (ε=…, δ=…).
func FmtBudget(b accounting.Budget) string {
	return fmt.Sprintf("(ε=%.6g, δ=%.6g)", b.Eps, b.Delta)
}
