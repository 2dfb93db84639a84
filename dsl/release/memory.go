package release

// Bounded resources (issue 25.5). A run that runs out of memory after its
// charge crashes the worker, and if whether it does depends on the private
// row count n, the crash is a one-bit channel about n. So every plan
// carries an estimate of the memory its run needs, computed from public
// facts only (the schema's width, k, iterations, bins, the grid, the
// public number of units when the mechanism needs it), and the core
// refuses, before anything is charged, a plan whose estimate exceeds the
// executor's public limit (checkMemory, called once in Local.Plan, which
// Execute, DryRun and every federated phase go through).
//
// State per user on user-level data whose number of users is private is
// held a window of the user index at a time where the run allows it
// (setWindowedMemory, rows.UserMeans): the window is fixed here from the
// limit, so it is counted in the estimate. What still grows with n after
// the charge is declared per plan as RowBytes (docs/threat-model.md,
// "Resources after the charge").

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"

	"github.com/privnotes/privnotes/mechanisms/tabular"
)

// DefaultMemoryLimit is the most working memory one call may plan to use
// when the operator sets no other limit: 8 GiB.
const DefaultMemoryLimit int64 = 8 << 30

// MemoryLimitEnv names the environment variable with which the operator
// of a worker or a data service sets its per-call memory limit ("16GiB",
// "512MiB" or a number of bytes). It is an operator's setting, not an
// analyst's: on a data service it is read by the server, which re-plans
// every call, so a client cannot raise it. The limit is not a privacy
// parameter: it decides only which plans are refused before their charge,
// from public facts, so any value is safe; it should leave room below the
// machine's memory for the data layer and the process.
const MemoryLimitEnv = "PRIVNOTES_MEMORY_LIMIT"

// memoryLimit is the limit of env's calls: Local.MemoryLimit if set, else
// the environment's, else DefaultMemoryLimit.
func (env *Local) memoryLimit() (int64, error) {
	if env != nil && env.MemoryLimit > 0 {
		return env.MemoryLimit, nil
	}
	s := strings.TrimSpace(os.Getenv(MemoryLimitEnv))
	if s == "" {
		return DefaultMemoryLimit, nil
	}
	v, err := ParseBytes(s)
	if err != nil {
		return 0, Errorf(NameArgumentError, "%s=%q: %v", MemoryLimitEnv, s, err)
	}
	return v, nil
}

// ParseBytes reads a size: a whole number of bytes, optionally followed by
// KiB, MiB, GiB or TiB (or K, M, G, T, all powers of 1024).
func ParseBytes(s string) (int64, error) {
	s = strings.TrimSpace(s)
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40}, {"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}, {"T", 1 << 40}} {
		if strings.HasSuffix(s, u.suffix) {
			s, mult = strings.TrimSpace(strings.TrimSuffix(s, u.suffix)), u.mult
			break
		}
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v < 1 || v > (1<<62)/mult {
		return 0, fmt.Errorf("not a size: give a whole number of bytes > 0, optionally with KiB, MiB, GiB or TiB")
	}
	return v * mult, nil
}

// FormatBytes prints a size in the largest binary unit that keeps one
// decimal.
func FormatBytes(v int64) string {
	switch {
	case v >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(v)/(1<<30))
	case v >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(v)/(1<<20))
	case v >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(v)/(1<<10))
	}
	return fmt.Sprintf("%d B", v)
}

// checkMemory refuses, before the charge, a plan whose memory estimate
// exceeds the limit, and a plan without an estimate (a planner that
// forgot one: a programming error, caught by TestEveryPlannerEstimatesMemory).
func (env *Local) checkMemory(p *Plan) error {
	if p.Memory <= 0 {
		return Errorf(NameArgumentError, "%s: this build's planner of %s gives no memory estimate, so the call cannot be checked against the memory limit: nothing was charged (please report this)", p.Func, p.Method)
	}
	limit, err := env.memoryLimit()
	if err != nil {
		return err
	}
	if p.Memory > limit {
		return Errorf(NameArgumentError, "%s (%s): the run would need about %s of memory (%s), more than this executor's limit of %s per call: nothing was charged. %s, or ask the operator to raise the limit (%s)",
			p.Func, p.Method, FormatBytes(p.Memory), p.memoryFacts, FormatBytes(limit), p.memoryAdvice, MemoryLimitEnv)
	}
	return nil
}

