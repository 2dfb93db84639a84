package sqlplan

import "fmt"

// Error is a refusal: the query, or one part of it, is outside the
// accepted grammar or cannot be planned from public facts. It is returned
// before any data is read, so it reveals nothing about the data.
type Error struct {
	// Construct names the offending part of the query, as the analyst
	// would recognise it: "LIMIT", "random()", "column \"age\"", "JOIN".
	Construct string
	// Pos is the byte offset of the construct in the query text, or -1
	// when the parser did not report one.
	Pos int
	// Msg says why it is refused and what to write instead.
	Msg string
}

// Error names the construct, its offset and the reason; the caller
// prefixes the function's name.
func (e *Error) Error() string {
	if e.Pos >= 0 {
		return fmt.Sprintf("%s (at offset %d): %s", e.Construct, e.Pos, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.Construct, e.Msg)
}

// refuse builds an *Error with a formatted message.
func refuse(construct string, pos int, format string, args ...any) *Error {
	return &Error{Construct: construct, Pos: pos, Msg: fmt.Sprintf(format, args...)}
}
