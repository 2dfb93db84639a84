package runtime

// releaseBase is what every result of a private function shares: its
// receipt (r.Receipt in a cell, "Receipt" in its JSON), what it shows in
// place of its values (a dry run's receipt alone, "no result" when it is
// empty), the receipt shown after the values, and the output metadata.
//
// A result type embeds it where its Receipt field belongs in its JSON
// and keeps only what is its own, its values and how they read:
//
//	type XResult struct {
//		Value float64
//		releaseBase
//	}
//
//	func (r *XResult) String() string {
//		if r == nil {
//			return noResult
//		}
//		if s, ok := r.shownText(r.Receipt == nil); ok {
//			return s
//		}
//		return r.text(fmt.Sprintf("private x ≈ %.6g\n", r.Value))
//	}
//
// and HTML likewise with shownHTML and html, and Metadata as
// r.metadata(). Each method checks r == nil itself: a nil result (a
// variable never assigned) displays as "no result", and Go cannot reach
// an embedded field through a nil pointer. It is built with
// releaseBase{rel.Receipt}.
type releaseBase struct {
	Receipt *Receipt
}

// shownText is the text a result shows in place of its values, if any
// (ok): the receipt alone for a dry run (nothing was read, so there are
// no values), else noResult when empty.
func (b *releaseBase) shownText(empty bool) (s string, ok bool) {
	switch {
	case b.Receipt != nil && b.Receipt.DryRun:
		return b.Receipt.String(), true
	case empty:
		return noResult, true
	}
	return "", false
}

// shownHTML is shownText's HTML form.
func (b *releaseBase) shownHTML(empty bool) (s string, ok bool) {
	switch {
	case b.Receipt != nil && b.Receipt.DryRun:
		return dryRunHTML(b.Receipt), true
	case empty:
		return noResultHTML, true
	}
	return "", false
}

// text is a result's values as text, then its receipt.
func (b *releaseBase) text(values string) string {
	return values + b.Receipt.String()
}

// html is a result's values as HTML, then its receipt, in the result's
// block.
func (b *releaseBase) html(values string) string {
	return "<div class=\"privnotes-result\">" + values + b.Receipt.HTML() + "</div>"
}

// metadata is a result's output metadata: its receipt's (key
// "privnotes"), what the kernel attaches and `privnotes notebook verify`
// reads back.
func (b *releaseBase) metadata() map[string]any {
	return b.Receipt.Metadata()
}

// dryRunHTML shows a dry run's receipt: what the call would cost.
func dryRunHTML(rc *Receipt) string {
	return "<div class=\"privnotes-result\"><p><b>dry run</b>: nothing charged, no data read</p>" + rc.HTML() + "</div>"
}
