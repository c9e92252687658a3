"""Telemetry: event ingestion (JSON and OTLP), failure groups, routing, retention, their routes
and their DynamoDB access."""
