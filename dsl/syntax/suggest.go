package syntax

import "strings"

// Closest returns the candidate nearest to name, ignoring case, when it
// is near enough to be a misspelling (an edit distance of at most
// max(2, len/3) runes), for "did you mean" hints. Ties go to the first
// candidate.
func Closest(name string, candidates []string) (string, bool) {
	best, bestD := "", -1
	for _, c := range candidates {
		if c == name {
			continue
		}
		d := editDistance(strings.ToLower(name), strings.ToLower(c))
		if d <= max(2, len([]rune(c))/3) && (bestD < 0 || d < bestD) {
			best, bestD = c, d
		}
	}
	return best, bestD >= 0
}

// editDistance is the Levenshtein distance between a and b, in runes.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			c := prev[j-1]
			if ra[i-1] != rb[j-1] {
				c++
			}
			cur[j] = min(c, prev[j]+1, cur[j-1]+1)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}
