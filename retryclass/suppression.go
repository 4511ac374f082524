package retryclass

// The model-facing texts. They are part of the contract: a model's prompt
// or an evaluation may match on them, so change them only deliberately.
const (
	inFlightText = "Not repeated: this exact action is already in progress. " +
		"This is not an input error. Do not retry this call and do not change its input."
	mismatchText = "Not repeated: this action was already requested with a different input. " +
		"This is not an input error. Do not retry this call and do not change its input."
)

// SuppressionText returns the short, stable text a model sees for a
// suppressed call: the action was not repeated, this is not an input error,
// and the model should neither retry nor alter the input. It is the
// in-progress wording for InFlight and the mismatch wording for Mismatch
// (and any other class, so the harness never shows an empty suppression).
func SuppressionText(v Verdict) string {
	if v.Class == InFlight {
		return inFlightText
	}
	return mismatchText
}
