"""A tenant's usage: credits against its plan, charged calls per day and skill."""
