package runtime

import (
	"errors"
	"regexp"

	"github.com/privnotes/privnotes/dsl/syntax"
)

// translateError is a translation error of dsl/syntax under the name
// docs/dsl.md gives its kind: a bad argument of a DSL call found while
// translating is an ArgumentError and a bad magic line a MagicError, as
// the same mistakes are when found at run time, so that an error's name
// does not depend on whether a keyword's value was a literal. Everything
// else (unbalanced brackets, a malformed budget block, a reserved or
// redefined name) stays a SyntaxError. It keeps the position, so the
// engine still prefixes the user's line and column.
type translateError struct {
	name string
	err  *syntax.Error
}

func (e *translateError) Error() string             { return e.err.Error() }
func (e *translateError) ErrorName() string         { return e.name }
func (e *translateError) Position() (line, col int) { return e.err.Position() }
func (e *translateError) Unwrap() error             { return e.err }

// NameSyntaxError is the engine's name of a translation error that is
// neither an argument nor a magic error.
const NameSyntaxError = "SyntaxError"

// NameNameError is the name of an undefined name the translator finds (a
// misspelt DSL function, with the name it probably meant), as the engine
// names an undefined Go name: a misspelling is no syntax error.
const NameNameError = "NameError"

// argumentMessages and magicMessages recognise dsl/syntax's messages for
// the argument checks of a DSL call (keywords, types, choices, required
// and positional arguments, eps and delta ranges) and for magic lines.
// TestTranslateErrorNames pins a table of bad cells to their names, so a
// new message of the translator that falls through is caught there.
var (
	argumentMessages = regexp.MustCompile(`^(unknown keyword |keyword \w+ given twice|missing value after |positional argument after keyword|too many positional arguments|\w+ of \w+ is positional|\w+ does not take a spread|\w+ needs |eps=.*: eps must be|delta=.*: delta must be|\w+=.*: \w+ of \w+ takes |\w+=.* is not a valid \w+ for )`)
	undefinedMessage = regexp.MustCompile(`^undefined: `)
	magicMessages    = regexp.MustCompile(`^(unknown magic |unknown cell magic |a magic needs a name|no help for |%datasets takes no arguments|%%budget must be the first line)`)
)

// classifyTranslateError names a translation error; other errors pass
// unchanged.
func classifyTranslateError(err error) error {
	var se *syntax.Error
	if !errors.As(err, &se) || se.Incomplete {
		return err
	}
	switch {
	case argumentMessages.MatchString(se.Msg):
		return &translateError{name: NameArgumentError, err: se}
	case magicMessages.MatchString(se.Msg):
		return &translateError{name: NameMagicError, err: se}
	case undefinedMessage.MatchString(se.Msg):
		return &translateError{name: NameNameError, err: se}
	}
	return err
}
