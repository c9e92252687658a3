"""A tenant's detector thresholds and time-budget config: the rules and their routes."""
