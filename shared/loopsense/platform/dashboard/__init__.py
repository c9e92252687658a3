"""The dashboard's files, served by the API itself (docs/dashboard.md)."""