// The estimates below are upper bounds, deliberately coarse: they count
// the float64 buffers a run allocates whose size is a public fact, with a
// fixed allowance for everything small.

const (
	// memFixed is the allowance for a run's small state: the noise
	// sampler, goroutine stacks, the receipt, a few vectors.
	memFixed int64 = 16 << 20
	// scanRows is the most rows a pass holds at once per worker: the
	// row pass (mechanisms/internal/rowpass) fills two chunks of 16
	// blocks of 256 rows per worker, and the cursors' batches are at
	// most 4096 rows.
	scanRows int64 = 2*16*256 + 4096
)

// workers is the number of cores a pass may use (a public fact of the
// machine).
func workers() int64 { return int64(max(runtime.GOMAXPROCS(0), 1)) }

// scanMemory is the memory of one streaming pass over rows of the given
// width: per worker, the chunks and batches of scanRows rows, each with
// its label, unit index and norm parts.
func scanMemory(width int) int64 {
	return memFixed + workers()*scanRows*int64(width+4)*8
}

// mul multiplies sizes, saturating instead of overflowing (a huge d or k
// must give a huge estimate, not a negative one).
func mul(xs ...int64) int64 {
	v := int64(1)
	for _, x := range xs {
		if x <= 0 {
			return 0
		}
		if v > (1<<62)/x {
			return 1 << 62
		}
		v *= x
	}
	return v
}

// add adds sizes, saturating.
func add(xs ...int64) int64 {
	v := int64(0)
	for _, x := range xs {
		if v += x; v > 1<<62 {
			return 1 << 62
		}
	}
	return v
}

// setMemory records a plan's estimate, the public facts it was computed
// from and what the caller can change to lower it.
func (p *Plan) setMemory(bytes int64, facts, advice string) {
	p.Memory, p.memoryFacts, p.memoryAdvice = bytes, facts, advice
}

// quantileMemory is the quantile's: its histogram over the grid (an int64
// per grid point, and the levels of the sampler, at most one per grid
// point), independent of n.
func quantileMemory(qp *tabular.QuantilePlan) int64 {
	return add(scanMemory(1), mul(int64(qp.Grid)+2, tabular.QuantileBytesPerPoint))
}

// The estimates of the planners, one per family. d is the registered
// width (a derived subset reads its parent's rows, so the parent's width
// bounds the batches), k the components or the rank.

// i64 converts a count.
func i64(x int) int64 { return int64(x) }

// readWidth is the width of the rows a pass over src reads: the
// registered dataset's (a subset's parent's).
func readWidth(src Ref) int {
	if src.Derived != nil {
		return max(src.Derived.ParentSchema.D, src.Schema.D)
	}
	return src.Schema.D
}

// userVectorBytes is what a run that first averages each user's rows
// (unitSource) holds per user: the user's d-vector and its count.
func userVectorBytes(src Ref, d int) int64 {
	if src.Schema.Unit != "user" {
		return 0
	}
	return mul(i64(d)+1, 8)
}

// setStreamMemory is the estimate of a run that streams its passes and
// keeps extra bytes of public size; on user-level data it holds perUser
// bytes per user (the data layer's user index, of the registered dataset's
// users). Where the owner declared the number of users public, they are
// counted in the estimate; else they are the plan's RowBytes, the part
// that grows with the private n.
func (p *Plan) setStreamMemory(src Ref, extra, perUser int64, facts, advice string) {
	m := add(scanMemory(readWidth(src)), extra)
	if src.Schema.Unit == "user" {
		if n := registeredPublicN(src); n > 0 {
			m = add(m, mul(i64(n), perUser))
			facts += fmt.Sprintf(", %d public users", n)
		} else {
			p.RowBytes = perUser
		}
	}
	p.setMemory(m, facts, advice)
}

