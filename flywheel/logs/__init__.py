"""Task-log schema, ingest, redaction and quarantine."""
