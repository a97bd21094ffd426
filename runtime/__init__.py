"""Temporal plumbing below the worker, the activities and the client: connection (with Temporal's
environment configuration), signal-with-start of the serialised workflows, the cold-sessions
Schedule, search attributes and the Prometheus runtime with the worker's metrics."""
