// Package release is privnotes' execution core: it turns a private call,
// stated in public terms, into a release.
//
// Every private function of the DSL follows one sequence, and this package
// is the only place that runs it:
//
//  1. Plan: validate the [Call]'s public parameters against the dataset's
//     public schema and fix the exact cost, noise scales and rounding
//     budgets. Nothing is read; everything that can fail fails here.
//  2. Charge: ask the caller's [Gate] (the DSL's budget blocks), then charge
//     the ledger durably. A charge yields a single-use [Ticket].
//  3. Read: load the data, only now.
//  4. Run: the plan's mechanism, which consumes the ticket: a plan cannot
//     run twice on one charge.
//  5. Receipt: what the release cost, all of it public.
//
// After the charge a call always returns a release or an error whose text
// does not depend on the data ([NameMechanismFailed], [NameInterrupted]).
//
// The types are plain: a [Call] (function name, dataset reference, public
// parameters), a [Release] (values of [PCA], [FedRep], [Count], [Mean],
// [Sum], [Histogram] or [Quantile] and a [Receipt]) and the error names.
// dsl/runtime turns releases into the
// DSL's result types and never charges by itself. [Local] is the in-process
// [Executor]; service/client is the remote one ([Remote]) of the data
// service (`privnotes serve`), whose server runs [Local] and re-plans every
// call from its own registry.
package release
