-- Format 17: the listing reads a page of instances after an id (wfctl serve's console) along an
-- index in byte order, whatever the database's collation.
CREATE INDEX wf_instance_id_bytes ON %SCHEMA%.wf_instance (id COLLATE "C");
