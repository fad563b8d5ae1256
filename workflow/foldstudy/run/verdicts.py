"""The capability probe's verdicts (run/probe.py), each a word the probe record, its
summary table and the cards print: one home, so the pin, the probe and their readers
spell each the same way."""

OK = "ok"
NO_ENDPOINT_FOR_PARAMETERS = "probe_rejected_no_endpoint_for_parameters"
REASONING_NOT_DISABLEABLE = "probe_rejected_reasoning_not_disableable"
SCHEMA_NONCONFORMING = "schema_advertised_reply_nonconforming"
CONTEXT_TOO_SHORT = "context_too_short"
AUTH_FAILED = "auth_failed"
UNREACHABLE = "unreachable"
INSUFFICIENT_CREDITS = "insufficient_credits"
ENDPOINT_NOT_LISTED = "pinned_endpoint_not_listed"
SERVED_BY_OTHER = "served_by_other_endpoint"
MODEL_NOT_FOUND = "model_not_found"
NO_STRUCTURED_OUTPUTS = "no_endpoint_with_structured_outputs"
# Faults that say nothing about the request: the same call may work later.
TRANSIENT_KINDS = ("unreachable", "timeout", "server", "rate_limited", "malformed",
                   "provider_error")
NATIVE_REFUSED = "native_compaction_refused"
NATIVE_NOT_RETURNED = "native_compaction_not_returned"
