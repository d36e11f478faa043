// SPDX-License-Identifier: Apache-2.0

package genai

// The gen_ai.evaluation.result event and its attributes (semantic-conventions-genai v0.1.0,
// model/gen-ai/events.yaml and registry.yaml; stability: development). An evaluation event is a log
// record with this event name, parented to the span of the operation it evaluates (trace and span
// id of the log record).
const (
	EventEvaluationResult = "gen_ai.evaluation.result"
	// AttrEvaluationName (string, required) names the evaluation metric.
	AttrEvaluationName = "gen_ai.evaluation.name"
	// AttrEvaluationScoreValue (double, conditionally required) is the evaluator's score.
	AttrEvaluationScoreValue = "gen_ai.evaluation.score.value"
	// AttrEvaluationScoreLabel (string, conditionally required) is the score's low-cardinality
	// human-readable label; the emitter documents its values.
	AttrEvaluationScoreLabel = "gen_ai.evaluation.score.label"
	// AttrEvaluationExplanation (string, recommended) is a free-form explanation of the score.
	AttrEvaluationExplanation = "gen_ai.evaluation.explanation"
	// ErrorTypeOther is the well-known fallback value of error.type (AttrErrorType, the
	// attributes.gen_ai.error group: conditionally required on the event when the evaluation
	// itself ended in an error).
	ErrorTypeOther = "_OTHER"
)
