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
	// MaxBytes is the largest input accepted, in bytes; longer input fails
	// with ErrTooLarge unread. Zero (or less) means DefaultMaxBytes.
	MaxBytes int
	// MaxDepth is how deeply arrays and objects may nest (`[]` is depth 1);
	// deeper fails with ErrTooDeep. Zero (or less) means DefaultMaxDepth.
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
