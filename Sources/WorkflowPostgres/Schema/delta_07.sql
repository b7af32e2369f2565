-- Format 7: a signal version keeps its poster's trace context.
ALTER TABLE %SCHEMA%.sig_version ADD COLUMN trace_context bytea;
