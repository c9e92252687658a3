"""HTTP API (payload 2.0) events in, answers out: the request, the one envelope and dispatcher,
and the caller's identity (the bearer key)."""
