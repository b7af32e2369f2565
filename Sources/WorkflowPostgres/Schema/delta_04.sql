-- Format 4: the machine a consumer was registered from.
ALTER TABLE %SCHEMA%.sig_consumer ADD COLUMN machine text NOT NULL DEFAULT '';
