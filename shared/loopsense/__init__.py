"""loopsense: catch AI agents that are stuck."""
