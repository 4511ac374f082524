package keyderive

// Normalizer is a placeholder until schema normalization lands.
type Normalizer struct{}

func (n *Normalizer) normalize(canonical []byte) ([]byte, error) { return canonical, nil }
