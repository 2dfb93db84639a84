package wire

import (
	"encoding/json"
	"errors"
	"strconv"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/privnotes/privnotes/dsl/release"
	"github.com/privnotes/privnotes/mechanisms/accounting"
)

// Domain is the ErrorInfo domain of the service's errors.
const Domain = "privnotes"

// codeOf is the one table from the DSL's error names to gRPC codes. The
// name itself travels as the ErrorInfo reason, so a client rebuilds the
// same error the in-process executor would have returned.
var codeOf = map[string]codes.Code{
	release.NameArgumentError:   codes.InvalidArgument,
	release.NameDatasetError:    codes.NotFound,
	release.NameBudgetExceeded:  codes.ResourceExhausted,
	release.NameNotAvailable:    codes.Unimplemented,
	release.NameLedgerError:     codes.Internal,
	release.NameMechanismFailed: codes.Aborted,
	release.NameInterrupted:     codes.Canceled,
	release.NameProviderFailed:  codes.FailedPrecondition,
}

// Meta keys of a status's ErrorInfo.
const (
	// MetaCharged is "true" when the failed call was charged at the server
	// (its charge stands), "false" when nothing was spent.
	MetaCharged = "charged"
	metaBudget  = "budget_error"
)

// budgetWire is a BudgetError in the ErrorInfo metadata.
type budgetWire struct {
	Scope                             string
	Requested, Spent, Remaining, Budg accounting.Budget
	Static                            bool
	Notes                             []string
}

// Status is err as a gRPC status: its DSL name as the reason, its message
// (public: the executor's messages never hold private values) as the
// status message. charged is recorded in the metadata. Errors without a
// DSL name become Internal with a fixed text.
func Status(err error, charged bool) *status.Status {
	name, msg := release.NameLedgerError, "the server failed (see its log)"
	meta := map[string]string{MetaCharged: strconv.FormatBool(charged)}
	var be *release.BudgetError
	var de *release.Error
	switch {
	case errors.As(err, &be):
		name, msg = release.NameBudgetExceeded, be.Error()
		b, _ := json.Marshal(budgetWire{be.Scope, be.Requested, be.Spent, be.Remaining, be.Budget, be.Static, be.Notes})
		meta[metaBudget] = string(b)
	case errors.As(err, &de):
		name, msg = de.Name, de.Msg
	}
	code, ok := codeOf[name]
	if !ok {
		code = codes.Unknown
	}
	st := status.New(code, msg)
	if d, err := st.WithDetails(&errdetails.ErrorInfo{Reason: name, Domain: Domain, Metadata: meta}); err == nil {
		return d
	}
	return st
}

// ErrorOf is Status's inverse: the DSL error a status carries, and whether
// the call was charged. ok is false when the status carries no DSL error
// (a transport failure: the server may not have answered at all).
func ErrorOf(st *status.Status) (err error, charged, ok bool) {
	for _, d := range st.Details() {
		info, isInfo := d.(*errdetails.ErrorInfo)
		if !isInfo || info.GetDomain() != Domain {
			continue
		}
		meta := info.GetMetadata()
		charged = meta[MetaCharged] == "true"
		if b, has := meta[metaBudget]; has && info.GetReason() == release.NameBudgetExceeded {
			var w budgetWire
			if json.Unmarshal([]byte(b), &w) == nil {
				return &release.BudgetError{Scope: w.Scope, Requested: w.Requested, Spent: w.Spent, Remaining: w.Remaining,
					Budget: w.Budg, Static: w.Static, Notes: w.Notes}, charged, true
			}
		}
		return &release.Error{Name: info.GetReason(), Msg: st.Message()}, charged, true
	}
	return nil, false, false
}