// userWindowMax is the most users a windowed run holds at once (a public
// constant, so that a small per-user state does not make the estimate the
// whole limit). Tests lower it to force many windows.
var userWindowMax = 1 << 24

// setWindowedMemory is setStreamMemory for a run that holds its users'
// state a window of the user index at a time (unitSource, the tabular
// user means): where the number of users is private, the window is the
// most users whose perUser bytes fit env's limit beside the run's other
// memory (at least one, at most userWindowMax), fixed here from public
// facts and counted in the estimate, so nothing grows with the private n
// (the number of passes does: one per window, a timing). It sets
// p.userWindow (0: all users at once, where their number is public and
// counted, or on row-level data).
func (p *Plan) setWindowedMemory(env *Local, src Ref, extra, perUser int64, facts, advice string) {
	if src.Schema.Unit != "user" || registeredPublicN(src) > 0 || perUser <= 0 {
		p.setStreamMemory(src, extra, perUser, facts, advice)
		return
	}
	m := add(scanMemory(readWidth(src)), extra)
	w := int64(1)
	// A limit that cannot be read is the core's error before the charge
	// (checkMemory); any window serves until then.
	if limit, err := env.memoryLimit(); err == nil && limit > m {
		w = min(max((limit-m)/perUser, 1), int64(userWindowMax))
	}
	p.userWindow = int(w)
	p.setMemory(add(m, mul(w, perUser)), facts+fmt.Sprintf(", users held %d at a time", w), advice)
}

// registeredPublicN is the registered dataset's public number of units (0:
// private): a subset's run indexes its parent's users.
func registeredPublicN(src Ref) int {
	if src.Derived != nil {
		return src.Derived.ParentSchema.PublicN
	}
	return src.Schema.PublicN
}

// pcaPowerMemory is npm's, adaptive's and gauss's: gauss holds the d×d
// covariance (one partial per worker, the matrix, its noise and its
// eigendecomposition); the power methods hold d×k blocks per worker and a
// few more (four candidate runs with gap="auto").
func pcaPowerMemory(method string, d, k int, autoGap bool) int64 {
	if method == "gauss" {
		return mul(i64(d), i64(d), 8, workers()+6)
	}
	runs := int64(1)
	if autoGap {
		runs = 4
	}
	return mul(i64(d), i64(k), 8, 4*workers()+16, runs)
}

// heldRowsMemory is the memory of the methods that hold n public rows of
// width d in memory (DP-PCA, Oja, Oja with shuffling): the rows read
// (twice while they are collected), their scaled copy, a permutation, and
// d×d work.
func heldRowsMemory(n, d int) int64 {
	return add(mul(i64(max(n, 1)), i64(d)+1, 8, 4), mul(i64(d), i64(d), 8, 4))
}

// fedRepMemory is FedRep's with n public users on width d: each user's
// head and state (a few d-vectors and k-vectors), at least MinRecords
// padded records per user, and the shared d×k representation with its
// noise and its per-worker sums. The users' own records beyond the
// padding are counted in RowBytes.
func fedRepMemory(n, d, k, minRecords int) int64 {
	perUser := add(mul(i64(d)+i64(k)+8, 8, 4), mul(i64(minRecords), i64(d)+1, 8), 256)
	return add(mul(i64(max(n, 1)), perUser), mul(i64(d), i64(k), 8, 4*workers()+16))
}

// fedRepRowBytes is what FedRep holds per row: the row in its user's
// records and, while the users are built, the pass's copy.
func fedRepRowBytes(d int) int64 { return mul(i64(d)+1, 8, 2) }

// binsMemory is a histogram's or a grouped release's per-key state: counts,
// sums and their noisy copies.
func binsMemory(keys int) int64 { return mul(i64(keys)+1, 8, 6) }

// groupUserBytes is what a grouped release or a histogram holds per user
// on user-level data: the user's first term and term count (two int32),
// and up to maxGroups terms of a group index, a count and a sum, indexed
// by a map beyond a few (tabular.GroupPlan's userTotals).
func groupUserBytes(maxGroups int) int64 { return add(8, mul(i64(maxGroups), 24+48)) }
