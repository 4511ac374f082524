package suggest

import "strings"

// Closest returns the name of names nearest to typed by edit distance,
// if it is within 2 (within 1 when typed has three letters or fewer);
// failing that, the only name typed is a prefix of. It returns "" when
// no name is close. Of names at the same distance the first wins.
func Closest(typed string, names []string) string {
	best, bestD := "", 3
	if len(typed) <= 3 {
		bestD = 2
	}
	var prefixed []string
	for _, n := range names {
		if strings.HasPrefix(n, typed) {
			prefixed = append(prefixed, n)
		}
		if d := editDistance(typed, n); d < bestD {
			best, bestD = n, d
		}
	}
	if best == "" && len(prefixed) == 1 {
		best = prefixed[0]
	}
	return best
}

// editDistance is the Levenshtein distance of a and b, by bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
