"""POST /v1/execute: the pipeline of checks, the call of a skill's function, the charge."""
