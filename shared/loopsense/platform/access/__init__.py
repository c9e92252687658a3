"""Who may call what, shared by every feature: the catalog of skills and plans, the plan rules
(rate, quota) and Idempotency-Key handling."""
