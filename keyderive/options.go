package keyderive

// Default limits, used where Options leaves a field zero.
const (
	// DefaultMaxBytes is the default input size limit: 1 MiB.
	DefaultMaxBytes = 1 << 20
	// DefaultMaxDepth is the default nesting limit for arrays and objects.
	DefaultMaxDepth = 64
)

// Options sets canonicalization limits. A nil *Options means defaults; each
// field's zero value is its default.
type Options struct {
	// MaxBytes is the largest input accepted, in bytes. Zero (or less) means
	// DefaultMaxBytes (1 MiB). Longer input fails with ErrTooLarge before
	// any of it is read.
	MaxBytes int
	// MaxDepth is how deeply arrays and objects may nest: `[]` and `{}` are
	// depth 1, a scalar is depth 0. Zero (or less) means DefaultMaxDepth (64).
	// Deeper input fails with ErrTooDeep.
	MaxDepth int
}

func (o *Options) limits() (maxBytes, maxDepth int) {
	maxBytes, maxDepth = DefaultMaxBytes, DefaultMaxDepth
	if o != nil {
		if o.MaxBytes > 0 {
			maxBytes = o.MaxBytes
		}
		if o.MaxDepth > 0 {
			maxDepth = o.MaxDepth
		}
	}
	return maxBytes, maxDepth
}
