"""An embedded DynamoDB for `loopsense serve`, kept in SQLite (a file, or memory), with TTL
sweeping: the subset of the API loopsense uses, answered
in-process (no HTTP, no signing) and over HTTP (DynamoDB's JSON protocol, for the operator's
commands and other tools). Why, and what it leaves out: docs/decisions.md."""
