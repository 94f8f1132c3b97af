package transport

// readablePage fills a page of at most limit items that a caller may read (keep), out of
// pages of every item that fetch returns in name order after a cursor (at most n of them,
// and whether more follow). It goes on past the items the caller may not read, so that
// the page holds limit readable items when that many exist; truncated reports that one
// more readable item follows, so it is found by one more look and not guessed from an
// unreadable one. The answer's cursor is therefore always the name of a returned item,
// and neither the items, nor truncated, nor the cursor depend on what the caller may not
// read.
//
// The cost is the items scanned: the page plus every unreadable item among them, and, for
// a caller who may read few of the names under the prefix it asked, every name under it.
// Each fetch takes the state's read lock for one chunk only.
func readablePage[T any](limit int, after string, keep func(T) bool, name func(T) string, fetch func(after string, n int) ([]T, bool, error)) (page []T, truncated bool, err error) {
	chunk := max(limit+1, minScanChunk)
	for {
		items, more, err := fetch(after, chunk)
		if err != nil {
			return nil, false, err
		}
		for _, it := range items {
			if !keep(it) {
				continue
			}
			if len(page) == limit {
				return page, true, nil
			}
			page = append(page, it)
		}
		if !more || len(items) == 0 {
			return page, false, nil
		}
		after = name(items[len(items)-1])
	}
}

// minScanChunk is the fewest items readablePage asks for at once: a small page of a
// caller who may read little would otherwise scan one small chunk per lock taken.
const minScanChunk = 256
