package release

import (
	"context"

	"github.com/privnotes/privnotes/dsl/ledger"
)

// Remote is an executor on a data service (`privnotes serve`): the server
// holds the registry, the ledger and the data, re-plans every call from
// its own registry and returns releases and receipts only. service/client
// implements it; this package imports no transport.
type Remote interface {
	Executor
	// Describe returns a dataset's public schema as the server registered it.
	Describe(ctx context.Context, dataset string) (ledger.Schema, error)
}
